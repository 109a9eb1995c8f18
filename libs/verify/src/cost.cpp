#include "kforge/verify/cost.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string_view>

namespace kforge::verify {

namespace {

int count(std::string_view text, std::string_view what) {
  int n = 0;
  for (auto at = text.find(what); at != std::string_view::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The model's coefficients (bench/verify/order_sim.py --fit over the H200's label-off verdicts
// of the 366 TritonBench-G copies; docs/BENCHMARKS.md, "Dispatch order").
constexpr double kIntercept = -0.52;
constexpr double kDots = 0.50;
constexpr double kTlCalls = 0.094;
constexpr double kJit = 0.096;
constexpr double kTestKb = 0.50;
constexpr double kConstexprs = 0.076;

}  // namespace

CostFeatures cost_features(const VerifyRequest& request) {
  CostFeatures f;
  for (const auto* text : {&request.code, &request.kernel_wrapper}) {
    if (!*text) continue;
    std::string_view t = **text;
    f.dots += count(t, "tl.dot(");
    f.tl_calls += count(t, "tl.");
    f.jit += count(t, "@triton.jit");
    f.constexprs += count(t, "tl.constexpr");
  }
  if (request.unitest_code) f.test_bytes = request.unitest_code->size();
  return f;
}

double predicted_cost_s(const CostFeatures& f) {
  double log_s = kIntercept + kDots * std::log1p(f.dots) + kTlCalls * std::log1p(f.tl_calls) +
                 kJit * std::log1p(f.jit) +
                 kTestKb * std::log1p(static_cast<double>(f.test_bytes) / 1000.0) +
                 kConstexprs * std::log1p(f.constexprs);
  return std::exp(log_s);
}

double predicted_cost_s(const VerifyRequest& request) {
  return predicted_cost_s(cost_features(request));
}

int long_at_once(int workers, const EarlyLong& params) {
  return std::max(1, static_cast<int>(params.busy_share * std::max(1, workers)));
}

int long_spacing(int workers, const EarlyLong& params) {
  int at_once = long_at_once(workers, params);
  return (std::max(1, workers) + at_once - 1) / at_once;
}

DispatchPlan plan_dispatch(const std::vector<double>& costs, VerifyOrder order, int workers,
                           const EarlyLong& params) {
  DispatchPlan plan;
  workers = std::max(1, workers);
  plan.is_long.assign(costs.size(), false);
  plan.per_worker_s = std::accumulate(costs.begin(), costs.end(), 0.0) / workers;
  plan.order.resize(costs.size());
  std::iota(plan.order.begin(), plan.order.end(), std::size_t{0});
  auto longest_first = [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; };
  if (order == VerifyOrder::cost)
    std::stable_sort(plan.order.begin(), plan.order.end(), longest_first);
  if (order != VerifyOrder::early_long) return plan;

  plan.long_s = params.long_share * plan.per_worker_s;
  plan.long_at_once = long_at_once(workers, params);
  plan.spacing = long_spacing(workers, params);
  std::vector<std::size_t> longs, others;
  for (std::size_t i = 0; i < costs.size(); ++i) {
    plan.is_long[i] = costs[i] > plan.long_s;
    (plan.is_long[i] ? longs : others).push_back(i);
  }
  std::stable_sort(longs.begin(), longs.end(), longest_first);
  // A long one at positions 0, spacing, 2 spacing, ... (all of them once the others ran out).
  plan.order.clear();
  std::size_t next_long = 0, next_other = 0;
  while (plan.order.size() < costs.size()) {
    bool take_long = next_long < longs.size() &&
                     (next_other == others.size() ||
                      plan.order.size() % static_cast<std::size_t>(plan.spacing) == 0);
    plan.order.push_back(take_long ? longs[next_long++] : others[next_other++]);
  }
  return plan;
}

std::vector<std::size_t> dispatch_order(const std::vector<double>& costs, VerifyOrder order,
                                        int workers) {
  return plan_dispatch(costs, order, workers).order;
}

}  // namespace kforge::verify
