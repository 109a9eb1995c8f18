#include "kforge/verify/speed.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kforge::verify {

std::optional<SpeedLabel> speed_label(const VerifyResult& r) {
  return r.harness ? r.harness->speed : std::nullopt;
}

std::optional<SpeedLabel> speed_label(const nlohmann::json& stored_report) {
  auto h = parse_stored_report(stored_report);
  return h.ok() && *h ? (*h)->speed : std::nullopt;
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
  if (kernel_share) j["kernel_share"] = *kernel_share;
  if (launches_per_call) j["launches_per_call"] = *launches_per_call;
  if (memory_per_input_byte) j["memory_per_input_byte"] = *memory_per_input_byte;
  return j;
}

namespace {

bool has(const SpeedLabel& l, SpeedFlag f) {
  return std::find(l.flags.begin(), l.flags.end(), to_string(f)) != l.flags.end();
}

// The kernels a call ran instead of the sample's, where the profiler saw them.
std::string ran_instead_words(const SpeedLabel& l) {
  if (l.ran_instead.empty()) return "";
  std::string out = " (what ran on the GPU instead, the longest first:";
  for (std::size_t i = 0; i < l.ran_instead.size(); ++i)
    out += fmt::format("{} {} {:.1f} us", i ? "," : "", l.ran_instead[i].first,
                       l.ran_instead[i].second);
  return out + ")";
}

// What library_work and kernel_not_timed found, in words a repair round can act on.
std::string flag_words(const SpeedLabel& l) {
  std::string out;
  if (has(l, SpeedFlag::kernel_not_timed))
    out += fmt::format(
        ". kernel_not_timed: the wrapper called on the inputs of inputs() launched none of the "
        "answer's Triton kernels ({} launches a call); the time measured was other code's "
        "(PyTorch or another path the wrapper takes at that size), so the kernel was never "
        "timed{}",
        l.launches_per_call.value_or(0), ran_instead_words(l));
  if (has(l, SpeedFlag::library_work) && l.kernel_share)
    out += fmt::format(
        ". library_work: the answer's Triton kernels took {:.0f}% of the wrapper call's GPU time "
        "(at least {:.0f}% required); the other {:.0f}% ran outside them (PyTorch or library "
        "calls in the wrapper, e.g. a matmul left to cuBLAS){}: the kernel must do the work",
        *l.kernel_share * 100, l.min_kernel_share.value_or(0.5) * 100, (1 - *l.kernel_share) * 100,
        ran_instead_words(l));
  return out;
}

}  // namespace

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
  return out + flag_words(l);
}

bool require_speedup(VerifyResult& r, double min_speedup) {
  if (min_speedup <= 0 || r.verdict != Verdict::passed) return false;
  // Judged here from the interval, not from the harness's pass_perf: the run's threshold holds
  // whatever min_speedup the verifier that timed it was configured with (a Slurm node's own).
  auto l = speed_label(r);
  if (l && l->timed && l->speedup_lo && *l->speedup_lo > min_speedup && l->flags.empty())
    return false;
  r.flags.emplace_back(kSlow);
  SpeedLabel none;
  none.reason = "timing is off for its device (verifier.timing.enabled)";
  std::string why = describe_speed(l ? *l : none, min_speedup);
  r.detail += (r.detail.empty() ? "" : "; ") + std::string("slow: ") + why;
  return true;
}

}  // namespace kforge::verify
