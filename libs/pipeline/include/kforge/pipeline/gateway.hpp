#pragma once
// LlmGateway: the pipeline's one door to the LLM provider.
//
// The real gateway holds one kforge::llm::Client per model (a run may name its own model), so
// retries, rate limits, the idempotency store and the audit log are the client's. Tests of the
// scheduler's logic may put a fake provider behind this interface; end-to-end tests use the real
// client against the fake HTTP server.
//
// Threads: every method may be called from any thread; `done` runs on a client thread.

#include <chrono>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "kforge/core/sha256.hpp"
#include "kforge/llm/client.hpp"

namespace kforge::pipeline {

class LlmGateway {
 public:
  virtual ~LlmGateway() = default;
  // The request's identity and the JSON body that would be POSTed (no secrets).
  virtual std::string request_sha256(const std::string& model, const llm::ChatRequest& req) = 0;
  virtual std::string request_json(const std::string& model, const llm::ChatRequest& req) = 0;
  // request_sha256 from the body request_json gave for a request: of req only what the
  // identity takes beside the body is read (its asker and round; the scheduler keeps no more of
  // a request while it waits). The default is a gateway whose identity is the body's SHA-256.
  virtual std::string request_sha256_of(const std::string& model, const llm::ChatRequest& req,
                                        const std::string& body) {
    (void)model;
    (void)req;
    return sha256_hex(body);
  }
  // Whether the calls of `model` wait long (batch mode: every request of a stage, for up to the
  // batch's completion window), so that the scheduler puts a request's body into the text store
  // at submit and the call holds only its id (ChatRequest::stored_body). false (interactive): the
  // call holds the body in memory until its checkpoint, which costs no store write and read.
  virtual bool stores_request_bodies(const std::string& model) const {
    (void)model;
    return false;
  }
  // Queues req; `done` is called exactly once.
  virtual void submit(const std::string& model, llm::ChatRequest req, llm::Callback done) = 0;
  // Applies the limits of a reloaded configuration.
  virtual void reload_limits(const llm::LlmConfig& cfg) = 0;
  // Counters summed over every model's client.
  virtual llm::Stats stats() const = 0;
  // See llm::Client::drain: no new attempt or retry starts; calls on the wire may finish.
  virtual void drain() {}
  // How many more requests it takes now without holding more in memory than it is allowed to
  // (kforge batch import: llm.batch.lines_in_memory answers read from its file at a time). The
  // scheduler leases and submits no more than this in a step, and more once calls complete.
  virtual int room() const { return std::numeric_limits<int>::max(); }
  // llm.max_prompt_tokens (0: no limit), for a check before a prompt is even rendered.
  virtual std::int64_t max_prompt_tokens() const { return 0; }
  // See llm::Client::shutdown. Idempotent.
  virtual void shutdown(std::chrono::milliseconds grace) = 0;
};

// One llm::Client per model, created on first use from a configuration with its model
// replaced; after drain() or shutdown() every get() fails "cancelled". Thread-safe. The real
// gateway and the offline one of `kforge batch` hold their clients this way.
class ModelClients {
 public:
  ModelClients(llm::LlmConfig cfg, llm::ClientOptions opts)
      : cfg_(std::move(cfg)), opts_(std::move(opts)) {}
  Result<llm::Client*> get(const std::string& model);
  // Calls f(client) for every client made so far, under the lock.
  template <class F>
  void each(F&& f) const {
    std::lock_guard lock(mu_);
    for (const auto& [model, c] : clients_) f(*c);
  }
  llm::LlmConfig config() const {
    std::lock_guard lock(mu_);
    return cfg_;
  }
  llm::Mode mode_of(const std::string& model) const {
    std::lock_guard lock(mu_);
    return cfg_.mode_of(model);
  }
  // The configuration later clients are made from, and the limits applied to those made.
  void reload_limits(const llm::LlmConfig& cfg);
  // Drains every client (llm::Client::drain); no new client is made after it.
  void drain();
  void shutdown(std::chrono::milliseconds grace);

 private:
  mutable std::mutex mu_;
  llm::LlmConfig cfg_;
  llm::ClientOptions opts_;
  bool closed_ = false;
  std::map<std::string, std::unique_ptr<llm::Client>> clients_;
};

// The real gateway: clients are created on first use of a model, from `cfg` with its model
// replaced. A client that cannot be created fails the requests for that model.
std::unique_ptr<LlmGateway> make_client_gateway(const llm::LlmConfig& cfg, llm::ClientOptions opts);

}  // namespace kforge::pipeline
