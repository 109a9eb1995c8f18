#pragma once
// A run's parameters (the runs table's params_json, fixed when the run is created): the one
// reader, shared by the scheduler, the verify stage and the reports.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::store {

// The repair rounds the run allows ("repair_rounds"); 0 when absent or not an integer.
int repair_rounds_of(const nlohmann::json& params);
// The same from the stored text; 0 when it is not a JSON object.
int repair_rounds_of_text(std::string_view params_json);

// The cross-compile targets the run requires ("require_targets", `kforge run create
// --require-target`): a sample that does not compile for one is not verified. Empty when absent.
std::vector<std::string> required_targets_of(const nlohmann::json& params);
std::vector<std::string> required_targets_of_text(std::string_view params_json);

// The speedup over the PyTorch reference the run requires ("require_speedup", `kforge run
// create --require-speedup X`): a passing sample whose speed label has no pass_perf at that
// threshold is flagged `slow` (not verified). 0 when absent or not a positive number.
double required_speedup_of(const nlohmann::json& params);
double required_speedup_of_text(std::string_view params_json);

}  // namespace kforge::store
