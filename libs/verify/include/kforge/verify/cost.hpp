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

// verifier.order: early_long. A batch of N samples on W workers takes about sum/W seconds
// per worker (`per_worker_s`, predicted); a sample predicted to take more than `long_share` of
// that is long. In input order a sample of d seconds started at a uniform point of the run ends
// after it with probability about d / per_worker_s: the few long ones set the tail. kforge
// verify submits the long ones first (the longest first), one every `spacing` positions among
// the others, which keep their input order; the pool (Pool::set_long_cost) runs at most
// `busy_share` of its workers (at least one) on long samples at once and starts a long one
// only `spacing` = W / that many dispatches after the last, so the long compiles never run all
// together (cost order packed them and made every sample slower on the H200). The pool counts
// the long samples that really run: the prediction ranks well but its seconds are compressed
// (measured 1-50 s, predicted 1-12 s), so no timeline of predicted seconds would hold. The
// figures come from simulating the H200's durations of the 366 renamed TritonBench-G copies
// (bench/verify/order_sim.py; docs/BENCHMARKS.md, "Dispatch order"): long_share 0.06 (2.9 s
// there) takes 52 samples, 12 of the 14 measured 10 s or more among them (the two left are
// predicted 2.6 s), holding 40% of the measured work; at most a quarter of the workers on them
// could not finish them within the run (94 s simulated against 73 s in input order), half can
// (67 s).
struct EarlyLong {
  double long_share = 0.06;
  double busy_share = 0.5;
};

struct DispatchPlan {
  std::vector<std::size_t> order;  // the positions of `costs`, in submission order
  std::vector<bool> is_long;       // by position of `costs`: early_long's long samples
  double per_worker_s = 0;         // predicted: sum / workers
  double long_s = 0;               // early_long: the cost above which a sample is long
  int long_at_once = 0;            // early_long: at most this many long samples run at once
  int spacing = 0;                 // early_long: long samples start this many dispatches apart
};

// early_long's figures for `workers` workers: at most busy_share of them on long samples (at
// least one), and the spacing, workers / that (rounded up).
int long_at_once(int workers, const EarlyLong& params = {});
int long_spacing(int workers, const EarlyLong& params = {});

// The positions of `costs` in submission order for `workers` workers: cost, longest predicted
// first (ties in input order); input, as given; early_long, as above. Deterministic: the same
// costs and workers give the same order.
DispatchPlan plan_dispatch(const std::vector<double>& costs, VerifyOrder order, int workers,
                           const EarlyLong& params = {});
std::vector<std::size_t> dispatch_order(const std::vector<double>& costs, VerifyOrder order,
                                        int workers = 1);

}  // namespace kforge::verify
