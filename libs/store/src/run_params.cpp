#include "kforge/store/run_params.hpp"

namespace kforge::store {

int repair_rounds_of(const nlohmann::json& params) {
  if (!params.is_object()) return 0;
  auto it = params.find("repair_rounds");
  if (it == params.end() || !it->is_number_integer()) return 0;
  return it->get<int>();
}

int repair_rounds_of_text(std::string_view params_json) {
  return repair_rounds_of(nlohmann::json::parse(params_json, nullptr, false));
}

std::vector<std::string> required_targets_of(const nlohmann::json& params) {
  std::vector<std::string> out;
  if (!params.is_object()) return out;
  auto it = params.find("require_targets");
  if (it == params.end() || !it->is_array()) return out;
  for (const auto& t : *it)
    if (t.is_string()) out.push_back(t.get<std::string>());
  return out;
}

std::vector<std::string> required_targets_of_text(std::string_view params_json) {
  return required_targets_of(nlohmann::json::parse(params_json, nullptr, false));
}

double required_speedup_of(const nlohmann::json& params) {
  if (!params.is_object()) return 0;
  auto it = params.find("require_speedup");
  if (it == params.end() || !it->is_number()) return 0;
  double x = it->get<double>();
  return x > 0 ? x : 0;
}

double required_speedup_of_text(std::string_view params_json) {
  return required_speedup_of(nlohmann::json::parse(params_json, nullptr, false));
}

}  // namespace kforge::store
