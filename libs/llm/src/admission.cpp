// Admission and pacing: the client's use of the in-flight limit (slow start, cut on 503, 429
// without the pacer, or latency), the pacer (learned from 429s, a ceiling from the headers), the
// requests- and tokens-per-minute buckets, and the holds the server asks for (x-ratelimit-*
// headers with nothing left, a long Retry-After pausing every request).

#include "admission.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace kforge::llm {

void Admission::configure(const LlmConfig& cfg, TimePoint now) {
  pace_ = cfg.pace;
  tokens_per_minute_ = cfg.tokens_per_minute;
  PacerParams pp;
  pp.decrease_factor = cfg.pace_decrease;
  pacer_.set_params(pp);
  rpm_.set_rate(cfg.requests_per_minute, now);
  tpm_.set_rate(cfg.tokens_per_minute, now);
  AdaptiveConcurrency::Params p;
  p.min = std::min(cfg.min_in_flight, cfg.max_in_flight);
  p.max = cfg.max_in_flight;
  p.decrease_factor = cfg.decrease_factor;
  p.latency_factor = cfg.latency_factor;
  p.cooldown = Millis(cfg.adaptive_cooldown_ms);
  p.enabled = cfg.adaptive;
  p.initial = cfg.initial_in_flight;
  if (!adaptive_started_) {
    adaptive_ = AdaptiveConcurrency(p);  // slow start
    adaptive_started_ = true;
  } else {
    adaptive_.set_params(p);
  }
}

bool Admission::try_admit(double tokens, TimePoint now, TimePoint* at) {
  if (now < blocked_until_) {
    *at = blocked_until_;
    return false;
  }
  if (!rpm_.try_take(1, now, at)) return false;
  if (!tpm_.try_take(tokens, now, at)) {
    rpm_.adjust(1, now);
    return false;
  }
  if (pace_ && !pacer_.try_take(now, at)) {
    rpm_.adjust(1, now);
    tpm_.adjust(tokens, now);
    return false;
  }
  return true;
}

void Admission::tick(TimePoint now) {
  if (pace_ && pacer_.tick(now))
    spdlog::debug("llm: pacing grown to {:.2f} requests/s", *pacer_.rate());
}

const char* Admission::on_transfer(const std::map<std::string, std::string>& headers, bool answered,
                                   long status, TimePoint sent, TimePoint now, double next_tokens) {
  note_ratelimit_headers(headers, now, next_tokens);
  if (answered && status == 429) {
    // A rate limit: the pacer learns the rate (concurrency is not what the server limits).
    if (pace_) {
      if (pacer_.on_limited(sent, now))
        spdlog::info("llm: HTTP 429: pacing cut to {:.2f} requests/s", *pacer_.rate());
    } else if (adaptive_.on_overload(now)) {
      return "429";
    }
  } else if (answered) {
    pacer_.on_accepted(now);
    if (status == 503 && adaptive_.on_overload(now)) return "503";
  }
  return nullptr;
}

bool Admission::on_success(Millis latency, TimePoint now) {
  return adaptive_.on_success(latency, now);
}

void Admission::refund(double tokens, TimePoint now) {
  tpm_.adjust(tokens, now);
}

void Admission::pause_all(TimePoint now, Millis wait, std::int64_t wall_ms, long status) {
  if (now + wait > blocked_until_) {
    blocked_until_ = now + wait;
    paused_until_wall_ms_ = wall_ms + wait.count();
    paused_status_ = static_cast<int>(status);
    spdlog::warn("llm: HTTP {} with Retry-After {} s: every request waits until then", status,
                 (wait.count() + 999) / 1000);
  }
}

void Admission::hold_until(TimePoint t) {
  blocked_until_ = std::max(blocked_until_, t);
}

std::optional<double> Admission::pace_rate() const {
  return pace_ ? pacer_.rate() : std::nullopt;
}

void Admission::note_ratelimit_headers(const std::map<std::string, std::string>& headers,
                                       TimePoint now, double next_tokens) {
  auto get = [&](const char* name) -> const std::string* {
    auto it = headers.find(name);
    return it == headers.end() ? nullptr : &it->second;
  };
  auto block = [&](const char* remaining, const char* reset, double need) {
    const std::string* r = get(remaining);
    const std::string* t = get(reset);
    if (r == nullptr || t == nullptr) return;
    char* end = nullptr;
    double left = std::strtod(r->c_str(), &end);
    if (end == r->c_str() || left >= need) return;
    if (auto d = parse_reset_duration(*t)) blocked_until_ = std::max(blocked_until_, now + *d);
  };
  block("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", 1);
  block("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", next_tokens);
  // The refill rate the headers imply: what was used of the limit is given back by the reset
  // time, so (limit - remaining) / reset is the sustainable rate.
  auto rate = [&](const char* limit, const char* remaining, const char* reset) -> double {
    const std::string* l = get(limit);
    const std::string* r = get(remaining);
    const std::string* t = get(reset);
    if (l == nullptr || r == nullptr || t == nullptr) return 0;
    double lv = std::strtod(l->c_str(), nullptr);
    double rv = std::strtod(r->c_str(), nullptr);
    auto d = parse_reset_duration(*t);
    if (!d || d->count() <= 0 || !(lv > rv) || rv < 0) return 0;
    return (lv - rv) / (static_cast<double>(d->count()) / 1000.0);
  };
  if (double rps = rate("x-ratelimit-limit-requests", "x-ratelimit-remaining-requests",
                        "x-ratelimit-reset-requests");
      rps > 0 && pace_) {
    pacer_.set_server_rate(rps);
  }
  if (double tps = rate("x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens",
                        "x-ratelimit-reset-tokens");
      tps > 0 && pace_) {
    double per_minute = tps * 60;
    if (tokens_per_minute_ > 0) per_minute = std::min(per_minute, tokens_per_minute_);
    if (std::abs(per_minute - server_tpm_) > 0.1 * std::max(per_minute, server_tpm_)) {
      server_tpm_ = per_minute;
      tpm_.set_rate(per_minute, now);
    }
  }
}

}  // namespace kforge::llm
