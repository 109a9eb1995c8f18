#pragma once
// Statistics for comparing tagged runs: Wilson score intervals for a rate, the exact McNemar test
// for paired outcomes, and Newcombe's score interval for a paired difference of rates.
//
// Pure functions of counts; no I/O. Counts are non-negative.

#include <cstdint>

namespace kforge::report {

struct Interval {
  double low = 0;
  double high = 0;
};

// The two-sided standard normal quantile for a confidence level in (0, 1): 0.95 -> 1.95996...
double z_for_confidence(double confidence);

// Wilson score interval for k successes in n trials. n == 0 gives [0, 1].
Interval wilson(std::int64_t k, std::int64_t n, double z);

// The exact two-sided McNemar test on the discordant pairs b and c: a binomial test of
// min(b, c) against Binomial(b + c, 1/2), p = min(1, 2 * P[X <= min(b, c)]). b + c == 0 gives 1.
// Exact integer arithmetic for b + c <= 62, log-gamma sums in long double beyond; no overflow or
// NaN for any count (a p below the smallest double is 0).
double mcnemar_exact_p(std::int64_t b, std::int64_t c);

// A paired 2x2 table of two runs over the same samples: `both` verified in both, `only_a`
// verified in A only (b), `only_b` verified in B only (c), `neither`.
struct PairCounts {
  std::int64_t both = 0;
  std::int64_t only_a = 0;
  std::int64_t only_b = 0;
  std::int64_t neither = 0;
  std::int64_t n() const { return both + only_a + only_b + neither; }
};

// The difference of rates B - A, (only_b - only_a) / n, and its interval by Newcombe's method 10
// (Wilson intervals of each marginal combined with the phi correlation of the table; Newcombe,
// Statistics in Medicine 17, 1998). n == 0 gives 0 in [-1, 1].
double paired_difference(const PairCounts& t);
Interval paired_difference_interval(const PairCounts& t, double z);

namespace detail {
// The log-gamma path of mcnemar_exact_p, exposed so tests can check it against the exact one.
double mcnemar_exact_p_lgamma(std::int64_t b, std::int64_t c);
}  // namespace detail

}  // namespace kforge::report
