#pragma once
// Choosing which of a run's finished samples `kforge retry` re-queues, and where each starts
// again. Read-only: the re-queueing itself is the pipeline's (pipeline/requeue.hpp), which runs
// this selection inside its transaction. Only jobs that have ended (done or failed) are chosen.
//
// At stage `verify` a job goes back to the verifier (the code it holds runs again); at
// `generate` (or `analyze`, runs whose pipeline has an analysis) to its LLM queue.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"

namespace kforge::report {

struct RetryOptions {
  // Select by latest verdict: passed, failed, error, timeout, crashed, invalid, skipped, and
  // "flagged" for passed with a quality flag.
  std::vector<std::string> verdicts;
  // Select samples that failed before verification: llm_error, parse_error, rejected, other.
  std::vector<std::string> failures;
  // Where to start again: one of the run's stages of kind analysis or code, as it recorded them
  // (v2: analyze, generate), or verify; another name is a "usage" error that lists the run's.
  // Absent: verify for samples with a verdict, the stage that failed for the others.
  std::optional<std::string> stage;
  // Only the samples with these keys (kforge retry --keys FILE); alone, every finished one of
  // them. A key the run does not have is a "usage" error naming it.
  std::optional<std::set<std::string>> keys;
};

// One chosen job.
struct RetryJob {
  std::int64_t job_id = 0;
  std::string key;
  std::string stage;    // an analysis or the code stage of the run, or verify: where it starts
  std::string outcome;  // what it was: a verdict, "flagged", or a stage failure
  std::string reason;   // "re-queued by kforge retry from OUTCOME: DETAIL"
};

struct RetrySelection {
  std::int64_t run_id = 0;
  std::string run_state;       // as read
  std::vector<RetryJob> jobs;  // by key
  // By where each job starts again, and by what it was.
  std::vector<std::pair<std::string, std::int64_t>> by_stage;
  std::vector<std::pair<std::string, std::int64_t>> by_outcome;
};

// Errors: "usage" (nothing selected, an unknown name, --stage verify for samples without code,
// --stage analyze on a v1 run), "not_found" (unknown tag), "conflict" (a cancelled run).
Result<RetrySelection> select_retry(store::Db& db, const std::string& tag,
                                    const RetryOptions& opts);

}  // namespace kforge::report
