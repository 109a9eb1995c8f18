#pragma once
// Client: an OpenAI-compatible Chat Completions client for long unattended runs.
//
// One event-loop thread drives every request through libcurl's multi interface over kept-alive
// connections. Around each request it applies, in order:
//   1. replay: a request whose identity (request_sha256) already has a good response in the
//      store's llm_calls table is answered from there, with no network call;
//   2. limits: in-flight cap (adaptive: slow start, cut multiplicatively on 503 or latency far
//      above its baseline, grown back additively), a pacer that spaces requests evenly at the
//      rate the server accepts (learned from 429s and x-ratelimit-* headers, see limits.hpp),
//      requests-per-minute and tokens-per-minute token buckets;
//   3. retries: 408, 409, 429, 5xx, connection failures, timeouts, truncated or malformed
//      bodies, with exponential backoff and full jitter, honouring Retry-After (seconds or
//      HTTP date) up to retry_after_cap_ms; one above retry_after_pause_ms pauses every request.
//      401, 403 and an unknown model are not retried and halt the queue (see "auth");
//   4. extraction: the JSON object is taken out of the reply (see json.hpp) and validated against
//      the request's schema;
//   5. audit: one llm_calls row per call (hash, status, attempts, latency, tokens, cost, raw
//      response), committed BEFORE the callback runs, so a crash after the callback never pays
//      for the same answer again.
// The API key is read once from the environment variable the config names; it is sent only in
// the request header and never logged, stored or put into an error message.
//
// Threads: the client runs two threads: the network loop (curl) and a store thread that does
// the replay lookups, writes the audit rows and runs the callbacks, so that neither SQLite (a
// database locked by another writer) nor a slow callback ever holds up the requests on the wire.
// submit(), call(), request_sha256(), request_json(), reload_limits(), stats() and shutdown()
// may be called from any thread. Callbacks run on the store thread, one at a time: they should
// be quick (they delay the other deliveries) and may call submit(), but not call() or
// shutdown()'s wait (shutdown() from a callback only requests the stop).

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/clock.hpp"
#include "kforge/core/config.hpp"
#include "kforge/core/result.hpp"
#include "kforge/llm/config.hpp"

namespace kforge::store {
class Db;
}  // namespace kforge::store

