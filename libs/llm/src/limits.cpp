#include "kforge/llm/limits.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>

namespace kforge::llm {

// --- TokenBucket ---------------------------------------------------------------

TokenBucket::TokenBucket(double per_minute) {
  set_rate(per_minute, TimePoint{});
  level_ = capacity_;
}

void TokenBucket::set_rate(double per_minute, TimePoint now) {
  if (started_) refill(now);
  rate_per_ms_ = per_minute > 0 ? per_minute / 60'000.0 : 0;
  double old_capacity = capacity_;
  capacity_ = std::max(1.0, per_minute / 10.0);
  if (!started_ || level_ >= old_capacity) level_ = capacity_;
  level_ = std::min(level_, capacity_);
}

void TokenBucket::refill(TimePoint now) {
  if (!started_) {
    started_ = true;
    last_ = now;
    return;
  }
  if (now <= last_) return;
  double ms = std::chrono::duration<double, std::milli>(now - last_).count();
  level_ = std::min(capacity_, level_ + ms * rate_per_ms_);
  last_ = now;
}

bool TokenBucket::try_take(double cost, TimePoint now, TimePoint* ready_at) {
  if (unlimited()) return true;
  refill(now);
  double need = std::min(cost, capacity_);
  if (level_ >= need) {
    level_ -= cost;
    return true;
  }
  if (ready_at != nullptr) {
    double wait_ms = std::ceil((need - level_) / rate_per_ms_);
    *ready_at = now + Millis(static_cast<std::int64_t>(std::max(1.0, wait_ms)));
  }
  return false;
}

void TokenBucket::adjust(double amount, TimePoint now) {
  if (unlimited()) return;
  refill(now);
  level_ = std::min(capacity_, level_ + amount);
}

double TokenBucket::level(TimePoint now) {
  refill(now);
  return level_;
}

// --- AdaptiveConcurrency --------------------------------------------------------

AdaptiveConcurrency::AdaptiveConcurrency(Params p)
    : p_(p), limit_(p.enabled ? std::clamp(p.initial, p.min, p.max) : p.max) {}

void AdaptiveConcurrency::set_params(Params p) {
  bool uncut = limit_ == p_.max;  // not held back: follow a new maximum at once
  p_ = p;
  limit_ = uncut ? p_.max : std::clamp(limit_, p_.min, p_.max);
  if (!p_.enabled) limit_ = p_.max;
}

void AdaptiveConcurrency::restart() {
  if (!p_.enabled) return;
  limit_ = std::clamp(p_.initial, p_.min, p_.max);
  slow_start_ = true;
  credit_ = 0;
}

bool AdaptiveConcurrency::cut(TimePoint now) {
  if (!p_.enabled) return false;
  if (last_cut_ && now - *last_cut_ < p_.cooldown) return false;
  int next = std::max(p_.min, static_cast<int>(std::floor(limit_ * p_.decrease_factor)));
  last_cut_ = now;
  credit_ = 0;
  slow_start_ = false;
  if (next == limit_) return false;
  limit_ = next;
  return true;
}

bool AdaptiveConcurrency::on_overload(TimePoint now) {
  return cut(now);
}

bool AdaptiveConcurrency::on_success(Millis latency, TimePoint now) {
  constexpr int kWarmup = 10;
  constexpr double kSlow = 0.02;  // the baseline follows a lasting change over ~50 calls
  double ms = static_cast<double>(latency.count());
  recent_[next_] = ms;
  next_ = (next_ + 1) % recent_.size();
  bool was_cut = false;
  if (samples_ < kWarmup) {
    warmup_sum_ += ms;
    if (++samples_ == kWarmup) baseline_ms_ = std::max(1.0, warmup_sum_ / kWarmup);
  } else {
    // The median of the last few calls: one long completion is not an overload, a run of them
    // is. A floor of a few ms keeps loopback-fast baselines from turning jitter into cuts.
    std::array<double, 9> sorted = recent_;
    std::nth_element(sorted.begin(), sorted.begin() + 4, sorted.end());
    if (sorted[4] > p_.latency_factor * std::max(baseline_ms_, 5.0)) was_cut = cut(now);
    baseline_ms_ += kSlow * (ms - baseline_ms_);
  }
  if (!was_cut && p_.enabled && limit_ < p_.max) {
    // Slow start: one more slot per success (the limit doubles per round); then one per round.
    credit_ += slow_start_ ? 1.0 : 1.0 / limit_;
    if (credit_ >= 1.0) {
      credit_ = 0;
      ++limit_;
    }
  }
  return was_cut;
}

// --- AdaptivePacer -----------------------------------------------------------------

std::optional<double> AdaptivePacer::rate() const {
  std::optional<double> r = rate_;
  for (double ceiling : {server_rate_, p_.max_rate})
    if (ceiling > 0) r = r ? std::min(*r, ceiling) : ceiling;
  return r;
}

bool AdaptivePacer::try_take(TimePoint now, TimePoint* ready_at) {
  if (!started_) {
    started_ = true;
    first_sent_ = now;
    last_change_ = now;
  }
  auto r = rate();
  if (!r) return true;
  auto interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(1.0 / std::max(*r, p_.min_rate)));
  if (now < next_) {
    waited_ = true;
    if (ready_at != nullptr) *ready_at = next_;
    return false;
  }
  // Evenly spaced: a quarter interval of lateness (the loop's wakeups) is made up for, no
  // more credit is saved up while idle.
  next_ = std::max(next_, now - interval / 4) + interval;
  return true;
}

