#pragma once
// Clock: time. Production code never calls now() itself: a component that also starts processes
// takes an Env and reads env.clock() (one clock per component); one that only needs time takes a
// Clock&. Tests inject a ManualClock (through ClockedEnv for an Env) and drive leases, backoff and
// rate limits without sleeping. SystemClock is made only in core (system_clock(), default_env()).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

namespace kforge {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time for durations and deadlines.
  virtual std::chrono::steady_clock::time_point steady_now() const = 0;
  // Wall time in milliseconds since the Unix epoch, for stored timestamps and leases.
  virtual std::int64_t wall_ms() const = 0;
  // Blocks the calling thread for d (a ManualClock returns at once after advancing).
  virtual void sleep_for(std::chrono::milliseconds d) = 0;
};

class SystemClock final : public Clock {
 public:
  std::chrono::steady_clock::time_point steady_now() const override;
  std::int64_t wall_ms() const override;
  void sleep_for(std::chrono::milliseconds d) override;
};

// The process-wide real clock.
Clock& system_clock();

// A clock that moves only when told. Thread-safe. sleep_for() advances the clock by d.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(std::int64_t start_wall_ms = 1'700'000'000'000);
  std::chrono::steady_clock::time_point steady_now() const override;
  std::int64_t wall_ms() const override;
  void sleep_for(std::chrono::milliseconds d) override;
  void advance(std::chrono::milliseconds d);

 private:
  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point steady_;
  std::int64_t wall_ms_;
};

// "2026-11-22T02:34:24.123Z"
std::string format_utc_ms(std::int64_t wall_ms);

}  // namespace kforge
