#pragma once
// JobStore: runs, jobs, leases and checkpoints in the SQLite database.
//
// A job is one (run, sample) pair. Its `stage` is the next thing to do (a stage of the run's
// pipeline spec by name, or a store::JobStep) and its `state` (store::JobState) says who may act:
// queued (anyone may lease it once not_before_ms has passed), leased (its lease_owner until
// lease_expires_ms), verify_queued (its LLM stages are done; the verifier's turn), done, failed,
// cancelled (ended).
//
// The checkpoint: a stage's output and the job's next state are written in one transaction,
// and only while the lease is still the writer's. A daemon killed at any moment leaves either
// the old state (the stage is done again; the LLM client answers it from its store) or the new
// one, never half.
//
// Threads: a JobStore uses one Db and is not thread-safe (one per thread).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/clock.hpp"
#include "kforge/pipeline/repair.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/store/states.hpp"

namespace kforge::pipeline {

struct RunRow {
  std::int64_t id = 0;
  std::string tag;
  std::string pipeline;
  std::string model;
  store::RunParams params;
  nlohmann::json prompts;
  store::RunState state = store::RunState::active;
  std::int64_t created_ms = 0;
  std::int64_t updated_ms = 0;
};

struct NewRun {
  std::string tag;
  std::string pipeline;
  std::string model;
  std::string first_stage;
  store::RunParams params;
  nlohmann::ordered_json prompts = nlohmann::ordered_json::object();  // stored in this order
  std::vector<std::int64_t> sample_ids;                               // one job each, in this order
};

struct LeasedJob {
  std::int64_t id = 0;
  std::int64_t run_id = 0;
  std::int64_t sample_id = 0;
  std::string stage;  // a stage's name (jobs.stage of a job that can be leased)
  int attempts = 0;
  int repair_round = 0;  // 0: the first generation; N: the N-th repair
};

struct SampleInput {
  std::string key;
  std::string code;
  std::optional<std::string> description_1;
  std::optional<std::string> description_2;
};

// One row of stage_outputs: an attempt at a stage, whatever its outcome.
struct StageOutput {
  std::string stage;
  int attempt = 1;
  store::OutputStatus status = store::OutputStatus::ok;
  std::string prompt_version;
  std::string prompt_sha256;
  std::string request_sha256;
  std::string request_json;
  std::optional<std::string> response_raw;
  std::optional<std::string> parsed_json;
  std::optional<std::string> error_kind;
  std::optional<std::string> error;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double cost_usd = 0;
  std::int64_t latency_ms = 0;
  int repair_round = 0;
  std::int64_t reasoning_tokens = 0;
  std::int64_t cached_prompt_tokens = 0;
  std::optional<std::string> reasoning;  // the model's reasoning, when it gave any
  std::optional<std::string> mended;     // what the extraction mended, comma-separated
};

// Where a job goes after a checkpoint.
struct NextState {
  store::JobState state = store::JobState::queued;  // queued | verify_queued | failed | done
  std::string stage;  // a stage's name or a store::JobStep's (to_string)
  int attempts = 0;
  std::int64_t not_before_ms = 0;
  std::optional<std::string> error_kind;
  std::optional<std::string> error;
};

struct Event {
  std::int64_t run_id = 0;
  std::optional<std::int64_t> job_id;
  std::optional<std::int64_t> sample_id;
  std::optional<std::string> stage;
  std::optional<std::int64_t> attempt;
  std::string level = "error";  // info | warn | error
  std::string kind;
  std::string message;
};

struct Attempt {
  store::OutputStatus status = store::OutputStatus::ok;
  std::optional<std::string> error_kind;
  std::optional<std::string> error;
  std::optional<std::string> response_raw;
};

class JobStore {
 public:
  JobStore(store::Db& db, Clock& clock, std::string owner = "");

  // --- runs ---
  // Creates the run and its jobs in one transaction. Errors: "conflict" (the tag exists).
  Result<std::int64_t> create_run(const NewRun& run);
  Result<std::optional<RunRow>> run_by_tag(const std::string& tag);
  Result<std::optional<RunRow>> run_by_id(std::int64_t id);
  Result<std::vector<RunRow>> active_runs();
  Result<std::vector<RunRow>> all_runs();
  // active <-> paused. Errors: "not_found", "conflict" (a cancelled or finished run).
  Status set_run_state(const std::string& tag, store::RunState state);
  // Records a provider-requested pause (until wall ms, and why) for `kforge status`.
  Status set_run_wait(std::int64_t run_id, std::int64_t until_ms, const std::string& reason);
  // Cancels the run and every job not yet ended or verified, in one transaction. Returns how
  // many jobs were cancelled.
  Result<std::int64_t> cancel_run(const std::string& tag);
  // Marks active runs whose jobs have all ended as finished. Returns how many.
  Result<int> finish_runs();
  // Sample ids: all (first `limit`, in id order; limit < 0: all), or those of the given keys.
  Result<std::vector<std::int64_t>> sample_ids(std::int64_t limit);
  Result<std::optional<std::int64_t>> sample_id(const std::string& key);

  // --- leases ---
  // Requeues expired leases, recording a 'lease_expired' event for each. Returns how many.
  Result<int> expire_leases();
  // Requeues leases whose owner matches the GLOB pattern (a previous process of this daemon,
  // known dead because this one holds the lock). Returns how many.
  Result<int> reclaim_leases(const std::string& owner_glob);
  // Leases up to n ready jobs of the run, oldest first, until now + lease_ms.
  Result<std::vector<LeasedJob>> lease(std::int64_t run_id, int n, std::int64_t lease_ms);
  Status renew_leases(std::int64_t lease_ms);
  Status release(std::int64_t job_id);
  Result<int> release_all();

  // --- checkpoints ---
  // In one transaction: moves the job to `next` (only if this owner still holds its lease),
  // inserts the output (if any) and the events. Returns false, writing nothing, when the lease
  // was lost (expired and taken, or the run was cancelled).
  Result<bool> checkpoint(const LeasedJob& job, const std::optional<StageOutput>& output,
                          const NextState& next, const std::vector<Event>& events);

  // --- reads for a stage ---
  Result<SampleInput> sample_input(std::int64_t sample_id);
  Result<std::optional<std::string>> ok_output(std::int64_t job_id, const std::string& stage);
  // Earlier attempts at a stage in one repair round (0 for analyze and generate).
  Result<std::vector<Attempt>> attempts(std::int64_t job_id, const std::string& stage,
                                        int repair_round = 0);
  // The good answer that holds the code of a round (generate for round 0, the repair answer for
  // round N), as parsed JSON text; nullopt when there is none.
  Result<std::optional<std::string>> round_code(std::int64_t job_id, int repair_round);
  // The latest verdict of a round's code; nullopt when there is none.
  Result<std::optional<VerdictEvidence>> round_verdict(std::int64_t job_id, int repair_round);
  Result<std::int64_t> verify_backlog();

  Status add_event(const Event& e);
  // Whether a run-level event of `kind` was recorded since `since_ms`.
  Result<bool> has_run_event(std::int64_t run_id, const std::string& kind, std::int64_t since_ms);

  const std::string& owner() const { return owner_; }
  store::Db& db() { return db_; }

 private:
  Status insert_event(const Event& e, std::int64_t now);
  Result<std::vector<RunRow>> runs_of(std::string_view query_name);

  store::Db& db_;
  Clock& clock_;
  std::string owner_;
};

// The named queries of this library (sql/*.sql).
const store::QuerySet& pipeline_queries();

}  // namespace kforge::pipeline