double AdaptivePacer::accepted_rate(TimePoint now) {
  while (!accepted_.empty() && now - accepted_.front() > std::chrono::seconds(1))
    accepted_.pop_front();
  double window = std::chrono::duration<double>(now - first_sent_).count();
  window = std::clamp(window, 0.1, 1.0);
  return static_cast<double>(accepted_.size()) / window;
}

void AdaptivePacer::on_accepted(TimePoint now) {
  accepted_.push_back(now);
  if (accepted_.size() > 100'000) accepted_.pop_front();
}

bool AdaptivePacer::on_limited(TimePoint sent_at, TimePoint now) {
  if (cuts_ > 0 && sent_at < last_cut_) return false;  // sent at the old rate
  double seen = accepted_rate(now);
  double base;
  if (accepted_.size() >= 3) {
    base = rate() ? std::min(*rate(), seen) : seen;
  } else if (rate()) {
    base = *rate();  // too few answers to measure: a plain multiplicative cut
  } else {
    return false;  // nothing to estimate from yet: the Retry-After alone delays the request
  }
  rate_ = std::max(p_.min_rate, base * p_.decrease_factor);
  last_cut_ = now;
  last_change_ = now;
  quiet_periods_ = 0;
  waited_ = false;
  ++cuts_;
  // The next request waits one interval of the new rate.
  next_ = now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(1.0 / *rate_));
  return true;
}

bool AdaptivePacer::tick(TimePoint now) {
  if (!rate_ || now - last_change_ < p_.quiet) return false;
  last_change_ = now;
  if (!waited_) return false;  // the rate did not hold anything back: no evidence to grow on
  waited_ = false;
  ++quiet_periods_;
  rate_ = *rate_ * (1 + p_.growth_step * quiet_periods_);
  // Unbounded growth means the limit is gone: after enough quiet, stop pacing.
  if (*rate_ > 1e6) rate_.reset();
  return true;
}

// --- header parsing -------------------------------------------------------------

std::optional<Millis> parse_retry_after(std::string_view value, std::int64_t now_wall_ms) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  std::string s(value);
  char* end = nullptr;
  double secs = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size()) {
    if (!(secs >= 0) || secs > 1e9) return std::nullopt;
    return Millis(static_cast<std::int64_t>(std::ceil(secs * 1000)));
  }
  time_t t = curl_getdate(s.c_str(), nullptr);
  if (t < 0) return std::nullopt;
  std::int64_t delta = static_cast<std::int64_t>(t) * 1000 - now_wall_ms;
  return Millis(std::max<std::int64_t>(0, delta));
}

std::optional<Millis> parse_reset_duration(std::string_view value) {
  std::string s(value);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  if (s.empty()) return std::nullopt;
  double total_ms = 0;
  const char* p = s.c_str();
  const char* end_all = p + s.size();
  bool any = false;
  while (p < end_all) {
    char* end = nullptr;
    double v = std::strtod(p, &end);
    if (end == p || !(v >= 0)) return std::nullopt;
    p = end;
    if (p == end_all) {  // a plain number: seconds
      if (any) return std::nullopt;
      total_ms += v * 1000;
      any = true;
      break;
    }
    std::string_view rest(p, static_cast<std::size_t>(end_all - p));
    if (rest.substr(0, 2) == "ms") {
      total_ms += v;
      p += 2;
    } else if (rest[0] == 'h') {
      total_ms += v * 3'600'000;
      ++p;
    } else if (rest[0] == 'm') {
      total_ms += v * 60'000;
      ++p;
    } else if (rest[0] == 's') {
      total_ms += v * 1000;
      ++p;
    } else {
      return std::nullopt;
    }
    any = true;
  }
  if (!any) return std::nullopt;
  return Millis(static_cast<std::int64_t>(std::ceil(total_ms)));
}

int estimate_prompt_tokens(std::size_t total_chars, std::size_t messages) {
  return static_cast<int>((total_chars + 3) / 4 + 4 * messages + 3);
}

}  // namespace kforge::llm
