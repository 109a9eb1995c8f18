#pragma once
// Re-queueing a subset of a run's finished samples. Only jobs that have ended (done or failed)
// are touched; every earlier stage output and verification stays in the history, and the next
// attempt is added beside them.
//
// At stage `verify` a job goes back to state verify_queued (the verifier runs the same code
// again); at `generate` (or `analyze`, v2 runs) to state queued with attempts reset to 0. All
// selected jobs change in one transaction, or none do. A finished run becomes active again.

#include <cstdint>
#include <optional>
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
  // Where to start again: analyze | generate | verify. Absent: verify for samples with a
  // verdict, the stage that failed for the others.
  std::optional<std::string> stage;
  bool dry_run = false;  // select and count, change nothing
  std::int64_t now_ms = 0;
};

struct RetrySummary {
  std::int64_t requeued = 0;
  // By where each job starts again, and by what it was.
  std::vector<std::pair<std::string, std::int64_t>> by_stage;
  std::vector<std::pair<std::string, std::int64_t>> by_outcome;
  std::vector<std::string> keys;  // by key
  bool run_reactivated = false;   // the run was finished and is active again
  std::string run_state;          // the run's state afterwards
};

// Errors: "usage" (nothing selected, an unknown name, --stage verify for samples without code,
// --stage analyze on a v1 run), "not_found" (unknown tag), "conflict" (a cancelled run).
Result<RetrySummary> retry(store::Db& db, const std::string& tag, const RetryOptions& opts);

}  // namespace kforge::report
