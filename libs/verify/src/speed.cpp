#include "kforge/verify/speed.hpp"

#include <fmt/format.h>

namespace kforge::verify {

namespace {
std::optional<double> num(const nlohmann::json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return std::nullopt;
  return o[key].get<double>();
}
}  // namespace

std::optional<SpeedLabel> speed_label(const nlohmann::json& report) {
  if (!report.is_object() || !report.contains("speed") || !report["speed"].is_object())
    return std::nullopt;
  const auto& s = report["speed"];
  SpeedLabel l;
  l.timed = s.value("timed", false);
  if (s.contains("reason") && s["reason"].is_string()) l.reason = s["reason"].get<std::string>();
  if (s.contains("environment") && s["environment"].is_object()) {
    const auto& env = s["environment"];
    if (env.contains("device") && env["device"].is_string()) l.device = env["device"];
  }
  if (s.contains("kernels") && s["kernels"].is_array() && !s["kernels"].empty()) {
    double sum = 0;
    bool any = false;
    for (const auto& k : s["kernels"])
      if (auto t = num(k, "time_us")) sum += *t, any = true;
    if (any) l.kernel_us = sum;
    l.gbps = num(s["kernels"][0], "gbps");
    l.fraction_of_peak = num(s["kernels"][0], "fraction_of_peak");
  }
  if (s.contains("reference") && s["reference"].is_object()) {
    const auto& r = s["reference"];
    l.speedup = num(r, "speedup");
    l.reference_us = num(r, "reference_us");
    if (r.contains("ci") && r["ci"].is_array() && r["ci"].size() == 2 && r["ci"][0].is_number() &&
        r["ci"][1].is_number()) {
      l.speedup_lo = r["ci"][0].get<double>();
      l.speedup_hi = r["ci"][1].get<double>();
    }
    if (!l.kernel_us) l.kernel_us = num(r, "time_us");
    if (!l.gbps) l.gbps = num(r, "gbps");
    if (!l.fraction_of_peak) l.fraction_of_peak = num(r, "fraction_of_peak");
  }
  l.min_speedup = num(s, "min_speedup");
  if (s.contains("pass_perf") && s["pass_perf"].is_boolean())
    l.pass_perf = s["pass_perf"].get<bool>();
  if (s.contains("flags") && s["flags"].is_array())
    for (const auto& f : s["flags"])
      if (f.is_string()) l.flags.push_back(f.get<std::string>());
  if (s.contains("exclusive_ms") && s["exclusive_ms"].is_number_integer())
    l.exclusive_ms = s["exclusive_ms"].get<std::int64_t>();
  return l;
}

nlohmann::json SpeedLabel::to_json() const {
  auto opt = [](const std::optional<double>& v) -> nlohmann::json {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  nlohmann::json j = {
      {"timed", timed},
      {"kernel_us", opt(kernel_us)},
      {"gbps", opt(gbps)},
      {"fraction_of_peak", opt(fraction_of_peak)},
      {"speedup", opt(speedup)},
      {"speedup_ci", speedup_lo && speedup_hi ? nlohmann::json::array({*speedup_lo, *speedup_hi})
                                              : nlohmann::json(nullptr)},
      {"pass_perf", pass_perf ? nlohmann::json(*pass_perf) : nullptr},
      {"flags", flags}};
  if (!device.empty()) j["device"] = device;
  if (!reason.empty()) j["reason"] = reason;
  if (min_speedup) j["min_speedup"] = *min_speedup;
  return j;
}

std::string describe_speed(const SpeedLabel& l, double required) {
  if (!l.timed) return "not timed" + (l.reason.empty() ? std::string() : ": " + l.reason);
  std::string out;
  if (l.speedup && l.speedup_lo && l.speedup_hi)
    out = fmt::format("speedup {:.2f}x (95% interval {:.2f}-{:.2f}) over the PyTorch reference",
                      *l.speedup, *l.speedup_lo, *l.speedup_hi);
  else
    out = "no PyTorch reference to compare with (the answer declares no KFORGE_SPEED)";
  if (required > 0) out += fmt::format(", required above {:.2f}x", required);
  if (l.kernel_us) out += fmt::format("; kernel {:.1f} us", *l.kernel_us);
  if (l.fraction_of_peak)
    out += fmt::format(", {:.0f}% of peak bandwidth", *l.fraction_of_peak * 100);
  if (!l.flags.empty()) {
    out += "; flagged";
    for (const auto& f : l.flags) out += " " + f;
  }
  return out;
}

bool require_speedup(VerifyResult& r, double min_speedup) {
  if (min_speedup <= 0 || r.verdict != Verdict::passed) return false;
  // Judged here from the interval, not from the harness's pass_perf: the run's threshold holds
  // whatever min_speedup the verifier that timed it was configured with (a Slurm node's own).
  auto l = speed_label(r.report);
  if (l && l->timed && l->speedup_lo && *l->speedup_lo > min_speedup && l->flags.empty())
    return false;
  r.flags.push_back(kSlow);
  SpeedLabel none;
  none.reason = "timing is off (verifier.timing.enabled)";
  std::string why = describe_speed(l ? *l : none, min_speedup);
  r.detail += (r.detail.empty() ? "" : "; ") + std::string("slow: ") + why;
  return true;
}

}  // namespace kforge::verify
