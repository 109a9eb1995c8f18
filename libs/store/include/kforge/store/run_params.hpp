#pragma once
// A run's parameters (the runs table's params_json, fixed when the run is created): one type,
// written by `kforge run create` and read by the scheduler, the verify stage and the reports.
//
// The text is a JSON object: {"limit", "samples_from", "samples", "repair_rounds"} and, when
// set, "dedup" ({"choice", "threshold", "scheme", "left_out"}), "require_targets" and
// "require_speedup". Reading
// takes an absent key as its default (runs created before the key existed, or by tests with
// "{}"); a key of the wrong type or one it does not know is an error naming the key.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::store {

// `kforge run create --dedup`: one sample per near-duplicate group.
struct RunDedup {
  std::string choice;  // first | largest
  double threshold = 0;
  std::string scheme;         // the signature scheme the groups were computed with
  std::int64_t left_out = 0;  // samples the dedup left out
  bool operator==(const RunDedup&) const = default;
};

struct RunParams {
  std::optional<std::int64_t> limit;        // --limit; absent: no limit
  std::optional<std::string> samples_from;  // --samples-from FILE
  std::int64_t samples = 0;                 // the jobs it was created with
  int repair_rounds = 0;                    // repair rounds after a verdict that is not verified
  std::optional<RunDedup> dedup;            // absent: every sample
  // The cross-compile targets the run requires (`--require-target`): a sample that does not
  // compile for one is not verified.
  std::vector<std::string> require_targets;
  // The speedup over the PyTorch reference the run requires (`--require-speedup X`): a passing
  // sample whose speed label has no pass_perf at that threshold is flagged `slow` (not
  // verified). 0: none.
  double require_speedup = 0;
  bool operator==(const RunParams&) const = default;
};

nlohmann::json to_json(const RunParams& p);
// Errors: "parse", naming the key (or the text when it is not a JSON object).
Result<RunParams> run_params_from_json(const nlohmann::json& j);
Result<RunParams> parse_run_params(std::string_view params_json);

}  // namespace kforge::store
