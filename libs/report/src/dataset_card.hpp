#pragma once
// The dataset card (README.md) of an export folder: YAML front matter as the Hugging Face Hub
// reads it, then what the run is, in words.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/report/dataset.hpp"
#include "kforge/report/outcomes.hpp"

namespace kforge::report::detail {

// The line that marks a README.md as kforge's, so a later export may replace its folder.
inline constexpr const char* kCardMarker =
    "<!-- written by kforge export: exporting to this folder again replaces it -->";

struct CardInput {
  const RunInfo* run = nullptr;
  const ExportOptions* opts = nullptr;
  const FolderSummary* sum = nullptr;
  std::optional<double> dedup_threshold;  // the last corpus dedup's; nullopt: never run
  // The eval sets of the decontamination (file, kernels) and its threshold.
  std::vector<std::pair<std::string, std::int64_t>> eval_sets;
  // The sources' licenses, from the records' license field: value -> samples.
  std::map<std::string, std::int64_t> licenses;
  std::int64_t without_license = 0;
  // What the exported rows cost (training shapes), and the whole run.
  double rows_cost_usd = 0;
  double run_cost_usd = 0;
  std::int64_t run_prompt_tokens = 0, run_completion_tokens = 0, run_outputs = 0;
};

// The features of a row of `shape` in the Hub's dataset_info form; an empty list for records
// (their fields are the corpus's own).
nlohmann::ordered_json features(RowShape shape, bool reasoning_field);

std::string render_card(const CardInput& in);

}  // namespace kforge::report::detail
