#include "kforge/pipeline/gateway.hpp"

#include <map>

#include "kforge/llm/errors.hpp"

namespace kforge::pipeline {
namespace {

class ClientGateway final : public LlmGateway {
 public:
  ClientGateway(const llm::LlmConfig& cfg, llm::ClientOptions opts)
      : clients_(cfg, std::move(opts)) {}
  ~ClientGateway() override { shutdown(std::chrono::milliseconds(0)); }

  std::string request_sha256(const std::string& model, const llm::ChatRequest& req) override {
    auto c = clients_.get(model);
    return c.ok() ? (*c)->request_sha256(req) : std::string();
  }
  std::string request_json(const std::string& model, const llm::ChatRequest& req) override {
    auto c = clients_.get(model);
    return c.ok() ? (*c)->request_json(req) : std::string("{}");
  }
  std::string request_sha256_of(const std::string& model, const llm::ChatRequest& req,
                                const std::string& body) override {
    auto c = clients_.get(model);
    return c.ok() ? (*c)->request_sha256(req, body) : std::string();
  }
  void submit(const std::string& model, llm::ChatRequest req, llm::Callback done) override {
    auto c = clients_.get(model);
    if (!c.ok()) {
      done(c.error());
      return;
    }
    (*c)->submit(std::move(req), std::move(done));
  }
  bool stores_request_bodies(const std::string& model) const override {
    return clients_.mode_of(model) == llm::Mode::batch;
  }
  void reload_limits(const llm::LlmConfig& cfg) override { clients_.reload_limits(cfg); }
  llm::Stats stats() const override {
    llm::Stats total;
    clients_.each([&](const llm::Client& c) {
      llm::Stats s = c.stats();
      total.submitted += s.submitted;
      total.succeeded += s.succeeded;
      total.failed += s.failed;
      total.from_store += s.from_store;
      total.coalesced += s.coalesced;
      total.http_attempts += s.http_attempts;
      total.retries += s.retries;
      total.concurrency_cuts += s.concurrency_cuts;
      for (const auto& [k, v] : s.failures_by_kind) total.failures_by_kind[k] += v;
      for (const auto& [k, v] : s.responses_by_status) total.responses_by_status[k] += v;
      if (total.latency_bounds_ms.empty()) {
        total.latency_bounds_ms = s.latency_bounds_ms;
        total.latency_counts.assign(s.latency_counts.size(), 0);
      }
      if (s.latency_counts.size() == total.latency_counts.size())
        for (std::size_t i = 0; i < s.latency_counts.size(); ++i)
          total.latency_counts[i] += s.latency_counts[i];
      total.latency_sum_ms += s.latency_sum_ms;
      total.prompt_tokens += s.prompt_tokens;
      total.completion_tokens += s.completion_tokens;
      total.cost_usd += s.cost_usd;
      total.in_flight += s.in_flight;
      total.waiting += s.waiting;
      total.concurrency_limit += s.concurrency_limit;
      total.pace_per_s += s.pace_per_s;
      total.pace_cuts += s.pace_cuts;
      total.halts += s.halts;
      total.batches_open += s.batches_open;
      total.batch_lines_in_flight += s.batch_lines_in_flight;
      total.batch_lines_waiting += s.batch_lines_waiting;
      total.batches_created += s.batches_created;
      total.batches_adopted += s.batches_adopted;
      total.batch_lines_answered += s.batch_lines_answered;
      total.batch_lines_failed += s.batch_lines_failed;
      total.batch_poll_errors += s.batch_poll_errors;
      if (s.paused_until_wall_ms > total.paused_until_wall_ms) {
        total.paused_until_wall_ms = s.paused_until_wall_ms;
        total.paused_status = s.paused_status;
      }
    });
    return total;
  }
  void drain() override { clients_.drain(); }
  std::int64_t max_prompt_tokens() const override { return clients_.config().max_prompt_tokens; }
  void shutdown(std::chrono::milliseconds grace) override { clients_.shutdown(grace); }

 private:
  ModelClients clients_;
};

}  // namespace

Result<llm::Client*> ModelClients::get(const std::string& model) {
  std::lock_guard lock(mu_);
  if (closed_)
    return fail(llm::to_string(llm::ErrorKind::cancelled), "the LLM gateway is shut down",
                Transient::yes);
  auto it = clients_.find(model);
  if (it != clients_.end()) return it->second.get();
  llm::LlmConfig cfg = cfg_;
  cfg.model = model;
  KF_TRY(auto c, llm::Client::create(cfg, opts_));
  llm::Client* raw = c.get();
  clients_.emplace(model, std::move(c));
  return raw;
}

void ModelClients::reload_limits(const llm::LlmConfig& cfg) {
  std::lock_guard lock(mu_);
  llm::LlmConfig keep = cfg_;
  cfg_ = cfg;
  cfg_.provider = keep.provider;
  cfg_.base_url = keep.base_url;
  cfg_.api_key_env = keep.api_key_env;
  for (auto& [model, c] : clients_) c->reload_limits(cfg);
}

void ModelClients::drain() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& [model, c] : clients_) c->drain();
}

void ModelClients::shutdown(std::chrono::milliseconds grace) {
  std::map<std::string, std::unique_ptr<llm::Client>> clients;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    clients.swap(clients_);
  }
  for (auto& [model, c] : clients) c->shutdown(grace);
}

std::unique_ptr<LlmGateway> make_client_gateway(const llm::LlmConfig& cfg,
                                                llm::ClientOptions opts) {
  return std::make_unique<ClientGateway>(cfg, std::move(opts));
}

}  // namespace kforge::pipeline
