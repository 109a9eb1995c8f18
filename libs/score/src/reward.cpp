#include "kforge/score/reward.hpp"

#include <algorithm>
#include <cmath>

namespace kforge::score {

nlohmann::json Components::to_json() const {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"judged", judged},
          {"verdict", verdict.empty() ? nlohmann::json() : nlohmann::json(verdict)},
          {"flags", flags},
          {"ran", ran},
          {"correct", correct},
          {"verified", verified},
          {"speedup", opt(speedup)},
          {"speedup_lo", opt(speedup_lo)},
          {"speedup_hi", opt(speedup_hi)},
          {"pass_perf", opt(pass_perf)},
          {"kernel_share", opt(kernel_share)}};
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"triton_eval", "fast_p", "coverage", "binary"};
  return names;
}

Status check_preset(const std::string& name, const nlohmann::json& params) {
  const auto& names = preset_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    return fail("usage",
                "reward: '" + name + "' is not a preset (triton_eval, fast_p, coverage, binary)");
  if (!params.is_null() && !params.is_object())
    return fail("usage", "reward_params: must be an object");
  if (params.is_object())
    for (const auto& [k, v] : params.items()) {
      if (name != "fast_p" || k != "p")
        return fail("usage", "reward_params." + k + ": not a parameter of preset " + name +
                                 (name == "fast_p" ? " (it takes p)" : " (it takes none)"));
      if (!v.is_number() || v.get<double>() < 0)
        return fail("usage", "reward_params.p: must be a number, 0 or above");
    }
  return {};
}

namespace {

// ln(speedup) clamped to [lo, hi]; 0 when there is no speedup.
double log_speedup(const Components& c, double lo, double hi) {
  if (!c.speedup || *c.speedup <= 0) return 0;
  return std::clamp(std::log(*c.speedup), lo, hi);
}

// -0.2 when the code did not run to an answer (an exception, a crash, a timeout, invalid), 0
// when it ran and was wrong or flagged; nullopt when verified (the preset decides).
std::optional<double> not_verified(const Components& c) {
  if (c.verified) return std::nullopt;
  return c.ran ? 0.0 : -0.2;
}

}  // namespace

std::optional<double> reward(const std::string& preset, const nlohmann::json& params,
                             const Components& c) {
  if (!c.judged) return std::nullopt;
  if (preset == "binary") return c.verified ? 1.0 : 0.0;
  if (preset == "fast_p") {
    const double p = params.is_object() ? params.value("p", 1.0) : 1.0;
    if (!c.verified) return 0.0;
    if (p <= 0) return 1.0;
    auto s = c.speedup_lo ? c.speedup_lo : c.speedup;
    return s && *s > p ? 1.0 : 0.0;
  }
  if (auto r = not_verified(c)) return r;
  if (preset == "coverage") return c.kernel_share.value_or(1.0) * (1.0 + log_speedup(c, 0.0, 3.0));
  return 1.0 + log_speedup(c, -0.5, 3.0);  // triton_eval
}

}  // namespace kforge::score
