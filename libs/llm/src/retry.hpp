#pragma once
// Internal: retry decisions. What a failed attempt is (its error kind, whether it is transient,
// whether it halts the run), and whether and when it is tried again (Retry-After, full-jitter
// backoff, the retry-after cap and the total deadline). Pure: no clock, no I/O.

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "kforge/llm/config.hpp"
#include "kforge/llm/errors.hpp"
#include "kforge/llm/limits.hpp"

namespace kforge::llm {

// 408, 409, 429 and 5xx are worth another attempt.
bool retryable_status(long s);
// The provider's own explanation from an error body: OpenAI {"error": {"message"}}, Ollama and
// others {"error": "..."}, some {"message": "..."}; else the start of the body.
std::string provider_message(const std::string& body);
// 401/403 (or invalid_api_key): auth; 404 (or model_not_found): not_found; else none. Such an
// error is the run's, not the request's: not retried, and it halts the queue.
std::optional<ErrorKind> run_level_kind(long status, const std::string& body);

// A transfer that failed below HTTP: timeout, a cut body (protocol), a bad URL or certificate
// (not transient), else a connection failure.
struct TransportFailure {
  ErrorKind kind = ErrorKind::connect;
  bool transient = true;
  std::string detail;  // curl's error text (not redacted)
};
TransportFailure transport_failure(CURLcode rc, const char* errbuf);

// The budget a cut answer is asked again with: doubled (at least 256 more), up to limit.
inline int next_budget(int base, int limit) {
  return std::min(limit, std::max(base * 2, base + 256));
}

// What a retryable failure leads to.
struct RetryFacts {
  const std::map<std::string, std::string>* headers;  // the last response's (lower-case names)
  long last_status = 0;                               // 0: no response
  int attempts = 0;                                   // made so far
  TimePoint first_started{};
  TimePoint now{};
  std::int64_t wall_ms = 0;  // for a Retry-After given as an HTTP date
};

struct RetryDecision {
  // Give up: the error becomes transient, takes `kind` when set, and `note` is appended to its
  // message. Else the next attempt starts after `wait`.
  bool give_up = false;
  std::optional<ErrorKind> kind;
  std::string note;
  Millis wait{0};
  // The server's wait holds back more than this request: every request (a Retry-After beyond
  // llm.retry_after_pause_ms), or every start (a 429's Retry-After without the pacer). Applied
  // even when the decision is to give up at the deadline.
  enum class Hold { none, every_request, starts } hold = Hold::none;
};

// Server-given waits (retry-after-ms, then Retry-After) are honoured up to retry_after_cap_ms;
// without one the wait is drawn from [0, backoff_base_ms * 2^(attempts-1)], capped at
// backoff_max_ms (full jitter, from rng). No attempt starts after total_deadline_ms.
RetryDecision decide_retry(const RetryFacts& f, const LlmConfig& lim, std::mt19937_64& rng);

}  // namespace kforge::llm
