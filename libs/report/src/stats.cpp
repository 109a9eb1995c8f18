#include "kforge/report/stats.hpp"

#include <algorithm>
#include <cmath>

namespace kforge::report {

double z_for_confidence(double confidence) {
  // Solve erfc(z / sqrt 2) = 1 - confidence by bisection; erfc is monotone, and 200 halvings of
  // [0, 40] reach the limit of double precision.
  double tail = 1.0 - confidence;
  double lo = 0.0, hi = 40.0;
  for (int i = 0; i < 200; ++i) {
    double mid = 0.5 * (lo + hi);
    if (std::erfc(mid / std::sqrt(2.0)) > tail)
      lo = mid;
    else
      hi = mid;
  }
  return 0.5 * (lo + hi);
}

Interval wilson(std::int64_t k, std::int64_t n, double z) {
  if (n <= 0) return {0.0, 1.0};
  double nn = static_cast<double>(n);
  double p = static_cast<double>(k) / nn;
  double z2 = z * z;
  double denom = 1.0 + z2 / nn;
  double center = (p + z2 / (2.0 * nn)) / denom;
  double half = z / denom * std::sqrt(p * (1.0 - p) / nn + z2 / (4.0 * nn * nn));
  return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

namespace detail {
double mcnemar_exact_p_lgamma(std::int64_t b, std::int64_t c) {
  std::int64_t n = b + c;
  if (n == 0) return 1.0;
  std::int64_t k = std::min(b, c);
  if (2 * k >= n) return 1.0;
  // log P[X = i] = lgamma(n+1) - lgamma(i+1) - lgamma(n-i+1) - n log 2; the terms grow with i up
  // to k < n/2, so the last one is the largest: sum exp(t_i - t_k) from i = k down, stopping once
  // the terms no longer change the sum.
  long double ln = static_cast<long double>(n);
  long double lgn = std::lgamma(ln + 1.0L) - ln * std::log(2.0L);
  auto term = [&](std::int64_t i) {
    long double li = static_cast<long double>(i);
    return lgn - std::lgamma(li + 1.0L) - std::lgamma(ln - li + 1.0L);
  };
  long double top = term(k);
  long double sum = 0.0L;
  for (std::int64_t i = k; i >= 0; --i) {
    long double r = std::exp(term(i) - top);
    sum += r;
    if (r < sum * 1e-21L) break;
  }
  long double logp = std::log(2.0L) + top + std::log(sum);
  if (logp >= 0.0L) return 1.0;
  return static_cast<double>(std::exp(logp));
}
}  // namespace detail

double mcnemar_exact_p(std::int64_t b, std::int64_t c) {
  std::int64_t n = b + c;
  if (n == 0) return 1.0;
  std::int64_t k = std::min(b, c);
  if (2 * k >= n) return 1.0;
  if (n > 62) return detail::mcnemar_exact_p_lgamma(b, c);
  // Exact: sum_{i<=k} C(n, i) < 2^(n-1) fits in 64 bits. C(n, i+1) = C(n, i) * (n-i) / (i+1)
  // divides exactly, and the product stays below 2^64 for n <= 62 and i < n/2 (its largest value,
  // C(62, 30) * 32, is about 1.44e19 < 1.84e19).
  std::uint64_t sum = 0, binom = 1;
  for (std::int64_t i = 0; i <= k; ++i) {
    sum += binom;
    binom = binom * static_cast<std::uint64_t>(n - i) / static_cast<std::uint64_t>(i + 1);
  }
  // p = 2 * sum / 2^n = sum / 2^(n-1).
  return std::min(1.0, std::ldexp(static_cast<double>(sum), -static_cast<int>(n - 1)));
}

double paired_difference(const PairCounts& t) {
  std::int64_t n = t.n();
  if (n == 0) return 0.0;
  return static_cast<double>(t.only_b - t.only_a) / static_cast<double>(n);
}

Interval paired_difference_interval(const PairCounts& t, double z) {
  std::int64_t n = t.n();
  if (n == 0) return {-1.0, 1.0};
  double nn = static_cast<double>(n);
  // Marginal rates: A verified in both + only_a; B verified in both + only_b.
  double pa = static_cast<double>(t.both + t.only_a) / nn;
  double pb = static_cast<double>(t.both + t.only_b) / nn;
  Interval wa = wilson(t.both + t.only_a, n, z);
  Interval wb = wilson(t.both + t.only_b, n, z);
  // phi: the correlation of the two outcomes over the pairs; 0 when a margin is empty.
  double a = static_cast<double>(t.both), b = static_cast<double>(t.only_a);
  double c = static_cast<double>(t.only_b), d = static_cast<double>(t.neither);
  double denom = (a + b) * (c + d) * (a + c) * (b + d);
  double phi = denom > 0 ? (a * d - b * c) / std::sqrt(denom) : 0.0;
  double delta = pb - pa;
  double lb = pb - wb.low, ub = wb.high - pb;  // distances of B's interval ends from pb
  double la = pa - wa.low, ua = wa.high - pa;  // and of A's from pa
  double low = delta - std::sqrt(std::max(0.0, lb * lb - 2.0 * phi * lb * ua + ua * ua));
  double high = delta + std::sqrt(std::max(0.0, ub * ub - 2.0 * phi * ub * la + la * la));
  return {std::max(-1.0, low), std::min(1.0, high)};
}

}  // namespace kforge::report
