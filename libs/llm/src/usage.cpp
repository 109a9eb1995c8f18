// Usage and cost: a call's price from the price table (batch answers at the batch multiplier),
// and the client's counters (Stats): requests, attempts, statuses, tokens, cost, the latency
// histogram of delivered calls, and the loop's gauges.

#include "usage.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "call.hpp"

namespace kforge::llm {

namespace {

const std::vector<double> kLatencyBounds = {50,   100,   250,   500,   1000,   2500,
                                            5000, 10000, 30000, 60000, 120000, 300000};

}  // namespace

void price_call(ChatResponse& r, const std::map<std::string, Price>& prices,
                const std::string& model, Channel channel) {
  auto price = prices.find(model);
  if (price == prices.end()) price = prices.find(r.model);
  if (price != prices.end()) {
    r.cost_usd = call_cost(price->second, r.prompt_tokens, r.completion_tokens,
                           r.cached_prompt_tokens, r.reasoning_tokens);
    if (channel == Channel::batch) r.cost_usd *= price->second.batch_multiplier;
  }
}

Meter::Meter() {
  stats_.latency_bounds_ms = kLatencyBounds;
  stats_.latency_counts.assign(kLatencyBounds.size() + 1, 0);
}

void Meter::submitted() {
  std::lock_guard lk(mu_);
  ++stats_.submitted;
}

void Meter::failed_at_once(const char* kind, Counted submitted) {
  std::lock_guard lk(mu_);
  if (submitted == Counted::now) ++stats_.submitted;
  ++stats_.failed;
  ++stats_.failures_by_kind[kind];
}

void Meter::coalesced() {
  std::lock_guard lk(mu_);
  ++stats_.coalesced;
}

void Meter::attempt_started(bool retry) {
  std::lock_guard lk(mu_);
  ++stats_.http_attempts;
  if (retry) ++stats_.retries;
}

void Meter::response(int status) {
  std::lock_guard lk(mu_);
  ++stats_.responses_by_status[status];
}

void Meter::concurrency_cut() {
  std::lock_guard lk(mu_);
  ++stats_.concurrency_cuts;
}

void Meter::enlarged() {
  std::lock_guard lk(mu_);
  ++stats_.enlarged;
}

void Meter::halted() {
  std::lock_guard lk(mu_);
  ++stats_.halts;
}

void Meter::usage(const ChatResponse& r) {
  std::lock_guard lk(mu_);
  stats_.prompt_tokens += static_cast<std::uint64_t>(r.prompt_tokens);
  stats_.completion_tokens += static_cast<std::uint64_t>(r.completion_tokens);
  stats_.reasoning_tokens += static_cast<std::uint64_t>(r.reasoning_tokens);
  stats_.cached_prompt_tokens += static_cast<std::uint64_t>(r.cached_prompt_tokens);
  stats_.cost_usd += r.cost_usd;
}

void Meter::delivered(const Call& c, const Result<ChatResponse>& res, const Clock& clock) {
  std::lock_guard lk(mu_);
  std::uint64_t n = c.callbacks.size();
  if (res.ok()) {
    stats_.succeeded += n;
    for (const auto& m : res->mended) ++stats_.mended[m];
    if (res->from_store) {
      stats_.from_store += n;
      return;
    }
  } else {
    stats_.failed += n;
    stats_.failures_by_kind[res.error().kind] += n;
    spdlog::warn("llm: {}", res.error().message);
    if (c.attempts == 0) return;
  }
  double ms = static_cast<double>(ms_between(c.submitted, clock.steady_now()));
  stats_.latency_sum_ms += ms;
  auto it = std::lower_bound(kLatencyBounds.begin(), kLatencyBounds.end(), ms);
  ++stats_.latency_counts[static_cast<std::size_t>(it - kLatencyBounds.begin())];
}

void Meter::gauges(const Gauges& g) {
  std::lock_guard lk(mu_);
  stats_.in_flight = g.in_flight;
  stats_.waiting = g.waiting;
  stats_.concurrency_limit = g.concurrency_limit;
  stats_.pace_per_s = g.pace_per_s;
  stats_.pace_cuts = g.pace_cuts;
  stats_.paused_until_wall_ms = g.paused_until_wall_ms;
  stats_.paused_status = g.paused_status;
  stats_.next_wakeup_ms = g.next_wakeup_ms;
}

Stats Meter::snapshot() const {
  std::lock_guard lk(mu_);
  return stats_;
}

}  // namespace kforge::llm
