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

std::vector<std::size_t> dispatch_order(const std::vector<double>& costs, VerifyOrder order) {
  std::vector<std::size_t> out(costs.size());
  std::iota(out.begin(), out.end(), std::size_t{0});
  if (order == VerifyOrder::cost)
    std::stable_sort(out.begin(), out.end(),
                     [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  return out;
}

}  // namespace kforge::verify
