#include "loop_policy.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace kforge::daemon {

LoopPolicy::LoopPolicy(Clock& clock, std::string name) : clock_(clock), name_(std::move(name)) {}

std::chrono::milliseconds LoopPolicy::backoff(int failures) {
  return std::min(kBackoffStep * failures, kBackoffMax);
}

bool LoopPolicy::after_step(const Status& st) {
  if (st.ok()) {
    consecutive_errors_ = 0;
    return true;
  }
  ++consecutive_errors_;
  spdlog::error("{}{}step failed ({} in a row): {}", name_, name_.empty() ? "" : " ",
                consecutive_errors_, st.error().message);
  clock_.sleep_for(backoff(consecutive_errors_));
  return false;
}

bool LoopPolicy::begin_drain(std::chrono::milliseconds grace) {
  if (draining_ || stop_requests_.load() == 0) return false;
  draining_ = true;
  drain_deadline_ = clock_.steady_now() + grace;
  return true;
}

bool LoopPolicy::drain_over(bool nothing_left) const {
  return draining_ &&
         (nothing_left || clock_.steady_now() >= drain_deadline_ || stop_requests_.load() > 1);
}

}  // namespace kforge::daemon
