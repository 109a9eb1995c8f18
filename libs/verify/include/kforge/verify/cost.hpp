#pragma once
// The predicted cost of verifying a sample, from its text alone (before it runs), and the order
// the pool dispatches in (verifier.order; docs/VERIFIER.md, "Dispatch order").
//
// A sample's time in the verifier is mostly Triton compiling its kernels (the test's
// specialisations, then the mutant and battery runs'), so the prediction reads what makes
// compiles long: tl.dot calls (each an MMA pipeline), tl.* calls, @triton.jit kernels and
// tl.constexpr parameters in code + kernel_wrapper, and the test's length (how many launches and
// specialisations it makes). The model is log-linear, calibrated on an H200 over the 366 renamed
// TritonBench-G copies (bench/verify/order_sim.py --fit; docs/BENCHMARKS.md). With the default
// verifier.autotune: single, @triton.autotune's config lists do not add compiles, so they are not
// a feature.
//
// Longest first (LPT): a pool of N workers given the costliest samples first ends its batch
// near sum/N instead of with one long sample started last. Only the order changes: verdicts,
// the database and kforge verify's output lines (in record order) do not depend on it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kforge/core/enum_names.hpp"
#include "kforge/verify/pool.hpp"

namespace kforge::verify {

struct CostFeatures {
  int dots = 0;                // "tl.dot(" in code + kernel_wrapper
  int tl_calls = 0;            // "tl." in code + kernel_wrapper
  int jit = 0;                 // "@triton.jit" in code + kernel_wrapper
  int constexprs = 0;          // "tl.constexpr" in code + kernel_wrapper
  std::size_t test_bytes = 0;  // unitest_code's length
};

CostFeatures cost_features(const VerifyRequest& request);
// The predicted seconds of the sample's verification on a GPU (one worker; its compiles
// dominate). Only the ranking is meant: a cheap sample predicts about 1.5 s.
double predicted_cost_s(const CostFeatures& features);
double predicted_cost_s(const VerifyRequest& request);

// The positions of `costs` in dispatch order: longest predicted first (ties in input order),
// or as given (VerifyOrder::input).
std::vector<std::size_t> dispatch_order(const std::vector<double>& costs, VerifyOrder order);

}  // namespace kforge::verify
