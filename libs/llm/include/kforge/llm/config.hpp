#pragma once
// The `llm` section of the configuration (config/kforge.yaml documents every key).
//
// Reloadable on SIGHUP: Client::reload_limits() takes the limit, retry and timeout fields of a
// freshly read LlmConfig; the endpoint fields (provider, base_url, model, key) need a restart.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/config.hpp"

namespace kforge::llm {

enum class Provider { openai, azure };
enum class ResponseFormat { none, json_object, json_schema };
// interactive: one HTTP request per call. batch: calls are grouped into batch files sent through
// the provider's Files and Batch API (docs/OPERATIONS.md, "Batch mode"), at its batch price.
enum class Mode { interactive, batch };
// Where a batch line that failed or expired goes: into the next batch, or to the interactive
// endpoint (llm.batch_fallback).
enum class BatchFallback { next_batch, interactive };

// USD per million tokens. Cached prompt tokens and reasoning tokens are priced apart when their
// rate is given (absent: the prompt and the completion rate).
struct Price {
  double prompt_per_mtok = 0;
  double completion_per_mtok = 0;
  std::optional<double> cached_prompt_per_mtok;
  std::optional<double> reasoning_per_mtok;
  // The share of the price a batch answer costs (the providers' batch discount).
  double batch_multiplier = 0.5;
};

// llm.batch: how batch mode groups and follows batches. The limits default to OpenAI's
// published ones (50,000 requests and 200 MB per batch input file).
struct BatchConfig {
  // Sent with each batch; one of accepted_windows (OpenAI and Azure accept only "24h").
  std::string completion_window = "24h";
  // The completion windows the provider accepts (llm.batch.accepted_windows; OpenAI's and
  // Azure's published value by default).
  std::vector<std::string> accepted_windows = {"24h"};
  // kforge's own deadline (llm.batch.deadline): a batch still running this long after its
  // creation is cancelled and its unfinished lines go into the next batch.
  std::string deadline = "24h";
  std::int64_t deadline_ms = 24 * 3'600'000;
  int max_lines = 50'000;
  std::int64_t max_bytes = 200'000'000;
  // A ready request waits at most this long for others before its batch is sent.
  std::int64_t collect_ms = 60'000;
  std::int64_t poll_ms = 60'000;  // how often a batch in flight is polled
  // Batches a request may go through (failed or expired each time) before its error is
  // delivered; with batch_fallback interactive it goes to the interactive endpoint instead.
  int max_attempts = 3;
  // Keep the input, output and error files at the provider once their lines are recorded
  // (llm.batch.keep_files); by default they are deleted.
  bool keep_files = false;
  // The answers read from an output file and recorded in one transaction: the runner holds
  // at most this many at once, whatever the batch's size (llm.batch.lines_in_memory).
  int lines_in_memory = 1'000;
};

// The cost in USD of one call's usage. Reasoning tokens are part of completion_tokens and cached
// tokens part of prompt_tokens, as providers report them.
double call_cost(const Price& p, std::int64_t prompt_tokens, std::int64_t completion_tokens,
                 std::int64_t cached_prompt_tokens, std::int64_t reasoning_tokens);

struct LlmConfig {
  // --- endpoint (restart to change) ---
  Provider provider = Provider::openai;
  // OpenAI-compatible: requests go to {base_url}/chat/completions. Azure: base_url is the
  // resource endpoint (https://NAME.openai.azure.com) and requests go to
  // {base_url}/openai/deployments/{deployment}/chat/completions?api-version={api_version}.
  std::string base_url = "https://api.openai.com/v1";
  std::string model = "gpt-4o-mini";
  std::string azure_deployment;  // empty: the model name
  std::string azure_api_version = "2024-06-01";
  // The NAME of the environment variable holding the key (never the key itself). Empty, or a
  // variable that is unset: no authorization header (local servers).
  std::string api_key_env = "OPENAI_API_KEY";
  std::map<std::string, std::string> extra_headers;

  // --- sampling (part of a request's identity) ---
  std::optional<double> temperature = 0.2;
  std::optional<double> top_p;
  std::optional<int> max_tokens = 4096;
  // A cut answer (finish_reason "length", or nothing after the reasoning) is asked again with
  // max_tokens doubled, up to this; 0: never (the cut answer fails as "truncated").
  int truncated_max_tokens = 32'768;
  std::optional<std::int64_t> seed;
  ResponseFormat response_format = ResponseFormat::json_object;

  // --- mode (restart to change) ---
  Mode mode = Mode::interactive;
  std::map<std::string, Mode> modes;  // per model, over `mode`
  BatchFallback batch_fallback = BatchFallback::next_batch;
  BatchConfig batch;
  // The mode of a model's calls.
  Mode mode_of(const std::string& model_name) const {
    auto it = modes.find(model_name);
    return it == modes.end() ? mode : it->second;
  }

  // --- limits (reloadable) ---
  int max_in_flight = 16;  // hard cap on concurrent requests
  int min_in_flight = 1;   // adaptive concurrency never goes below this
  // Slow start: a new client, and one after a halt (401, 403, unknown model), starts with this
  // many in flight and doubles per round of successes up to max_in_flight.
  int initial_in_flight = 2;
  // Pacing learned from the server: requests are spaced evenly at the rate it accepts (cut on
  // 429 to the rate accepted over the last second x pace_decrease, grown after each quiet
  // second), and x-ratelimit-* headers give a ceiling.
  bool pace = true;
  double pace_decrease = 0.9;
  // A Retry-After up to this long delays only the refused request (the pacing adapts); a
  // longer one pauses every request until then.
  std::int64_t retry_after_pause_ms = 5'000;
  double requests_per_minute = 0;   // 0: unlimited
  double tokens_per_minute = 0;     // 0: unlimited (prompt estimate + max_tokens until usage known)
  bool adaptive = true;             // cut on 429/503/latency, grow back additively
  double latency_factor = 3.0;      // "far above baseline": latency > factor x baseline EWMA
  double decrease_factor = 0.5;     // multiplicative cut
  int adaptive_cooldown_ms = 2000;  // at most one cut per cooldown

  // --- retries (reloadable) ---
  int max_attempts = 6;                      // including the first
  std::int64_t total_deadline_ms = 900'000;  // no retry starts later than this after the first
  std::int64_t backoff_base_ms = 1000;       // full jitter: uniform(0, min(max, base * 2^(n-1)))
  std::int64_t backoff_max_ms = 60'000;
  std::int64_t retry_after_cap_ms = 900'000;  // Retry-After above this fails as transient

  // --- timeouts (reloadable) ---
  std::int64_t connect_timeout_ms = 10'000;
  std::int64_t request_timeout_ms = 300'000;  // whole exchange, per attempt

  // --- size guard ---
  // A request whose estimated prompt (characters / 4) exceeds this fails with "too_large"
  // before anything is sent. 0: no limit.
  std::int64_t max_prompt_tokens = 200'000;

  // --- audit and replay ---
  bool replay = true;  // answer a request whose hash has a good stored response from the store
  std::map<std::string, Price> prices;  // model -> price; absent: cost 0
};

void read_config(ConfigNode n, LlmConfig& out);

const char* to_string(Provider p);
const char* to_string(ResponseFormat f);
const char* to_string(Mode m);

}  // namespace kforge::llm
