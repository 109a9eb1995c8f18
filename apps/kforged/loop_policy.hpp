#pragma once
// LoopPolicy: what kforged's two loops (DaemonLoop, VerifierLoop) share about failing steps and
// stopping, so both back off and drain alike.
//
// Backoff: a failed step is logged and counted, and the loop sleeps on the clock for 100 ms per
// failure in a row, at most 5 s; a successful step resets the count.
// Drain: a stop request (SIGTERM/SIGINT) starts a drain with a grace period at the loop's next
// step; the loop is over once nothing is left in flight, the grace period is spent, or a second
// stop request came.
//
// Threads: request_stop() and stop_requests() from any thread; the rest on the loop's thread.

#include <atomic>
#include <chrono>
#include <string>

#include "kforge/core/clock.hpp"
#include "kforge/core/result.hpp"

namespace kforge::daemon {

class LoopPolicy {
 public:
  static constexpr std::chrono::milliseconds kBackoffStep{100};
  static constexpr std::chrono::milliseconds kBackoffMax{5'000};

  // name: the loop in the log ("step failed", "verifier step failed"); empty for the main loop.
  LoopPolicy(Clock& clock, std::string name);

  // After each step: ok resets the count; a failure is logged, counted and slept off on the
  // clock (backoff()). Returns st.ok().
  bool after_step(const Status& st);
  int consecutive_errors() const { return consecutive_errors_; }
  // The sleep after `failures` failed steps in a row.
  static std::chrono::milliseconds backoff(int failures);

  // Any thread.
  void request_stop() { ++stop_requests_; }
  int stop_requests() const { return stop_requests_.load(); }

  // A stop was requested and no drain has started: starts one whose grace period ends `grace`
  // from now, and returns true (the caller then stops taking work).
  bool begin_drain(std::chrono::milliseconds grace);
  bool draining() const { return draining_; }
  // When the grace period ends (the clock's epoch before any drain).
  std::chrono::steady_clock::time_point drain_deadline() const { return drain_deadline_; }
  // Draining, and nothing is left in flight, the grace period is spent or a second stop came.
  bool drain_over(bool nothing_left) const;

 private:
  Clock& clock_;
  std::string name_;
  std::atomic<int> stop_requests_{0};
  int consecutive_errors_ = 0;
  bool draining_ = false;
  std::chrono::steady_clock::time_point drain_deadline_{};
};

}  // namespace kforge::daemon
