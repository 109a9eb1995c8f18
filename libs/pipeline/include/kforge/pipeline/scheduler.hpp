#pragma once
// Scheduler: the daemon's core, one step() at a time.
//
// Each step, without blocking:
//   1. checkpoints every stage call that completed since the last step (one transaction each:
//      the stage output, the job's next state, its events);
//   2. renews this owner's leases when a third of their length has passed, and requeues other
//      owners' expired leases;
//   3. unless draining, leases ready jobs up to max_in_flight (and no more than the gateway's
//      room() in a step), shared fairly between the active runs (each run gets an equal part of
//      the capacity; what one cannot use goes to the others), renders each job's prompt and
//      submits it through the LlmGateway.
// wait() blocks until a call completes or the timeout passes; run loops are step() + wait().
// Tests drive step() directly with a ManualClock.
//
// A job's next state after its stage:
//   ok, more stages    -> queued at the next stage
//   ok, last stage     -> verify_queued (the verifier's hand-off)
//   unparsable/rejected/cut at max_tokens
//                      -> queued again at once, with the answer and the reason appended so the
//                         next request differs, up to max_attempts; then failed
//   transient error    -> queued again after an exponential backoff, up to
//                         max_transient_failures; then failed
//   permanent error    -> failed (failure_streak_pause of them in a row pause the run)
//   run-level error    -> (401/403, unknown model: "auth", "not_found") the run pauses at the
//                         first one; the job (and those the client did not send: "halted")
//                         goes back to the queue, none fails for it
//   prompt too large   -> failed with "too_large", before any request
// A request's identity includes the job, stage and attempt (the count of the stage's recorded
// answers + 1): the client replays a stored answer only to the same attempt (after a crash),
// and a retry or a re-ask always makes a new request.
// Every error is recorded as a job event; every answer as a stage output.
//
// Runs whose recorded prompt identities differ from the loaded prompts are refused: none of
// their jobs is leased, and a 'prompt_changed' event says why.
//
// Threads: step(), wait(), drain() and the rest are called from one thread (the one owning the
// JobStore's Db). Gateway callbacks only queue completions.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "kforge/core/clock.hpp"
#include "kforge/pipeline/config.hpp"
#include "kforge/pipeline/gateway.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/prompt.hpp"

namespace kforge::pipeline {

struct StepReport {
  int completed = 0;  // stage calls checkpointed this step
  int leased = 0;
  int submitted = 0;
  int failed = 0;  // jobs that ended failed this step
};

// Counters since the scheduler started (for /metrics and the benchmark).
struct SchedulerStats {
  std::uint64_t leased = 0;
  std::uint64_t submitted = 0;
  std::uint64_t checkpoints = 0;
  std::uint64_t lost_leases = 0;
  std::map<std::string, std::uint64_t> outputs;  // "stage:status" -> count
  std::uint64_t jobs_failed = 0;
  std::uint64_t jobs_to_verify = 0;
  // Time spent in the daemon's own work per stage call: building and submitting requests,
  // parsing and checking answers, checkpoints, leasing (nanoseconds, steady clock).
  std::uint64_t busy_ns = 0;
  std::int64_t first_submit_ms = -1;  // wall time of the first submit
};

class Scheduler {
 public:
  // `store`, `llm`, `prompts` and `clock` must outlive the scheduler.
  Scheduler(JobStore& store, LlmGateway& llm, const PromptLibrary& prompts, Clock& clock,
            PipelineConfig cfg);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Errors: SQLite errors of the store (the step can be retried).
  Result<StepReport> step();
  // Blocks (real time) until a completion is queued or `max` passes. Returns true if one is.
  bool wait(std::chrono::milliseconds max);
  // Makes a wait() in progress (or the next one) return at once. Any thread.
  void wake();
  // Stops leasing and drains the gateway (no new attempt or retry starts there); calls on the
  // wire still complete and are checkpointed by later steps.
  void drain() {
    draining_ = true;
    llm_.drain();
  }
  bool draining() const { return draining_; }
  // Releases the leases of every job this owner holds (calls still in flight are abandoned:
  // their completions are ignored). For shutdown after the grace period.
  Result<int> release_all();
  // New limits (and prompts) from a reloaded configuration. Runs are re-checked against them.
  void reconfigure(const PipelineConfig& cfg, const PromptLibrary* prompts = nullptr);

