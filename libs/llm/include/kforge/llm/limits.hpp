#pragma once
// The client's pacing pieces, exposed for tests and for the pipeline's planning: token buckets,
// the adaptive concurrency limit, and parsers for the servers' rate-limit headers. None of them
// reads a clock: callers pass the time in.
//
// Threads: not thread-safe; the client uses them on its own thread only.

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace kforge::llm {

using TimePoint = std::chrono::steady_clock::time_point;
using Millis = std::chrono::milliseconds;

// A token bucket refilled continuously at `per_minute`, holding at most a tenth of a minute's
// worth (at least 1), starting full. A cost larger than the capacity is let through when the
// bucket is full, so a single large request is paced, never starved. Level may go negative after
// a correction (usage larger than estimated): later takes then wait longer.
class TokenBucket {
 public:
  explicit TokenBucket(double per_minute = 0);
  // 0: unlimited. Keeps the current level (clamped to the new capacity).
  void set_rate(double per_minute, TimePoint now);
  bool unlimited() const { return rate_per_ms_ <= 0; }
  // Takes `cost` and returns true, or returns false and sets *ready_at to when it could.
  bool try_take(double cost, TimePoint now, TimePoint* ready_at);
  // Adds `amount` back (negative: takes more), e.g. estimated minus actual usage.
  void adjust(double amount, TimePoint now);
  double level(TimePoint now);
  double capacity() const { return capacity_; }

 private:
  void refill(TimePoint now);
  double rate_per_ms_ = 0;
  double capacity_ = 1;
  double level_ = 1;
  TimePoint last_{};
  bool started_ = false;
};

struct AdaptiveParams {
  int min = 1;
  int max = 16;
  double decrease_factor = 0.5;
  double latency_factor = 3.0;
  Millis cooldown{2000};
  bool enabled = true;
};

// The in-flight limit: multiplicative decrease on overload (429, 503, or the median latency of
// the last 9 calls above latency_factor x its running baseline), additive increase (one slot per
// `limit` successes) back up to the maximum.
class AdaptiveConcurrency {
 public:
  using Params = AdaptiveParams;
  AdaptiveConcurrency() : AdaptiveConcurrency(Params{}) {}
  explicit AdaptiveConcurrency(Params p);
  void set_params(Params p);
  int limit() const { return limit_; }
  // An overload signal (429/503). Returns true when the limit was cut.
  bool on_overload(TimePoint now);
  // A successful attempt and its server latency. Returns true when latency caused a cut.
  bool on_success(Millis latency, TimePoint now);
  // The latency baseline (slow average), or 0 before enough samples.
  double baseline_ms() const { return baseline_ms_; }

 private:
  bool cut(TimePoint now);
  Params p_;
  int limit_;
  double credit_ = 0;
  double baseline_ms_ = 0;
  std::array<double, 9> recent_{};  // the last latencies, a ring
  std::size_t next_ = 0;
  int samples_ = 0;
  double warmup_sum_ = 0;
  std::optional<TimePoint> last_cut_;
};

// Retry-After: delta seconds ("120", "1.5") or an HTTP date (relative to now_wall_ms).
// nullopt when absent or unparsable. Never negative.
std::optional<Millis> parse_retry_after(std::string_view value, std::int64_t now_wall_ms);
// x-ratelimit-reset-*: "1s", "6m0s", "20ms", "1h2m3.5s", or plain seconds "12.5".
std::optional<Millis> parse_reset_duration(std::string_view value);

// A rough token count for pacing before the server reports usage: about 4 characters per
// token plus a few per message.
int estimate_prompt_tokens(std::size_t total_chars, std::size_t messages);

}  // namespace kforge::llm
