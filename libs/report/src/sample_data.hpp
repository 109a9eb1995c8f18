#pragma once
// Everything stored about one sample of a run: its job, every stage attempt (requests, answers,
// reasoning) and every verification, oldest first. Read by `kforge debug` (debug.cpp) and the
// viewer's sample page (viewer_sample.cpp). Private to the report library.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/report/outcomes.hpp"
#include "kforge/store/db.hpp"
#include "kforge/store/states.hpp"

namespace kforge::report {

struct StageAttempt {
  std::string stage;
  std::int64_t attempt = 0;
  store::OutputStatus status = store::OutputStatus::ok;
  std::string prompt_version, prompt_sha256;
  std::optional<std::string> request_sha256, request_json, response_raw, parsed_json;
  std::optional<std::string> error_kind, error;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
  double cost_usd = 0;
  std::int64_t latency_ms = 0, created_ms = 0;
  int repair_round = 0;
  std::optional<std::string> reasoning;  // the model's reasoning, when it gave one
  std::int64_t id = 0;                   // stage_outputs.id
};

struct VerifyAttempt {
  std::int64_t attempt = 0;
  std::string verdict;
  std::string flags_json;
  std::optional<std::string> detail, result_json, script, stderr_tail, device;
  std::int64_t duration_ms = 0, created_ms = 0;
  int repair_round = 0;
  std::int64_t id = 0;  // verifications.id
  // What debug and the viewer show of the report, from the columns verify's store writes
  // (migration 0025): the output mutants' score and the names that survived or did not apply
  // (unset: no mutant ran), the kernel battery's score and survivors (unset: it did not run), the
  // coverage facts, and where the first failing test failed (its section and line; unset: none
  // failed or the report did not say).
  std::optional<std::int64_t> mutants_killed, mutants_applicable;
  std::optional<std::string> mutants_survived_json, mutants_not_applicable_json;
  std::optional<std::int64_t> kernel_killed, kernel_applicable, kernel_equivalent;
  std::optional<std::string> kernel_survived_json, coverage_json;
  std::optional<std::string> failing_section;
  std::optional<std::int64_t> failing_line;
  // The speed label's flags (a JSON list) and why it was not timed; unset: no label.
  std::optional<std::string> speed_flags_json, speed_reason;
};

struct SampleData {
  std::int64_t sample_id = 0;
  std::string key, code, record_json;
  store::JobState state = store::JobState::queued;
  std::string stage;
  std::int64_t attempts = 0;
  std::optional<std::string> error_kind, error;
  std::vector<StageAttempt> outputs;
  std::vector<VerifyAttempt> verifications;
  std::int64_t shown_code = 0;  // the id of the answer whose code the sample shows; 0: none
};

// A JSON list column's items (VerifyAttempt's *_json lists); unset or not a JSON list: none.
nlohmann::ordered_json list_items(const std::optional<std::string>& json_list);

// The sample with this key in the run. Errors: "not_found" (the sample is not in the run, or
// there is no such sample).
Result<SampleData> load_sample(store::Db& db, const RunInfo& run, const std::string& key);

}  // namespace kforge::report