namespace kforge::llm {

struct ChatMessage {
  std::string role;  // "system" | "user" | "assistant"
  std::string content;
};

enum class Replay {
  allow,   // answer from the store when a good response with the same identity exists
  refresh  // always ask the server (the new response is stored too)
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  // When set, the reply must hold a JSON object validating against it (see json.hpp), returned
  // in ChatResponse::parsed; with response_format json_schema it is also sent to the server.
  std::optional<nlohmann::json> response_schema;
  std::string schema_name = "result";  // the json_schema's name sent to the server
  // Extract a JSON object from the reply even without a schema.
  bool expect_json = true;
  // Per-request overrides of the configured sampling (part of the identity when set).
  std::optional<double> temperature;
  std::optional<int> max_tokens;
  // Free text for logs and the audit row (llm_calls.tag), e.g. "run=v2 sample=k17
  // stage=analyze". Not part of the identity.
  std::string label;
  // The run (its tag) whose work this call is, stored with the call (llm_calls.run_tag: a run's
  // cost is the sum over its calls); empty for a call no run asked. Not part of the identity.
  std::string run;
  // Who asks, for the identity only (never sent): e.g. "job=17 stage=analyze attempt=2". Two
  // requests with equal bytes but different askers are different calls: a stored answer is
  // replayed only to the same asker (the same attempt of the same job after a crash), never to
  // a later attempt.
  std::string asker;
  // The pipeline's round for this request (the N-th repair of a sample): part of the identity
  // when > 0, not sent. Two rounds never share a stored answer, even with equal messages.
  int round = 0;
  Replay replay = Replay::allow;
  // The request's JSON body (what Client::request_json gives for it) is this text in the store
  // (store/texts.hpp: the caller put it there). In batch mode the client then holds no body from
  // submit on: the batch line is written from the store. 0: none (the client holds the body
  // until the batch runner has stored it).
  std::int64_t stored_body = 0;
  // The request's JSON body, when the caller has already built it with request_json(req) of the
  // same client (the scheduler builds it to hold for the stage output): submit takes it instead
  // of serializing the request again. Empty: submit builds it.
  std::string body;
};

struct ChatResponse {
  std::string request_sha256;  // the request's identity (same as Client::request_sha256)
  std::string model;           // as the server reported it
  std::string content;         // the assistant message's text (text parts joined), as given
  // The model's reasoning: the provider's reasoning field (reasoning_content, reasoning, or
  // thinking parts), then the <think> blocks of content; "" when none. Never searched for the
  // answer (json.hpp).
  std::string reasoning;
  nlohmann::json parsed;            // the extracted JSON object; null when not expected
  std::vector<std::string> mended;  // what the extraction mended (json.hpp); empty: strict
  std::string raw_body;             // the HTTP response body as received
  std::string finish_reason;        // "stop", ...
  int max_tokens = 0;               // the max_tokens the answer was asked with (0: none)
  int http_status = 0;
  int prompt_tokens = 0;
  int completion_tokens = 0;     // reasoning tokens included, as providers count them
  int reasoning_tokens = 0;      // usage.completion_tokens_details.reasoning_tokens
  int cached_prompt_tokens = 0;  // usage.prompt_tokens_details.cached_tokens
  double cost_usd = 0;           // from the price table; for a replay, the original call's cost
  std::int64_t latency_ms = 0;   // submit to completion, including queueing, waits and retries
  int attempts = 0;              // HTTP attempts made (0 for a replay)
  bool from_store = false;       // answered from the store, nothing sent
};

// Errors delivered for a request (Error::kind):
//   "http"        a non-retryable status (400, 409, 422, ...) or retries exhausted on a
//                 retryable one; message holds the provider's error message
//   "auth"        401 or 403 (or an invalid_api_key error code): the key or its rights; not
//                 retried, and every request waiting in the client fails with "halted"
//   "not_found"   404 or a model_not_found code: the model or deployment does not exist; not
//                 retried, halts like "auth"
//   "halted"      not sent (or not retried) because another request got "auth"/"not_found";
//                 the client starts slowly again afterwards (transient)
//   "too_large"   the prompt's estimated tokens exceed max_prompt_tokens; nothing was sent
//                 (permanent)
//   "rate_limit"  429s exhausted, or Retry-After beyond retry_after_cap_ms (transient)
//   "timeout"     the request timeout, on the last attempt (transient)
//   "connect"     cannot connect / connection reset, on the last attempt (transient)
//   "deadline"    total_deadline_ms passed before the next attempt could start (transient)
//   "protocol"    a 200 whose body is not a chat completion, on the last attempt (transient)
//   "truncated"   the reply was cut: finish_reason "length", or no answer left after the
//                 reasoning. The client asks once more with a larger max_tokens (doubled, up to
//                 llm.truncated_max_tokens) before giving up, so the same request body is never
//                 sent again; delivered only when the limit's answer was cut too (permanent)
//   "parse"       no JSON object (or none validating against the schema) in the reply; the
//                 message says why (permanent for this response; a new call may differ)
//   "cancelled"   the client shut down first (transient)
//   "sqlite"      the audit row could not be written (the response is not delivered)
// The kinds are a closed set: llm::ErrorKind (errors.hpp) names them, and the stored strings
// above stay as they are (they are in the database).
// Every message names the URL (never the key), the HTTP status if any, and the attempt, e.g.
// "POST http://127.0.0.1:8080/v1/chat/completions: HTTP 503 (attempt 6/6): overloaded".
// For "truncated" and "parse" failures the raw response is in the request's llm_calls row.

using Callback = std::function<void(Result<ChatResponse>)>;

// Counters for /metrics. Monotonic unless noted.
struct Stats {
  std::uint64_t submitted = 0;
  std::uint64_t succeeded = 0;         // delivered OK (network or store)
  std::uint64_t failed = 0;            // delivered as an error
  std::uint64_t from_store = 0;        // answered from the store
  std::uint64_t coalesced = 0;         // joined an identical request already in flight
  std::uint64_t http_attempts = 0;     // HTTP requests sent
  std::uint64_t retries = 0;           // attempts beyond the first
  std::uint64_t concurrency_cuts = 0;  // adaptive decreases
  std::map<std::string, std::uint64_t> failures_by_kind;
  std::map<int, std::uint64_t> responses_by_status;  // HTTP status -> count (0: no response)
  // Latency of delivered network calls (submit to delivery), Prometheus-style: counts[i] is the
  // number of calls with latency <= bounds_ms[i] (non-cumulative), counts.back() the rest.
  std::vector<double> latency_bounds_ms;
  std::vector<std::uint64_t> latency_counts;
  double latency_sum_ms = 0;
  std::uint64_t prompt_tokens = 0;
  std::uint64_t completion_tokens = 0;
  std::uint64_t reasoning_tokens = 0;
  std::uint64_t cached_prompt_tokens = 0;
  std::uint64_t enlarged = 0;                   // cut answers asked again with a larger max_tokens
  std::map<std::string, std::uint64_t> mended;  // lenient extractions by what was mended
  double cost_usd = 0;                          // spent on network calls (replays cost nothing)
  // Gauges.
  int in_flight = 0;          // HTTP requests on the wire
  int waiting = 0;            // accepted, not on the wire (queued, backing off, rate-limited)
  int concurrency_limit = 0;  // current adaptive limit (<= max_in_flight)
  std::int64_t next_wakeup_ms = -1;  // ms until the earliest scheduled retry/pacing wait; -1 none
  double pace_per_s = 0;             // the learned request rate; 0: not pacing
  std::uint64_t pace_cuts = 0;       // times a 429 cut the rate
  std::uint64_t halts = 0;           // run-level errors (auth, not_found) that halted the queue
  // A server-requested pause of every request (a Retry-After above retry_after_pause_ms): until
  // when (wall ms; 0: none seen) and the status that asked for it.
  std::int64_t paused_until_wall_ms = 0;
  int paused_status = 0;
  // Batch mode (llm.mode batch). Gauges: batches recorded and not done, their requests, and
  // requests collected for the next batch; the rest monotonic.
  int batches_open = 0;
  int batch_lines_in_flight = 0;
  int batch_lines_waiting = 0;
  std::uint64_t batches_created = 0;
  std::uint64_t batches_adopted = 0;  // found at the provider by their metadata after a restart
  std::uint64_t batch_lines_answered = 0;
  std::uint64_t batch_lines_failed = 0;
  std::uint64_t batch_poll_errors = 0;
};

struct ClientOptions {
  Clock* clock = nullptr;  // nullptr: the system clock. Backoff, pacing and Retry-After use it.
  EnvLookup env;           // where the API key variable is looked up; empty: the process env
  // The database for audit rows and replay (the client opens its own connection, used only on
  // its thread). Empty path: no audit, no replay.
  std::string db_path;
  int db_busy_timeout_ms = 10'000;
  std::uint64_t jitter_seed = 0;  // 0: seeded from the OS
};

class Client {
 public:
  // Validates the configuration, reads the key, opens the store, starts the thread.
  // Errors: "config" (bad URL, ...), "sqlite"/"schema" (store).
  static Result<std::unique_ptr<Client>> create(const LlmConfig& cfg, ClientOptions opts = {});
  ~Client();  // shutdown(0ms)
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Queues a request; `done` is called exactly once, on the client's store thread (or at once on
  // the caller's thread, with "cancelled", after shutdown()).
  void submit(ChatRequest req, Callback done);
  // An answer obtained elsewhere for req (a line of an offline batch's result file, such as
  // `vllm run-batch` output): response_body is the chat completion. It is parsed, validated,
  // recorded and delivered exactly as an answer from the provider, priced at the batch rate;
  // when the store already holds a good answer for req's identity, that one is replayed and
  // response_body is not recorded again (importing the same file twice changes nothing).
  void answer(ChatRequest req, std::string response_body, Callback done);
  // A failed line of such a file for req (vLLM's `"body": null` with its error text, or the
  // provider's error line): recorded in llm_calls as an error (kind http, the line's status and
  // error, no cost); nothing is delivered, the request stays unanswered (its job queued).
  void record_failure(ChatRequest req, int http_status, std::string error);
  // Blocking convenience. Must not be called from a callback (it fails with "usage").
  Result<ChatResponse> call(ChatRequest req);

