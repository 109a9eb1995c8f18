#pragma once
// Internal: the LLM client's state, shared by its parts (client.hpp has the contract):
//   client.cpp      creation, the public methods: submit, call, stats, drain, shutdown
//   loop.cpp        the network loop: intake, admission order, attempts and their outcomes,
//                   halts, cut answers asked again, drain and cancel
//   answers.cpp     answers that do not come from the wire: batch mode's lines, offline answers
//   identity.cpp    request identity: the URL, the canonical body, its SHA-256
//   transport.cpp   libcurl's multi handle, the easy-handle pool, the headers, ended transfers
//   admission.cpp   admission and pacing: the in-flight limit, the pacer, token buckets, holds
//   retry.cpp       retry decisions: what a failure is, whether and when it is tried again
//   completion.cpp  a chat completion body read into a ChatResponse
//   usage.cpp       usage and cost: prices, the Stats counters
//   audit.cpp       the audit store: its thread, replay lookups, llm_calls rows, callbacks
//   call.hpp        one request's state (Call); the URL and key, and how messages name a call
//                   without the key (ApiAccess)
// Threads: the network loop (loop.cpp, answers.cpp, Transport, Admission) and the audit
// store's thread; the public methods from any thread.

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "admission.hpp"
#include "audit.hpp"
#include "batch.hpp"
#include "call.hpp"
#include "kforge/llm/client.hpp"
#include "transport.hpp"
#include "usage.hpp"

namespace kforge::llm {

// A transfer that ended, waiting for its body to be looked at.
struct Finished {
  Call* call;
  CURLcode rc;
  long status;
  std::chrono::milliseconds latency;
};

class Client::Impl {
 public:
  Impl(const LlmConfig& cfg, ClientOptions opts);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  Status start(const ClientOptions& opts);

  // --- public API (any thread), client.cpp ---
  void submit(ChatRequest req, Callback done, std::optional<std::string> offline = {});
  Result<ChatResponse> call(ChatRequest req);
  void record_failure(ChatRequest req, int http_status, std::string error);
  std::string request_json(const ChatRequest& req) const;
  std::string request_sha256(const ChatRequest& req) const;
  const std::string& url() const { return access_.url(); }
  void reload_limits(const LlmConfig& cfg);
  Stats stats() const;
  void drain();
  void shutdown(Millis grace);

 private:
  std::string deployment() const {
    return ep_.azure_deployment.empty() ? ep_.model : ep_.azure_deployment;
  }
  // The audit store's thread: looked-up requests it could not answer, into the loop.
  void take_misses(std::vector<std::unique_ptr<Call>> misses, int looked_up);

  // --- the network loop (its thread only), loop.cpp ---
  void run();
  bool take_incoming(TimePoint now);
  void apply_limits(const LlmConfig& cfg, TimePoint now);
  void promote_timers(TimePoint now);
  std::optional<TimePoint> admit(TimePoint now);
  double estimate_tokens(const Call& c) const;
  void start_attempt(Call* c, TimePoint now);
  bool collect();
  void process_finished();
  void attempt_done(Call* c, CURLcode rc, long status, Millis latency);
  bool stop_requested();
  bool enlarge(Call* c, const ChatResponse& r, Error& err);
  void record_cut(const Call& c, const ChatResponse& r, const Error& err, int next);
  void halt(long status);
  void schedule_retry(Call* c, TimePoint now, Error err);
  void note_cut(const std::string& why, const Call& c, Millis latency);
  void count_usage(ChatResponse& r, TimePoint now, const Call& c, Channel channel);
  void finish(Call* c, Result<ChatResponse> r);
  void flush();
  void cancel_call(Call* c, const std::string& why);
  TimePoint grace_deadline();
  void cancel_waiting();
  void cancel_all();
  void publish_gauges(std::optional<TimePoint> wake);
  int poll_timeout(std::optional<TimePoint> wake, bool stopping);

  // --- answers from elsewhere (the network loop), answers.cpp ---
  void apply_answer(Call* c, std::string body, TimePoint now, bool billed = true);
  void to_batch(Call* c);
  // A call back from its batch: its request again, from the store (LineOutcome::request); its
  // messages only when it is sent again otherwise (restore_messages). false: none to be had.
  bool restore_request(Call& c, std::string request);
  void restore_messages(Call& c);
  void take_batch_outcomes(std::vector<LineOutcome> v);  // the batch runner's thread
  void take_batch_results(TimePoint now);

  // Constant after construction.
  const LlmConfig ep_;
  ApiAccess access_;  // the URL, the key (secret: only in the auth header), max_attempts
  Clock* clock_;
  std::thread thread_;  // the network loop
  std::mutex join_mu_;
  std::atomic<bool> replay_enabled_{true};
  std::atomic<std::int64_t> max_prompt_tokens_{0};
  std::atomic<std::uint64_t> next_seq_{0};

  Meter meter_;
  Transport transport_;                 // the network loop's (wakeup() from any thread)
  AuditStore audit_;                    // replay lookups, audit rows, callbacks
  std::unique_ptr<BatchRunner> batch_;  // llm.mode batch

  // Guarded by mu_.
  std::mutex mu_;
  std::vector<std::unique_ptr<Call>> incoming_;
  std::vector<LineOutcome> batch_outcomes_;
  // Batch outcomes handed over and not yet recorded and delivered (OutcomeHold): the runner
  // hands over more only while they are fewer than llm.batch.lines_in_memory.
  std::shared_ptr<std::atomic<std::int64_t>> outcomes_held_ =
      std::make_shared<std::atomic<std::int64_t>>(0);
  std::optional<LlmConfig> reload_;
  bool accepting_ = true;
  bool stop_requested_ = false;
  TimePoint grace_deadline_{};
  int lookups_pending_ = 0;  // accepted requests still at the audit store

  // Network loop thread only.
  LlmConfig lim_;
  Admission admission_;
  std::uint64_t halt_seq_ = 0;  // requests submitted before this fail as "halted"
  long halt_status_ = 0;
  std::mt19937_64 rng_;
  std::unordered_map<Call*, std::unique_ptr<Call>> live_;
  std::unordered_map<std::string, Call*> by_hash_;
  std::deque<Call*> ready_;
  std::multimap<TimePoint, Call*> timers_;
  std::vector<Call*> done_;
  std::vector<Finished> finished_;
  std::vector<std::unique_ptr<Call>> flushing_;  // done_'s calls on their way to the store
};

}  // namespace kforge::llm
