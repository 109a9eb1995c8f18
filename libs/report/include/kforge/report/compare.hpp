#pragma once
// A/B comparison of tagged runs over the samples each pair finished.
//
// Each run after the first is compared with the first (the baseline) on the samples both runs
// finished (job done or failed). A sample is verified when its latest verdict is passed with no
// quality flag. For each pair: the verified rate of each run with a Wilson interval, the paired
// difference (B - A) with Newcombe's interval and the exact McNemar p, counts by verdict, by
// stage failure and by quality flag, the samples that flipped each way, and tokens, cost and
// time per verified sample.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/report/outcomes.hpp"
#include "kforge/report/stats.hpp"
#include "kforge/store/db.hpp"

namespace kforge::report {

// A name and a count, in display order.
using Counts = std::vector<std::pair<std::string, std::int64_t>>;

struct Flip {
  std::string key;
  Category from;  // in the baseline (for a repair flip: after the first generation)
  Category to;    // in the other run (for a repair flip: at the end)
  int round = 0;  // for a repair flip: the repair round that made it verified
};

// The yield of a run after one round: round 0 is the first generation, round N the N-th repair.
// A sample counts as verified after round N when a round up to N was verified; cost is what the
// LLM calls of rounds up to N cost.
struct RoundYield {
  int round = 0;
  std::int64_t verified = 0;
  double rate = 0;
  double cost_usd = 0;
  std::optional<double> cost_per_verified;
};

// Why verdicts other than passed came: "environment" (the verifier's Python lacks torch or
// triton), "infrastructure" (the verifier could not run the sample), or "sample" (the sample's
// own code). Only "sample" says anything about the prompt that wrote it.
struct VerdictCause {
  std::string cause;
  std::int64_t count = 0;
  std::string example_key;  // a sample with this cause
  std::string example;      // its verdict and detail, e.g. "error: No module named 'torch'"
};

// One cross-compile target of a run (verifier.cross_compile): of the samples whose latest
// verification compiled the kernels for it, how many compiled (rate: ok / (ok + error), with its
// Wilson interval); unavailable (no backend in that Triton) and not_run are counted apart.
struct TargetRate {
  std::string target;
  std::int64_t ok = 0;
  std::int64_t error = 0;
  std::int64_t unavailable = 0;
  std::int64_t not_run = 0;
  std::int64_t verified_ok = 0;  // verified samples that compile for it
  double rate = 0;
  Interval interval;
};

// The speed label over a run's passing samples (docs/VERIFIER.md, "The speed label"): how many
// were timed, how many against a reference, the distribution of their speedups, and pass_perf
// (its rate over those with a reference, with its Wilson interval; the cost per verified sample
// that also passed pass_perf). Empty (timed 0) where nothing was timed.
struct SpeedSummary {
  std::int64_t timed = 0;
  std::int64_t with_reference = 0;
  std::int64_t pass_perf = 0;
  double pass_perf_rate = 0;
  Interval pass_perf_interval;
  // Quantiles of the speedups: 10th, 25th, 50th, 75th and 90th percentile.
  std::vector<double> speedup_quantiles;
  std::int64_t faster = 0;  // speedup above 1
  std::optional<double> cost_per_fast_verified;
  // The speed label's flags over the passing samples, most frequent first (not_timed: timing
  // was asked for and failed; library_work, kernel_not_timed, perf_suspect, ...).
  Counts flags;
};

struct RunSummary {
  std::int64_t samples = 0;  // the compared samples
  std::int64_t verified = 0;
  double rate = 0;
  Interval interval;  // Wilson, at the comparison's confidence
  // By category (all_categories() order, unfinished excluded; zero counts kept).
  Counts categories;
  // By latest verdict: passed, failed, error, timeout, crashed, invalid, skipped, and "none"
  // for samples that never reached the verifier.
  Counts verdicts;
  // Stage failures: llm_error, parse_error, rejected, other; then by "stage/error_kind"
  // (e.g. "generate/rejected_by_facts"), most frequent first.
  Counts failures;
  Counts failure_kinds;
  // Quality flags on passing samples, most frequent first.
  Counts flags;
  // Per cross-compile target, in name order (none when no verification had a target).
  std::vector<TargetRate> targets;
  // The kernel battery over the passing samples it ran on: samples, kernel mutants killed and
  // applicable (summed), and killed / applicable (absent when none applied).
  std::int64_t kernel_samples = 0;
  std::int64_t kernel_killed = 0;
  std::int64_t kernel_applicable = 0;
  std::optional<double> kernel_rate;
  SpeedSummary speed;
  // Spent on the compared samples, every attempt included.
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double cost_usd = 0;
  std::int64_t llm_ms = 0;     // sum of LLM call latencies
  std::int64_t verify_ms = 0;  // sum of verifier run times
  std::int64_t llm_calls = 0;
  std::int64_t mended_outputs = 0;  // answers read leniently (priced like any other)
  std::int64_t reasoning_tokens = 0;
  std::int64_t cached_prompt_tokens = 0;
  // Per verified sample; absent when nothing was verified.
  std::optional<double> tokens_per_verified;
  std::optional<double> cost_per_verified;
  std::optional<double> seconds_per_verified;  // (llm_ms + verify_ms) / 1000 / verified
  // Repair: the run's repair rounds, the yield after each round (0 to the last round the run
  // may reach), the samples that repair made verified, and the samples the model declared
  // unfixable.
  int repair_rounds = 0;
  std::vector<RoundYield> rounds;
  std::vector<Flip> repaired;
  std::int64_t unfixable = 0;
  // A repair round produced an answer or a verdict for some sample (rows about repair are
  // shown only then).
  bool repair_ran = false;
  // Verdicts that are not passed, by cause (environment, infrastructure, sample; zero counts
  // left out), and how many verdicts depend on the samples at all (not environment or
  // infrastructure).
  std::vector<VerdictCause> causes;
  std::int64_t sample_verdicts = 0;
  std::int64_t environment_verdicts = 0;  // environment or infrastructure
};

struct PairComparison {
  std::string tag_a;  // the baseline
  std::string tag_b;
  std::int64_t samples = 0;     // finished in both
  std::int64_t excluded_a = 0;  // jobs of A not compared (unfinished in A or B, or not in B)
  std::int64_t excluded_b = 0;
  RunSummary a;
  RunSummary b;
  PairCounts table;
  double difference = 0;  // rate B - rate A
  Interval difference_interval;
  double p_value = 1;
  bool significant = false;  // p < 1 - confidence
  std::vector<Flip> gained;  // not verified in A, verified in B
  std::vector<Flip> lost;    // verified in A, not in B
  // Set when no difference may be called: a run has verdicts, but none that depends on its
  // samples (all environment or infrastructure errors). Says which run, why, and the fix.
  std::string no_call;
  // What makes the two runs less than a like-for-like pair, one sentence each: today, runs
  // created with different near-duplicate settings (params "dedup": choice and threshold).
  std::vector<std::string> warnings;
};

// The warnings of a pair of runs (see PairComparison::warnings), from their params.
std::vector<std::string> pair_warnings(const RunInfo& a, const RunInfo& b);

struct Comparison {
  double confidence = 0.95;
  std::int64_t generated_ms = 0;
  std::string database;
  std::vector<RunInfo> runs;  // in the order given; runs[0] is the baseline
  std::vector<PairComparison> pairs;
};

struct CompareOptions {
  double confidence = 0.95;
  std::int64_t now_ms = 0;  // stamped on the report
};

// Errors: "usage" for fewer than two tags or a tag given twice; "not_found" for an unknown tag.
Result<Comparison> compare(store::Db& db, const std::vector<std::string>& tags,
                           const CompareOptions& opts);

// Why a verdict came, from its flags: "environment", "infrastructure" or "sample" (see
// VerdictCause); static text.
const char* verdict_cause(const std::vector<std::string>& flags);

// A sample that ended at a stage rather than with a verdict (llm_error, parse_error, rejected,
// other) as "stage/error_kind", e.g. "generate/rejected_by_facts"; "" for any other sample.
std::string stage_failure(const SampleOutcome& o);

// Pure: the comparison of two runs' outcomes (each ordered by key, as load_outcomes gives them).
PairComparison compare_outcomes(const RunInfo& a, const std::vector<SampleOutcome>& oa,
                                const RunInfo& b, const std::vector<SampleOutcome>& ob,
                                double confidence);

// The whole comparison as JSON (for --json), every flipped sample listed.
nlohmann::ordered_json to_json(const Comparison& c);

// The terminal table; lists at most list_limit flipped samples each way.
std::string format_text(const Comparison& c, int list_limit);

// A self-contained HTML page: inline CSS and SVG, no scripts, no external assets.
std::string render_html(const Comparison& c);

}  // namespace kforge::report
