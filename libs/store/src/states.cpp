#include "kforge/store/states.hpp"

namespace kforge::store {

Result<RunState> parse_run_state(std::string_view stored) {
  return parse_enum(kRunStateNames, stored, "run state");
}

Result<JobState> parse_job_state(std::string_view stored) {
  return parse_enum(kJobStateNames, stored, "job state");
}

Result<OutputStatus> parse_output_status(std::string_view stored) {
  return parse_enum(kOutputStatusNames, stored, "stage output status");
}

Result<StageKind> parse_stage_kind(std::string_view stored) {
  return parse_enum(kStageKindNames, stored, "stage kind");
}

std::optional<JobStep> step_of(std::string_view stage) {
  return value_of(kJobStepNames, stage);
}

std::optional<JobErrorKind> job_error_kind_of(std::string_view stored) {
  return value_of(kJobErrorKindNames, stored);
}

}  // namespace kforge::store
