#pragma once
// Re-queueing ended jobs (`kforge retry`): the pipeline owns the jobs and runs tables, so the
// writes are here; which jobs to re-queue is the caller's choice (report::select_retry reads
// the outcomes and picks them).
//
// Only jobs that have ended (done or failed) are touched; every earlier stage output and
// verification stays in the history, and the next attempt is added beside them. At stage
// `verify` a job goes back to state verify_queued at the round of the code it holds now (the
// newest answer that holds code, the view code_outputs), and the verifier runs that code again;
// at an LLM stage (an analysis or the code stage) to state queued at round 0 with attempts reset.
// error_kind and error keep why it was re-queued. A finished run becomes active again.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct Requeue {
  std::int64_t job_id = 0;
  std::string key;         // the sample's, for messages
  std::string stage;       // an LLM stage of the run, or verify: where it starts again
  std::string error_kind;  // what it was (jobs.error_kind)
  std::string reason;      // jobs.error
};

// What the selection names: the run, its state as the selection read it, and the jobs.
struct RequeueSelection {
  std::int64_t run_id = 0;
  std::string run_state;
  std::vector<Requeue> jobs;
};

struct RequeueResult {
  std::int64_t requeued = 0;
  bool run_reactivated = false;  // the run was finished and is active again
  std::string run_state;         // the run's state afterwards
};

enum class Commit { yes, no };  // no: a dry run, everything rolled back

// In one IMMEDIATE transaction, so no daemon moves a job between the selection and the
// updates: runs `select` (it reads through `db`), then re-queues every job it names, or none.
// Errors: the selection's; "conflict" when a named job is no longer done or failed.
Result<RequeueResult> requeue(store::Db& db,
                              const std::function<Result<RequeueSelection>()>& select,
                              std::int64_t now_ms, Commit commit);

}  // namespace kforge::pipeline