  // The request's identity: lower-case hex SHA-256 of its canonical form (endpoint URL, model,
  // messages, sampling parameters, response_format) and its round when > 0. Same value as
  // ChatResponse::request_sha256.
  std::string request_sha256(const ChatRequest& req) const;
  // The JSON body that is POSTed for req (holds no secret).
  std::string request_json(const ChatRequest& req) const;
  // request_sha256(req) from its body (request_json(req)) already built: one serialization less.
  std::string request_sha256(const ChatRequest& req, const std::string& body) const;
  // The full URL requests go to (holds no secret).
  const std::string& url() const;

  // Applies the limit, retry and timeout fields of cfg (the endpoint stays as created).
  void reload_limits(const LlmConfig& cfg);
  Stats stats() const;

  // Drain: stops accepting (later submits fail with "cancelled") and starts no new attempt or
  // retry from now on (requests waiting in the client fail with "cancelled" at once); requests
  // on the wire may finish. Returns at once; shutdown() ends it.
  void drain();
  // Drains, lets the requests on the wire finish until `grace` has passed, then aborts the rest
  // with "cancelled" and joins the thread. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

  class Impl;

 private:
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether `db` holds a good answer (an llm_calls row with status ok) for the request identity
// `request_sha256`, as Client::request_sha256 gives it: e.g. a batch result line imported
// before, whose request is no longer waiting.
Result<bool> has_good_answer(store::Db& db, const std::string& request_sha256);

}  // namespace kforge::llm
