#pragma once
// A POST /v1/score request, read and checked (docs/OPERATIONS.md "Scoring for RL"):
//   {"items": [{"id", "code", "kernel_wrapper", "unitest_code", "key"}], "deadline_s",
//    "checks": {"require_speedup", "require_targets"}, "reward", "reward_params", "tag", "wait"}
// and the content key of an item: what its verdict depends on.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/score/config.hpp"
#include "kforge/store/run_params.hpp"

namespace kforge::score {

struct Item {
  std::string id;    // the client's; default: its index
  std::string code;  // the kernel source; may be empty when key names an imported sample
  std::string key;   // an imported sample's key ("": none)
  std::string kernel_wrapper;
  std::string unitest_code;
  // The prompt that asked for it: a string (one user message) or chat messages; stored with the
  // rollout for export's chat rows, not part of the content key. Null: none.
  nlohmann::json prompt;
};

struct Request {
  std::vector<Item> items;
  double deadline_s = 0;
  store::RunParams checks;  // repair_rounds 0 always
  std::string reward = "triton_eval";
  nlohmann::json reward_params = nlohmann::json::object();
  std::string tag;
  bool wait = true;
};

// Errors (kind "usage") name the field: "items[3].unitest_code: must be a string".
Result<Request> parse_request(const nlohmann::json& body, const ScoreConfig& config);

// What else decides a verdict: the harness's version and the GPU model (gpu_model()).
struct Fingerprint {
  std::string harness;  // SHA-256 of the harness's files
  std::string gpu;      // e.g. "NVIDIA H200" (several: joined by ", "); "cpu" without one
};

// SHA-256 over the item's code (or key), wrapper, test, the checks and the fingerprint.
std::string content_key(const Item& item, const store::RunParams& checks, const Fingerprint& f);

// The host's GPU models, from /proc/driver/nvidia/gpus/*/information; "cpu" when none.
std::string gpu_model();
// SHA-256 over the files of the harness directory beside the entry script `harness_script`.
std::string harness_fingerprint(const std::string& harness_script);

}  // namespace kforge::score
