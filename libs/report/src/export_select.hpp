#pragma once
// The export's selection, shared by every row shape and output: one sample of a run at a time,
// in key order, that passes the filters (verdict, compiles_for, decontamination), as the default
// record (export.hpp) plus what the training rows need.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/report/export.hpp"
#include "kforge/report/outcomes.hpp"

namespace kforge::report::detail {

using ojson = nlohmann::ordered_json;

struct Selected {
  std::int64_t sample_id = 0;
  std::string key;
  std::string code;        // the sample's kernel code
  ojson rec;               // the default record: the original fields, then the added ones
  std::string code_stage;  // the stage the exported code comes from: generate or repair
  // The latest verification's report: the kernels its test launched ({name: count}) and its
  // test functions (null when none), and its speed label (JSON text) when it has one.
  ojson launches;
  ojson tests;
  std::optional<std::string> speed;
  // The smallest key of its near-duplicate group (the last corpus dedup); nullopt: no group.
  std::optional<std::string> group;
};

using Emit = std::function<Status(Selected&)>;

// Runs the run's export query in one read transaction and calls emit for each selected sample.
// check_conflicts: fail when an original record has a field the default record adds.
Status select_rows(store::Db& db, const RunInfo& run, const ExportOptions& opts,
                   const std::string& destination, bool check_conflicts, ExportSummary& sum,
                   const Emit& emit);

}  // namespace kforge::report::detail
