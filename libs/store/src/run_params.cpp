#include "kforge/store/run_params.hpp"

namespace kforge::store {

namespace {

Unexpected bad(const std::string& key, const char* want) {
  return fail("parse", "runs.params_json: \"" + key + "\" is not " + want);
}

}  // namespace

nlohmann::json to_json(const RunParams& p) {
  nlohmann::json j = {
      {"limit", p.limit ? nlohmann::json(*p.limit) : nlohmann::json(nullptr)},
      {"samples_from", p.samples_from ? nlohmann::json(*p.samples_from) : nlohmann::json(nullptr)},
      {"samples", p.samples},
      {"repair_rounds", p.repair_rounds}};
  if (p.dedup)
    j["dedup"] = {{"choice", p.dedup->choice},
                  {"threshold", p.dedup->threshold},
                  {"scheme", p.dedup->scheme},
                  {"left_out", p.dedup->left_out}};
  if (!p.require_targets.empty()) j["require_targets"] = p.require_targets;
  if (p.require_speedup > 0) j["require_speedup"] = p.require_speedup;
  return j;
}

Result<RunParams> run_params_from_json(const nlohmann::json& j) {
  if (!j.is_object()) return fail("parse", "runs.params_json is not a JSON object");
  RunParams p;
  for (const auto& [key, v] : j.items()) {
    if (key == "limit") {
      if (v.is_null()) continue;
      if (!v.is_number_integer()) return bad(key, "an integer or null");
      p.limit = v.get<std::int64_t>();
    } else if (key == "samples_from") {
      if (v.is_null()) continue;
      if (!v.is_string()) return bad(key, "a string or null");
      p.samples_from = v.get<std::string>();
    } else if (key == "samples") {
      if (!v.is_number_integer()) return bad(key, "an integer");
      p.samples = v.get<std::int64_t>();
    } else if (key == "repair_rounds") {
      if (!v.is_number_integer()) return bad(key, "an integer");
      p.repair_rounds = v.get<int>();
    } else if (key == "dedup") {
      if (v.is_null()) continue;
      if (!v.is_object()) return bad(key, "an object or null");
      RunDedup d;
      for (const auto& [k, x] : v.items()) {
        std::string name = "dedup." + k;
        if (k == "choice" || k == "scheme") {
          if (!x.is_string()) return bad(name, "a string");
          (k == "choice" ? d.choice : d.scheme) = x.get<std::string>();
        } else if (k == "threshold") {
          if (!x.is_number()) return bad(name, "a number");
          d.threshold = x.get<double>();
        } else if (k == "left_out") {
          if (!x.is_number_integer()) return bad(name, "an integer");
          d.left_out = x.get<std::int64_t>();
        } else {
          return fail("parse", "runs.params_json: unknown key \"" + name + "\"");
        }
      }
      p.dedup = std::move(d);
    } else if (key == "require_targets") {
      if (!v.is_array()) return bad(key, "a list of strings");
      for (const auto& t : v) {
        if (!t.is_string()) return bad(key, "a list of strings");
        p.require_targets.push_back(t.get<std::string>());
      }
    } else if (key == "require_speedup") {
      if (!v.is_number() || v.get<double>() < 0) return bad(key, "a number of at least 0");
      p.require_speedup = v.get<double>();
    } else {
      return fail("parse", "runs.params_json: unknown key \"" + key + "\"");
    }
  }
  return p;
}

Result<RunParams> parse_run_params(std::string_view params_json) {
  auto j = nlohmann::json::parse(params_json, nullptr, false);
  if (j.is_discarded()) return fail("parse", "runs.params_json is not valid JSON");
  return run_params_from_json(j);
}

}  // namespace kforge::store
