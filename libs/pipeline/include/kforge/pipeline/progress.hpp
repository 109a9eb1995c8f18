#pragma once
// Progress of runs: jobs by state and stage, rate, ETA, tokens, cost, recent errors by kind.
// Read by `kforge status`, by the daemon's STATUS= line to systemd, and by /metrics.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/pipeline/jobs.hpp"
#include "kforge/store/db.hpp"

namespace kforge::pipeline {

struct ErrorKind {
  std::string kind;
  std::int64_t count = 0;
  std::int64_t last_ms = 0;
  std::string last_message;
};

struct RunProgress {
  RunRow run;
  std::int64_t total = 0;
  std::map<std::string, std::int64_t> by_state;                         // state -> jobs
  std::map<std::string, std::map<std::string, std::int64_t>> by_stage;  // stage -> state -> jobs
  std::map<std::string, std::map<std::string, std::int64_t>> outputs;   // stage -> status -> n
  std::int64_t past_llm = 0;   // jobs whose LLM stages are over (to verify, verified, ended)
  std::int64_t remaining = 0;  // queued or leased
  double per_minute = 0;       // jobs leaving the LLM stages: the last 100 (<= 10 min), to now
  std::optional<std::int64_t> eta_s;
  std::int64_t prompt_tokens = 0;
  std::int64_t completion_tokens = 0;
  std::int64_t reasoning_tokens = 0;      // of the stage outputs (part of completion_tokens)
  std::int64_t cached_prompt_tokens = 0;  // of the stage outputs (part of prompt_tokens)
  std::int64_t with_reasoning = 0;        // stage outputs that came with reasoning
  // Answers read leniently, by what was mended ("raw_newlines", "python_literal", ...).
  std::map<std::string, std::int64_t> mended;
  // What the provider answered (its llm_calls; stage outputs for runs without any): every
  // network call, including unusable answers.
  double cost_usd = 0;
  // Answers replayed from the store (after a restart) instead of asked again: what they cost
  // when first asked, paid once.
  std::int64_t replayed_calls = 0;
  double saved_usd = 0;
  // A provider-requested pause that has not ended ("" / 0 when none).
  std::int64_t wait_until_ms = 0;
  std::string wait_reason;
  std::vector<ErrorKind> errors;  // the last 24 hours, most frequent first
  std::map<std::string, std::int64_t> verdicts;
  std::string refused;  // why the daemon refuses the run ("" if not): set by the caller

  double fraction() const {
    return total > 0 ? static_cast<double>(past_llm) / static_cast<double>(total) : 0;
  }
  nlohmann::ordered_json to_json() const;
};

// Every run (or the one tagged `tag`), oldest first. `last_stage(pipeline)` names the stage
// whose good answers end a job's LLM part (generate).
Result<std::vector<RunProgress>> collect_progress(store::Db& db, std::int64_t now_ms,
                                                  const std::optional<std::string>& tag = {});

// "[##########..........] 50%"
std::string progress_bar(double fraction, int width = 30);

}  // namespace kforge::pipeline
