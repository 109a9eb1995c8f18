#pragma once
// The client's pacing pieces, exposed for tests and for the pipeline's planning: token buckets,
// the adaptive concurrency limit, and parsers for the servers' rate-limit headers. None of them
// reads a clock: callers pass the time in.
//
// Threads: not thread-safe; the client uses them on its own thread only.

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
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
  // Slow start: a new limit (and one reset after a halt) starts here and doubles each time as
  // many requests succeed, until the first cut or max; then it grows additively.
  int initial = 2;
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
  // Back to slow start (after a halt: the next requests test the server again).
  void restart();
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
  bool slow_start_ = true;
};

struct PacerParams {
  double decrease_factor = 0.9;  // on a 429: the rate accepted over the last second, times this
  double min_rate = 0.05;        // requests per second the pacer never goes below
  Millis quiet{1000};            // a growth step after this long without a 429
  double growth_step = 0.01;     // the k-th quiet period in a row adds k x this fraction
  double max_rate = 0;           // a ceiling (the configured requests_per_minute / 60); 0: none
};

// Spaces requests evenly at an estimated sustainable rate, learned from the server: unlimited
// until the first 429, then the rate the server accepted over the last second (successful
// answers) times decrease_factor; after each quiet period (no 429 for a request sent after the
// last cut) the rate grows by a step that grows with the number of quiet periods in a row
// (AIMD-like probing). x-ratelimit-* headers give a ceiling (set_server_rate).
//
// A 429 for a request sent before the last cut says nothing new and is ignored.
class AdaptivePacer {
 public:
  using Params = PacerParams;
  AdaptivePacer() : AdaptivePacer(Params{}) {}
  explicit AdaptivePacer(Params p) : p_(p) {}
  void set_params(Params p) { p_ = p; }
  // Requests per second; nullopt: not limited (no 429 seen, no ceiling).
  std::optional<double> rate() const;
  // True when a request may be sent now (and records it as sent); else *ready_at says when.
  bool try_take(TimePoint now, TimePoint* ready_at);
  // A request sent at `sent_at` was answered (not 429) at `now`.
  void on_accepted(TimePoint now);
  // A request sent at `sent_at` got a 429 at `now`. Returns true when the rate was cut.
  bool on_limited(TimePoint sent_at, TimePoint now);
  // A rate the server's headers announce (requests per second), 0: none known.
  void set_server_rate(double per_second) { server_rate_ = per_second; }
  // Called from the loop: grows the rate after quiet periods. Returns true when it grew.
  bool tick(TimePoint now);
  std::uint64_t cuts() const { return cuts_; }

 private:
  double accepted_rate(TimePoint now);
  Params p_;
  std::optional<double> rate_;  // learned
  double server_rate_ = 0;
  TimePoint next_{};  // the earliest time the next request may go
  bool started_ = false;
  std::deque<TimePoint> accepted_;  // answers accepted within the last second
  TimePoint first_sent_{};
  TimePoint last_cut_{};
  TimePoint last_change_{};
  bool waited_ = false;  // the pacer held a request back since the last change
  int quiet_periods_ = 0;
  std::uint64_t cuts_ = 0;
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
