#pragma once
// The pipeline's states as the schema stores them (migrations/0001_init.sql): closed enums, each
// with its stored names in one table. C++ compares and binds these; only SQL files spell the
// names. to_string() gives exactly the stored text; parse_*() reads it back, an unknown name
// being an error (kind "data") that lists the known ones.
//
//   runs.state            RunState       active -> paused <-> active, -> cancelled, -> finished
//   jobs.state            JobState       who may act on the job (jobs.hpp in the pipeline)
//   jobs.stage            a stage name or a JobStep: the next thing to do. LLM stages are open
//                         (the names a pipeline spec gives them, prompts/<version>/pipeline.yaml),
//                         so jobs.stage is text; after them come the fixed steps verify and none
//                         (and, after a verdict, the repair stage: kRepairStage).
//   stage_outputs.status  OutputStatus   what became of one LLM call
//   a stage's kind        StageKind      what its answer holds, which decides its checks
//   jobs.error_kind       JobErrorKind   the kinds another library acts on (other values are
//                                        readable detail, e.g. "llm:timeout", "rejected:...")
//
// "done" is both a job state (the job ended with an outcome) and, in jobs.stage, the step after
// every other one (nothing left to do). In C++ they are JobState::done and JobStep::none; the
// stored text of both stays "done".

#include <optional>
#include <string_view>

#include "kforge/core/enum_names.hpp"
#include "kforge/core/result.hpp"

namespace kforge::store {

enum class RunState { active, paused, cancelled, finished };
inline constexpr EnumName<RunState> kRunStateNames[] = {{RunState::active, "active"},
                                                        {RunState::paused, "paused"},
                                                        {RunState::cancelled, "cancelled"},
                                                        {RunState::finished, "finished"}};

enum class JobState {
  queued,         // anyone may lease it (once not_before_ms has passed)
  leased,         // its lease_owner is at an LLM stage
  verify_queued,  // the verifier's turn
  verifying,      // a verifier holds it
  done,           // ended with an outcome (a verdict, or the model's "unfixable")
  failed,         // ended on an error
  cancelled,      // its run was cancelled
};
inline constexpr EnumName<JobState> kJobStateNames[] = {{JobState::queued, "queued"},
                                                        {JobState::leased, "leased"},
                                                        {JobState::verify_queued, "verify_queued"},
                                                        {JobState::verifying, "verifying"},
                                                        {JobState::done, "done"},
                                                        {JobState::failed, "failed"},
                                                        {JobState::cancelled, "cancelled"}};

// The steps of jobs.stage after the LLM stages.
enum class JobStep {
  verify,  // the verifier's (job state verify_queued or verifying)
  none,    // nothing left to do (stored "done")
};
inline constexpr EnumName<JobStep> kJobStepNames[] = {{JobStep::verify, "verify"},
                                                      {JobStep::none, "done"}};

enum class OutputStatus { ok, llm_error, parse_error, rejected };
inline constexpr EnumName<OutputStatus> kOutputStatusNames[] = {
    {OutputStatus::ok, "ok"},
    {OutputStatus::llm_error, "llm_error"},
    {OutputStatus::parse_error, "parse_error"},
    {OutputStatus::rejected, "rejected"}};

// What a stage's answer holds (a stage of a pipeline spec names its kind).
enum class StageKind {
  analysis,  // facts about the code for later stages ({{analysis}}); no code to verify
  code,      // a kernel wrapper and unit test: the code the verifier runs (round 0)
  repair,    // after a verdict: corrected code (round N) or {"unfixable": reason}
};
inline constexpr EnumName<StageKind> kStageKindNames[] = {
    {StageKind::analysis, "analysis"}, {StageKind::code, "code"}, {StageKind::repair, "repair"}};

// The name of a pipeline's repair stage (kind repair): the verify queue sends a job back to it,
// by this name in jobs.stage, after a verdict that is not verified.
inline constexpr std::string_view kRepairStage = "repair";

enum class JobErrorKind {
  unfixable,  // a repair answer said the code cannot work; the job is done
  cancelled,  // the run was cancelled while the verifier held the job
  verifier,   // the verifier gave the job back (its reason in jobs.error)
};
inline constexpr EnumName<JobErrorKind> kJobErrorKindNames[] = {
    {JobErrorKind::unfixable, "unfixable"},
    {JobErrorKind::cancelled, "cancelled"},
    {JobErrorKind::verifier, "verifier"}};

constexpr std::string_view to_string(RunState v) {
  return name_of(kRunStateNames, v);
}
constexpr std::string_view to_string(JobState v) {
  return name_of(kJobStateNames, v);
}
constexpr std::string_view to_string(JobStep v) {
  return name_of(kJobStepNames, v);
}
constexpr std::string_view to_string(OutputStatus v) {
  return name_of(kOutputStatusNames, v);
}
constexpr std::string_view to_string(StageKind v) {
  return name_of(kStageKindNames, v);
}
constexpr std::string_view to_string(JobErrorKind v) {
  return name_of(kJobErrorKindNames, v);
}

Result<RunState> parse_run_state(std::string_view stored);
Result<JobState> parse_job_state(std::string_view stored);
Result<OutputStatus> parse_output_status(std::string_view stored);
Result<StageKind> parse_stage_kind(std::string_view stored);
// jobs.stage: the step it names, nullopt for an LLM stage's name.
std::optional<JobStep> step_of(std::string_view stage);
// jobs.error_kind: the kind it names, nullopt for any other (detail) value.
std::optional<JobErrorKind> job_error_kind_of(std::string_view stored);

// Whether jobs.stage names an LLM stage before the verifier (not a step, not the repair stage).
inline bool before_verifier(std::string_view stage) {
  return !value_of(kJobStepNames, stage) && stage != kRepairStage;
}

// Whether a job in this state has ended (done or failed; a cancelled job is not finished).
constexpr bool finished(JobState s) {
  return s == JobState::done || s == JobState::failed;
}

}  // namespace kforge::store