  // The database changed under the scheduler (another connection committed: a run created,
  // resumed or retried, a verdict that sends a job to repair): the next step looks for runs and
  // ready jobs at once instead of after its idle_poll_ms timers. The loop's thread.
  void notice_change();
  // The earliest future time (wall ms) a step has work that no change announces: a job's
  // backoff ending. nullopt: none. Computed by the last step.
  std::optional<std::int64_t> next_due_ms() const {
    if (next_due_ms_ == 0) return std::nullopt;
    return next_due_ms_;
  }

  int in_flight() const { return static_cast<int>(in_flight_.size()); }
  const SchedulerStats& stats() const { return stats_; }
  // Run id -> why it is refused (prompt changed).
  const std::map<std::int64_t, std::string>& refused() const { return refused_; }

 private:
  struct Call;
  struct Completion;
  struct Inbox;
  // A run this scheduler serves: its row, its spec, and the scheduler's own bookkeeping of it.
  struct ServedRun {
    RunRow row;
    const PipelineSpec* spec = nullptr;
    int in_flight = 0;
    std::int64_t idle_until_ms = 0;  // no ready jobs seen; look again after this
    std::int64_t retry_at_ms = 0;    // the earliest backoff this process set that is pending
    int permanent_streak = 0;
  };

  Status refresh_runs();
  Status lease_and_submit(StepReport& rep);
  Status submit(ServedRun& run, const LeasedJob& job);
  Result<std::optional<Error>> earlier_stage_values(const ServedRun& run, const LeasedJob& job,
                                                    const Template& tmpl,
                                                    std::map<std::string, std::string>& values);
  // Checkpointing a completed call (scheduler_complete.cpp): complete() puts these together.
  struct Outcome;   // what the answer or error amounts to: the stage output, the failure
  struct NextStep;  // the job's next state and its events
  Status complete(Completion& c, StepReport& rep);
  Status settle_run_level(const Completion& c, const Call& call, bool& released);
  Outcome read_outcome(const Call& call, const Result<llm::ChatResponse>& result) const;
  NextStep next_step(const Call& call, const Outcome& o) const;
  Status after_checkpoint(const Call& call, const Outcome& o, const NextStep& n, bool answered,
                          StepReport& rep);
  Status fail_before_call(ServedRun& run, const LeasedJob& job, const Error& why);
  // scheduler_request.cpp: a call's request kept out of memory while it waits, and read back.
  void hold_request(Call& call, const std::string& model, llm::ChatRequest& req);
  Result<std::string> held_request_json(const Call& call);
  std::string failed_request_sha256(const Call& call, const std::string& body) const;
  Status pause_run(ServedRun& run, const std::string& why);
  Status note_provider_wait();
  std::int64_t backoff_ms(int failures) const;

  JobStore& store_;
  LlmGateway& llm_;
  const PromptLibrary* prompts_;
  Clock& clock_;
  PipelineConfig cfg_;

  std::map<std::int64_t, ServedRun> runs_;
  std::map<std::int64_t, std::string> refused_;
  std::map<std::int64_t, std::unique_ptr<Call>> in_flight_;  // by job id
  std::uint64_t generation_ = 0;
  std::int64_t next_renew_ms_ = 0;
  std::int64_t next_expiry_check_ms_ = 0;
  std::int64_t next_runs_refresh_ms_ = 0;
  std::int64_t next_finish_check_ms_ = 0;
  std::int64_t next_wait_check_ms_ = 0;
  std::int64_t wait_noted_until_ms_ = 0;  // the provider pause last written to the runs
  std::int64_t next_due_ms_ = 0;          // next_due_ms(); 0: none
  bool draining_ = false;
  bool dictionary_pending_ = true;  // the templates' text dictionary is not registered yet
  SchedulerStats stats_;

  // Completions, filled by gateway callbacks on other threads (shared: a callback may outlive
  // the scheduler).
  std::shared_ptr<Inbox> inbox_;
};

}  // namespace kforge::pipeline
