#include "kforge/core/clock.hpp"

#include <ctime>
#include <thread>

namespace kforge {

std::chrono::steady_clock::time_point SystemClock::steady_now() const {
  return std::chrono::steady_clock::now();
}

std::int64_t SystemClock::wall_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void SystemClock::sleep_for(std::chrono::milliseconds d) {
  std::this_thread::sleep_for(d);
}

Clock& system_clock() {
  static SystemClock clock;
  return clock;
}

ManualClock::ManualClock(std::int64_t start_wall_ms)
    : steady_(std::chrono::steady_clock::time_point{} + std::chrono::hours(1)),
      wall_ms_(start_wall_ms) {}

std::chrono::steady_clock::time_point ManualClock::steady_now() const {
  std::lock_guard lock(mu_);
  return steady_;
}

std::int64_t ManualClock::wall_ms() const {
  std::lock_guard lock(mu_);
  return wall_ms_;
}

void ManualClock::sleep_for(std::chrono::milliseconds d) {
  advance(d);
}

void ManualClock::advance(std::chrono::milliseconds d) {
  std::lock_guard lock(mu_);
  steady_ += d;
  wall_ms_ += d.count();
}

std::string format_utc_ms(std::int64_t wall_ms) {
  std::time_t secs = static_cast<std::time_t>(wall_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(wall_ms % 1000));
  return out;
}

}  // namespace kforge
