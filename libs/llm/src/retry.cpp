// Retry decisions: how a failed attempt is classified (transport failures, HTTP statuses, the
// run-level 401/403/404 that halt the queue, the provider's own message) and when a retryable
// one is tried again: the server's Retry-After within its cap, else full-jitter backoff, never
// past the total deadline.

#include "retry.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "call.hpp"
#include "text.hpp"

namespace kforge::llm {

using json = nlohmann::json;

bool retryable_status(long s) {
  return s == 408 || s == 409 || s == 429 || s >= 500;
}

std::string provider_message(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_string()) return e->get<std::string>();
      if (e->is_object()) {
        if (auto m = e->find("message"); m != e->end() && m->is_string())
          return m->get<std::string>();
      }
    }
    if (auto m = j.find("message"); m != j.end() && m->is_string()) return m->get<std::string>();
    if (auto m = j.find("detail"); m != j.end() && m->is_string()) return m->get<std::string>();
  }
  if (body.empty()) return "(empty body)";
  return excerpt(body, 300);
}

std::optional<ErrorKind> run_level_kind(long status, const std::string& body) {
  std::string code;
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object()) {
    const json& e = j["error"];
    if (auto it = e.find("code"); it != e.end() && it->is_string()) code = it->get<std::string>();
  }
  if (status == 401 || status == 403 || code == "invalid_api_key") return ErrorKind::auth;
  if (status == 404 || code == "model_not_found" || code == "DeploymentNotFound")
    return ErrorKind::not_found;
  return std::nullopt;
}

TransportFailure transport_failure(CURLcode rc, const char* errbuf) {
  TransportFailure f;
  f.detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      f.kind = ErrorKind::timeout;
      break;
    case CURLE_PARTIAL_FILE:
      f.kind = ErrorKind::protocol;
      f.detail = "truncated response body: " + f.detail;
      break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
      f.transient = false;
      break;
    default:
      break;
  }
  return f;
}

RetryDecision decide_retry(const RetryFacts& f, const LlmConfig& lim, std::mt19937_64& rng) {
  RetryDecision d;
  std::optional<Millis> server_wait;
  if (auto it = f.headers->find("retry-after-ms"); it != f.headers->end()) {
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && v >= 0)
      server_wait = Millis(static_cast<std::int64_t>(std::ceil(v)));
  }
  if (!server_wait) {
    if (auto it = f.headers->find("retry-after"); it != f.headers->end())
      server_wait = parse_retry_after(it->second, f.wall_ms);
  }
  if (server_wait) {
    if (server_wait->count() > lim.retry_after_cap_ms) {
      d.give_up = true;
      if (f.last_status == 429) d.kind = ErrorKind::rate_limit;
      d.note = "; the server asks to retry after " + std::to_string(server_wait->count() / 1000) +
               " s, beyond the cap of " + std::to_string(lim.retry_after_cap_ms / 1000) +
               " s (retry_after_cap_ms)";
      return d;
    }
    d.wait = *server_wait;
    if (d.wait.count() > lim.retry_after_pause_ms) {
      // A long wait is the server's, not this request's: hold back every request until then.
      d.hold = RetryDecision::Hold::every_request;
    } else if (f.last_status == 429 && !lim.pace) {
      d.hold = RetryDecision::Hold::starts;
    }
  } else {
    std::int64_t ceiling = lim.backoff_base_ms;
    for (int i = 1; i < f.attempts && ceiling < lim.backoff_max_ms; ++i) ceiling *= 2;
    ceiling = std::min(ceiling, lim.backoff_max_ms);
    std::uniform_int_distribution<std::int64_t> jitter(0, std::max<std::int64_t>(0, ceiling));
    d.wait = Millis(jitter(rng));
  }
  if (ms_between(f.first_started, f.now + d.wait) > lim.total_deadline_ms) {
    d.give_up = true;
    d.kind = ErrorKind::deadline;
    d.note = "; no retry: the next attempt (in " + std::to_string(d.wait.count()) +
             " ms) would start after total_deadline_ms (" + std::to_string(lim.total_deadline_ms) +
             " ms)";
  }
  return d;
}

}  // namespace kforge::llm
