#pragma once
// Reward presets: a number for a trainer from what the verifier found (docs/OPERATIONS.md
// "Reward presets" gives each formula). The components are always returned beside the number,
// so a trainer can compute its own.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::score {

// What a reward is computed from. judged false: the item has no verdict that says anything
// about it (a deadline passed, the verifier's environment or an infrastructure fault): every
// preset's reward is then null, never 0.
struct Components {
  bool judged = false;
  std::string verdict;             // passed, failed, error, timeout, crashed, invalid, skipped
  std::vector<std::string> flags;  // quality flags (a passing sample with any is not verified)
  bool ran = false;                // the test ran to an answer on correctness (passed or failed)
  bool correct = false;            // passed
  bool verified = false;           // passed with no flag
  std::optional<double> speedup, speedup_lo, speedup_hi;  // over the PyTorch reference
  std::optional<bool> pass_perf;
  // The share of the timed implementation's time spent in the sample's own kernels (the timed
  // kernels' sum over the wrapper's time, at most 1): how much of the work the Triton code does.
  std::optional<double> kernel_share;
  nlohmann::json to_json() const;
};

// The presets by name: triton_eval, fast_p, coverage, binary.
const std::vector<std::string>& preset_names();

// Checks a preset name and its parameters ({"p": X} for fast_p). Error "usage" naming the field.
Status check_preset(const std::string& name, const nlohmann::json& params);

// The reward, or nullopt (JSON null) when the item was not judged.
std::optional<double> reward(const std::string& preset, const nlohmann::json& params,
                             const Components& c);

}  // namespace kforge::score
