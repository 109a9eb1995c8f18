#pragma once
// Where each sample of a tagged run stands: the job's state, the latest output of the stage it
// stopped at, the latest verdict that applies to its current code, and what it cost.
//
// Read-only; built on the schema of migrations/0001_init.sql. Not thread-safe (one Db per
// thread).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/store/db.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/store/states.hpp"
#include "kforge/store/vocabulary.hpp"

namespace kforge::report {

// The verifier's names report compares with (store/vocabulary.hpp's tables, the one place each
// is spelled): the verdict passed, and the flags that say a verdict is the verifier's own doing.
inline constexpr std::string_view kPassed = store::verdict_name(store::Verdict::passed);
inline constexpr const char* kEnvironmentFlag = store::flag_name(store::Flag::environment);
inline constexpr const char* kInfrastructureFlag = store::flag_name(store::Flag::infrastructure);
// The third cause of a verdict other than passed (compare.hpp's verdict_cause): the sample's own.
inline constexpr const char* kSampleCause = "sample";

struct RunInfo {
  std::int64_t id = 0;
  std::string tag;
  std::string pipeline;  // the prompt version, e.g. "v2"
  std::string model;
  std::string state;  // runs.state (store::RunState's names)
  // runs.prompts_json: {stage: {"version", "sha256", "schema_sha256", "kind"}}
  nlohmann::ordered_json prompts;
  store::RunParams params;  // runs.params_json

  // The repair rounds the run was created with (params "repair_rounds"; 0 when absent).
  int repair_rounds() const { return params.repair_rounds; }
  // The run's stages of a kind, as it recorded them (store/run_prompts.hpp).
  std::vector<std::string> stages(store::StageKind kind) const;
  // Whether the run asked for an analysis before the code (a stage of kind analysis).
  bool has_analysis() const { return !stages(store::StageKind::analysis).empty(); }
  // Whether the run is active (its samples may still move).
  bool active() const { return state == store::to_string(store::RunState::active); }
};

// The run with this tag. Error kind "not_found" names the tag and lists the known ones.
Result<RunInfo> find_run(store::Db& db, const std::string& tag);

// What became of a sample in a run, as one word.
enum class Category {
  verified,  // verdict passed, no quality flags
  flagged,   // verdict passed, but with a quality flag (no_kernel_launch, mutant_survived)
  failed,    // the verdicts other than passed
  error,
  timeout,
  crashed,
  invalid,
  skipped,
  llm_error,    // a stage ended on an LLM error
  parse_error,  // a stage's output could not be parsed
  rejected,     // a stage's output was rejected (e.g. by the kernel facts)
  other,        // ended without a verdict or a failed stage output (the job's error says why)
  unfinished,   // still queued or in progress, or cancelled
};
std::string_view to_string(Category c);
// Every category in display order.
const std::vector<Category>& all_categories();

// One round of a sample (0: the first generation; N: the N-th repair): the latest verdict of
// that round's code and what the round's LLM calls cost.
struct RoundOutcome {
  int round = 0;
  std::optional<std::string> verdict;
  std::vector<std::string> flags;
  double cost_usd = 0;
  std::int64_t tokens = 0;  // prompt + completion
  std::int64_t llm_ms = 0;

  bool verified() const { return verdict && *verdict == kPassed && flags.empty(); }
};

struct SampleOutcome {
  std::int64_t job_id = 0;
  std::int64_t sample_id = 0;
  std::string key;
  store::JobState state = store::JobState::queued;
  std::string stage;  // jobs.stage: where the job is, or where it stopped
  std::optional<std::string> job_error_kind;
  std::optional<std::string> job_error;
  // The latest output of `stage` when the job is at analyze or generate (or, for a job past
  // them with no verdict, the latest failed output); failure_stage names its stage.
  std::string failure_stage;
  std::optional<store::OutputStatus> stage_status;
  std::optional<std::string> stage_error_kind;
  std::optional<std::string> stage_error;
  // The latest verification, only when it belongs to the job's current code: a job sent back to
  // generate has no verdict until it is verified again.
  std::optional<std::string> verdict;
  std::vector<std::string> flags;
  std::optional<std::string> detail;
  // That verification's cross-compile, per target: ok, error, unavailable or not_run.
  std::map<std::string, std::string> targets;
  // That verification's kernel battery (docs/VERIFIER.md, "Kernel mutants"): the kernel mutants
  // its test killed and those that applied; absent where the battery did not run.
  std::optional<std::int64_t> kernel_killed;
  std::optional<std::int64_t> kernel_applicable;
  // That verification's speed label (verification_speed): whether it was timed, the speedup
  // over the PyTorch reference (absent without one) and pass_perf.
  bool timed = false;
  std::optional<double> speedup;
  std::optional<bool> pass_perf;
  // Its flags (perf_suspect, library_work, not_timed, ...; migration 0032's speed_flag_names).
  std::vector<std::string> speed_flags;
  // The part of the timed call's GPU time the sample's own launches took (migration 0043).
  std::optional<double> kernel_share;
  // The sample's near-duplicate group at the last kforge corpus dedup (dedup_groups): the
  // group's id (its smallest sample id) and how many samples it holds; none when it has no
  // near duplicate.
  std::optional<std::int64_t> dup_group;
  std::int64_t dup_group_size = 0;
  // Every attempt counts: what was paid and how long it took.
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  double cost_usd = 0;
  std::int64_t llm_ms = 0;
  std::int64_t llm_calls = 0;
  std::int64_t verify_ms = 0;
  std::int64_t verifications = 0;
  std::int64_t mended_outputs = 0;        // stage outputs read leniently (stage_outputs.mended)
  std::int64_t reasoning_tokens = 0;      // part of completion_tokens
  std::int64_t cached_prompt_tokens = 0;  // part of prompt_tokens
  // Repair: the round the job reached (jobs.repair_round) and every round it has, in order.
  int repair_round = 0;
  std::vector<RoundOutcome> rounds;

  // The model answered that the code itself cannot work (a repair round ended the sample).
  bool unfixable() const {
    return job_error_kind &&
           store::job_error_kind_of(*job_error_kind) == store::JobErrorKind::unfixable;
  }
  // The first round whose verdict is verified; nullopt when none is.
  std::optional<int> verified_round() const;
  bool finished() const { return store::finished(state); }
  bool verified() const { return category() == Category::verified; }
  Category category() const;
};

// Every job of the run, ordered by sample key. Errors name the run and sample of a malformed
// stored value (e.g. flags_json that is not a list of strings).
Result<std::vector<SampleOutcome>> load_outcomes(store::Db& db, const RunInfo& run);
// The same for the samples of the run among `sample_ids` (ids without a job in the run give
// nothing), ordered by key: what a reader holding a run's outcomes reads again of the samples
// outcome_changes_since names.
Result<std::vector<SampleOutcome>> load_outcomes_of(store::Db& db, const RunInfo& run,
                                                    std::vector<std::int64_t> sample_ids);

// The run's change number now (migration 0050's outcome_changes, kept by triggers on every
// table an outcome is read from): outcomes read after it hold every change numbered up to it.
Result<std::int64_t> outcome_change_mark(store::Db& db, std::int64_t run_id);
// What changed in a run after change number `mark`: the samples whose outcome may differ, and
// whether a job was deleted (a reader then reads the whole run again). `mark`: the newest
// change number seen (the argument when none).
struct OutcomeChanges {
  std::vector<std::int64_t> samples;
  bool removed = false;
  std::int64_t mark = 0;
};
Result<OutcomeChanges> outcome_changes_since(store::Db& db, std::int64_t run_id, std::int64_t mark);

}  // namespace kforge::report
