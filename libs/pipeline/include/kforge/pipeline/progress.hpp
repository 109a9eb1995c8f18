#pragma once
// Progress of runs: jobs by state and stage, rate, ETA, tokens, cost, recent errors by kind.
// Read by `kforge status`, by the daemon's STATUS= line to systemd, and by /metrics.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/pipeline/jobs.hpp"
#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct ErrorKind {
  std::string kind;
  std::int64_t count = 0;
  std::int64_t last_ms = 0;
  std::string last_message;
};

// Failed jobs of one kind ("no_kernels", "python_syntax", "unknown_kernel", "parse",
// "truncated", ...), with the newest as the example. `stored` is the kind as the scheduler
// stored it ("rejected:unknown_kernel", "llm:truncated"); `kind` drops that family prefix.
struct FailureKind {
  std::string kind;
  std::string stored;
  std::int64_t count = 0;
  std::string example_key;
  std::string example;
};

// Verdicts other than passed of one verdict and cause (environment, infrastructure, sample).
struct VerdictCause {
  std::string verdict;
  std::string cause;
  std::int64_t count = 0;
  std::string example_key;
  std::string example;
};

struct RunProgress {
  RunRow run;
  std::int64_t total = 0;
  std::map<std::string, std::int64_t> by_state;                         // state -> jobs
  std::map<std::string, std::map<std::string, std::int64_t>> by_stage;  // stage -> state -> jobs
  std::map<std::string, std::map<std::string, std::int64_t>> outputs;   // stage -> status -> n
  // Jobs whose LLM stages are over: at or past the verifier, failed, or cancelled at the
  // verifier (a job cancelled before it had an answer never got there).
  std::int64_t past_llm = 0;
  std::int64_t remaining = 0;  // queued or leased
  // Jobs at the verifier (verify_queued or verifying), and jobs that ended (done or failed): the
  // bar counts the ended ones, so it reaches 100% only once verification did; cancelled jobs
  // are counted apart and never fill it.
  std::int64_t verifying = 0;
  std::int64_t ended = 0;
  std::int64_t cancelled = 0;
  // Jobs leaving the LLM stages per minute: over the finishes of the last 10 minutes (at most
  // 1,000) since the last pause among them, up to now, so it is right from a few to tens of
  // thousands a minute, follows a restart within seconds, and decays while nothing finishes.
  double per_minute = 0;
  std::optional<std::int64_t> eta_s;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t reasoning_tokens = 0;      // of the stage outputs (part of completion_tokens)
  std::int64_t cached_prompt_tokens = 0;  // of the stage outputs (part of prompt_tokens)
  std::int64_t with_reasoning = 0;        // stage outputs that came with reasoning
  // Answers read leniently, by what was mended ("raw_newlines", "python_literal", ...).
  std::map<std::string, std::int64_t> mended;
  // What the provider answered (its llm_calls; stage outputs for runs without any): every
  // network call, including unusable answers.
  double cost_usd = 0;
  // Answers replayed from the store (after a restart) instead of asked again: what they cost
  // when first asked, paid once.
  std::int64_t replayed_calls = 0;
  double saved_usd = 0;
  // A provider-requested pause that has not ended ("" / 0 when none).
  std::int64_t wait_until_ms = 0;
  std::string wait_reason;
  std::vector<ErrorKind> errors;      // the last 24 hours, most frequent first
  std::vector<FailureKind> failures;  // failed jobs by kind, most frequent first
  std::vector<VerdictCause> causes;   // verdicts other than passed by cause, most first
  // The speed label over the passing samples (latest verification each): timed, timed against
  // a reference, pass_perf, and the median speedup (absent without a reference).
  std::int64_t speed_timed = 0;
  std::int64_t speed_with_reference = 0;
  std::int64_t speed_pass_perf = 0;
  std::optional<double> speed_median;
  // The label's flags over the same samples, most frequent first (not_timed: timing was asked
  // for and failed, the reasons below; library_work; kernel_not_timed; ...), and the commonest
  // reasons a label has no figures, with their counts.
  std::vector<std::pair<std::string, std::int64_t>> speed_flags;
  std::vector<std::pair<std::string, std::int64_t>> not_timed_reasons;
  std::map<std::string, std::int64_t> verdicts;
  // Quality flags on passing samples' latest verdicts (weak_test, weak_inputs, ...), by flag.
  std::map<std::string, std::int64_t> flags;
  // Samples whose latest verdict, passed or not, is flagged out_of_bounds.
  std::int64_t out_of_bounds = 0;
  std::string refused;  // why the daemon refuses the run ("" if not): set by the caller

  double fraction() const {
    return total > 0 ? static_cast<double>(past_llm) / static_cast<double>(total) : 0;
  }
  double ended_fraction() const {
    return total > 0 ? static_cast<double>(ended) / static_cast<double>(total) : 0;
  }
  nlohmann::ordered_json to_json() const;
};

// Every run (or the one tagged `tag`), oldest first. `last_stage(pipeline)` names the stage
// whose good answers end a job's LLM part (generate).
Result<std::vector<RunProgress>> collect_progress(store::Db& db, std::int64_t now_ms,
                                                  const std::optional<std::string>& tag = {});
// The active runs only (the daemon's STATUS line): a database's finished history costs nothing.
Result<std::vector<RunProgress>> collect_active_progress(store::Db& db, std::int64_t now_ms);

// Every run's jobs by state (the states that have any), from the kept counts.
Result<std::map<std::string, std::int64_t>> jobs_by_state(store::Db& db);

// The rate, in finishes per minute, from finish times (newest first) at now_ms: over the
// stretch since the last pause (a gap above max(60 s, 10 times the mean gap so far)).
double rate_per_minute(const std::vector<std::int64_t>& newest_first, std::int64_t now_ms);

// "[##########..........] 50%"
std::string progress_bar(double fraction, int width = 30);

}  // namespace kforge::pipeline
