#pragma once
// The speed label (verifier.timing; docs/VERIFIER.md, "The speed label"): what the harness
// measured of a passing sample (kforge_harness/timing.py puts it in report["speed"]), read back
// into one summary, the flag a run that requires a speedup puts on a slow sample, and the row
// stored with the verification (migrations/0020_speed.sql).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/enum_names.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

// Flag on a passing sample of a run created with --require-speedup X whose label has no
// pass_perf (its speedup interval's lower bound is not above X, it has no reference, it was not
// timed, or its figures are flagged): not verified; repair rounds carry the label as evidence.
inline constexpr const char* kSlow = store::flag_name(Flag::slow);

// The speed label's own flags (report "speed"."flags", verification_speed.flags_json): any of
// them keeps pass_perf false. The names are kforge_harness/vocabulary/speed_flags.txt's, in its
// order, and SQL's speed_flag_names (migrations/0032_speed_flags.sql); tests/verify/
// timing_test.cpp holds the three together.
enum class SpeedFlag {
  perf_suspect,
  not_reproduced,
  unseen_work,
  calls_reference,
  library_work,      // the sample's kernels took less than min_kernel_share of the timed call
  kernel_not_timed,  // the timed call launched none of the sample's kernels
  not_timed,         // no figures: timing failed, inputs too large, GPU busy (the reason says)
};
inline constexpr EnumName<SpeedFlag> kSpeedFlagNames[] = {
    {SpeedFlag::perf_suspect, "perf_suspect"}, {SpeedFlag::not_reproduced, "not_reproduced"},
    {SpeedFlag::unseen_work, "unseen_work"},   {SpeedFlag::calls_reference, "calls_reference"},
    {SpeedFlag::library_work, "library_work"}, {SpeedFlag::kernel_not_timed, "kernel_not_timed"},
    {SpeedFlag::not_timed, "not_timed"}};
constexpr std::string_view to_string(SpeedFlag f) {
  return name_of(kSpeedFlagNames, f);
}

// SpeedLabel is declared with the report it is read from (harness_report.hpp).

// The label of a result (its HarnessReport's), or nullopt when the sample was not timed at all
// (timing off, not passing). Fields the harness did not give stay empty.
std::optional<SpeedLabel> speed_label(const VerifyResult& r);
// The same from a stored report (VerifyResult::report), parsed through parse_stored_report:
// nullopt too when it does not parse.
std::optional<SpeedLabel> speed_label(const nlohmann::json& stored_report);

// For a run that requires a speedup: a passing result whose label's interval does not lie above
// min_speedup (or that has no reference, was not timed, or is flagged) gets kSlow and a detail
// that says what the label found. Returns whether it was flagged.
bool require_speedup(VerifyResult& r, double min_speedup);

// One line for a repair prompt or a log: "speedup 0.82x (95% interval 0.79-0.85) over the
// PyTorch reference, below the required 1.5x; kernel 41.2 us, 61% of peak bandwidth", and for
// each flag what it found (library_work: the kernels' share of the call and what ran instead;
// not_timed: why).
std::string describe_speed(const SpeedLabel& l, double required);

}  // namespace kforge::verify
