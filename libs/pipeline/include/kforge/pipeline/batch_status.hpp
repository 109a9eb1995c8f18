#pragma once
// A run's batches in flight (llm.mode batch), for kforge status: read from the llm_batches
// and llm_batch_lines tables the LLM client's batch runner keeps (migration 0013).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct BatchInFlight {
  std::string key;              // kforge's name (metadata.kforge_batch)
  std::string state;            // uploading, uploaded, submitted
  std::string provider_status;  // validating, in_progress, finalizing, ... ("" before creation)
  std::string batch_id;         // the provider's id ("" before creation)
  std::int64_t lines = 0;       // requests in the batch
  std::int64_t run_lines = 0;   // of them, this run's
  std::int64_t completed = 0;   // the provider's request_counts
  std::int64_t failed = 0;
  std::int64_t poll_errors = 0;
  std::int64_t age_s = 0;  // since it was recorded
  std::string note;        // the last poll error or report ("" none)
};

Result<std::vector<BatchInFlight>> batches_in_flight(store::Db& db, const std::string& run_tag,
                                                     std::int64_t now_ms);
nlohmann::ordered_json to_json(const BatchInFlight& b);

}  // namespace kforge::pipeline
