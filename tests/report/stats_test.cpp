// Statistics checked against values worked out by hand (the working is beside each figure).

#include <gtest/gtest.h>

#include <cmath>

#include "kforge/report/stats.hpp"

namespace kforge::report {
namespace {

// z for 95%: the 97.5% point of the standard normal, 1.959963984540054 (any table).
constexpr double kZ95 = 1.959963984540054;

TEST(ReportStats, ZForConfidence) {
  EXPECT_NEAR(z_for_confidence(0.95), kZ95, 1e-12);
  EXPECT_NEAR(z_for_confidence(0.90), 1.6448536269514722, 1e-12);
  EXPECT_NEAR(z_for_confidence(0.99), 2.5758293035489004, 1e-12);
}

TEST(ReportStats, WilsonAgainstHandWorkedValues) {
  // k = 8, n = 10: p = 0.8, z^2 = 3.841459, z^2/n = 0.3841459, denominator 1.3841459.
  // centre = (0.8 + 3.841459/20) / 1.3841459 = 0.9920730 / 1.3841459 = 0.716740
  // half   = 1.959964 / 1.3841459 * sqrt(0.8*0.2/10 + 3.841459/400)
  //        = 1.416009 * sqrt(0.016 + 0.009603648) = 1.416009 * 0.160011 = 0.226578
  // interval = [0.490162, 0.943318]
  Interval w = wilson(8, 10, kZ95);
  EXPECT_NEAR(w.low, 0.490162, 2e-6);
  EXPECT_NEAR(w.high, 0.943318, 2e-6);

  // k = 0, n = 10: centre = 0.1920730 / 1.3841459 = 0.138766, half = 1.416009 * sqrt(0.009603648)
  // = 1.416009 * 0.0979982 = 0.138766: [0, 0.277533] (the lower end is 0 exactly).
  w = wilson(0, 10, kZ95);
  EXPECT_NEAR(w.low, 0.0, 1e-12);
  EXPECT_NEAR(w.high, 0.277533, 2e-6);

  // k = 5, n = 13 (run v1 of the fixture): p = 0.384615, z^2/n = 0.295497, denominator 1.295497.
  // centre = (0.384615 + 0.147748) / 1.295497 = 0.532364 / 1.295497 = 0.410934
  // half   = 1.512905 * sqrt(0.384615*0.615385/13 + 3.841459/676)
  //        = 1.512905 * sqrt(0.0182067 + 0.0056826) = 1.512905 * 0.154562 = 0.233838
  // interval = [0.177096, 0.644772]
  w = wilson(5, 13, kZ95);
  EXPECT_NEAR(w.low, 0.177096, 5e-6);
  EXPECT_NEAR(w.high, 0.644772, 5e-6);

  // No trials: nothing is known.
  w = wilson(0, 0, kZ95);
  EXPECT_EQ(w.low, 0.0);
  EXPECT_EQ(w.high, 1.0);
  // All successes: the upper end is 1, the lower end is n / (n + z^2) = 10 / 13.841459 = 0.722467.
  w = wilson(10, 10, kZ95);
  EXPECT_NEAR(w.high, 1.0, 1e-12);
  EXPECT_NEAR(w.low, 0.722467, 2e-6);
}

TEST(ReportStats, McNemarExactAgainstHandWorkedValues) {
  // p = min(1, 2 * sum_{i <= min(b,c)} C(b+c, i) / 2^(b+c)).
  // b=3, c=5: n=8, C(8,0..3) = 1 + 8 + 28 + 56 = 93; p = 186/256 = 0.7265625.
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(3, 5), 0.7265625);
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(5, 3), 0.7265625);
  // b=2, c=8: n=10, 1 + 10 + 45 = 56; p = 112/1024 = 0.109375.
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(2, 8), 0.109375);
  // b=1, c=9: 1 + 10 = 11; p = 22/1024 = 0.021484375.
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(1, 9), 0.021484375);
  // b=0, c=5: p = 2/32 = 0.0625 (five flips one way can never reach 0.05).
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(0, 5), 0.0625);
  // b=0, c=10: p = 2/1024 = 0.001953125.
  EXPECT_DOUBLE_EQ(mcnemar_exact_p(0, 10), 0.001953125);
  // b=10, c=30: sum_{i<=10} C(40, i) = 1,221,246,132 (integer sum);
  // p = 2,442,492,264 / 1,099,511,627,776 = 0.00222143377322936.
  EXPECT_NEAR(mcnemar_exact_p(10, 30), 2442492264.0 / 1099511627776.0, 1e-17);
  // Ties and no discordant pairs: no evidence at all.
  EXPECT_EQ(mcnemar_exact_p(4, 4), 1.0);
  EXPECT_EQ(mcnemar_exact_p(0, 0), 1.0);
  // b=1, c=2: 2 * (1 + 3) / 8 = 1: capped at 1.
  EXPECT_EQ(mcnemar_exact_p(1, 2), 1.0);
}

TEST(ReportStats, McNemarLargeCountsAreStable) {
  // b=450, c=550: the exact value 2 * sum_{i<=450} C(1000, i) / 2^1000, evaluated with exact
  // integers, is 0.0017305360849763. Check of plausibility: the normal approximation with
  // continuity correction, z = (|550 - 450| - 1) / sqrt(1000) = 3.1307, gives p = 0.00174.
  EXPECT_NEAR(mcnemar_exact_p(450, 550) / 0.0017305360849763176, 1.0, 1e-9);
  // Far beyond 64-bit binomials: finite, in [0, 1], symmetric.
  double p = mcnemar_exact_p(1'000'000, 1'003'000);
  EXPECT_TRUE(std::isfinite(p));
  EXPECT_GT(p, 0.0);
  EXPECT_LT(p, 0.05);  // z = 3000 / sqrt(2,003,000) = 2.12: about 0.034
  EXPECT_NEAR(p, 0.034, 0.002);
  EXPECT_EQ(p, mcnemar_exact_p(1'003'000, 1'000'000));
  EXPECT_EQ(mcnemar_exact_p(2'000'000, 2'000'000), 1.0);
  // 2^-4999 is below the smallest double: 0, not NaN.
  double tiny = mcnemar_exact_p(0, 5000);
  EXPECT_FALSE(std::isnan(tiny));
  EXPECT_EQ(tiny, 0.0);
}

TEST(ReportStats, McNemarLogGammaPathAgreesWithExactIntegers) {
  // Every (b, c) with b + c <= 62 both ways: the paths must agree to 1e-10 relative.
  for (std::int64_t n = 1; n <= 62; ++n)
    for (std::int64_t b = 0; b <= n; ++b) {
      double exact = mcnemar_exact_p(b, n - b);
      double lg = detail::mcnemar_exact_p_lgamma(b, n - b);
      ASSERT_NEAR(lg / exact, 1.0, 1e-10) << "b=" << b << " c=" << n - b;
    }
  // And across the switch from one path to the other, the p-value keeps falling.
  EXPECT_GT(mcnemar_exact_p(20, 42), mcnemar_exact_p(20, 43));
}

TEST(ReportStats, PairedDifferenceNewcombeAgainstHandWorkedValues) {
  // The fixture's v1 (A) against v2 (B): both 2, only A 3, only B 5, neither 3; n = 13.
  // pA = 5/13 = 0.384615 with Wilson [0.177096, 0.644772];
  // pB = 7/13 = 0.538462 with Wilson [0.291438, 0.767939]
  //   (centre (0.538462 + 0.147748) / 1.295497 = 0.529688,
  //    half 1.512905 * sqrt(0.538462*0.461538/13 + 0.0056826) = 1.512905 * 0.157479 = 0.238251).
  // phi = (a d - b c) / sqrt((a+b)(c+d)(a+c)(b+d)) = (2*3 - 3*5) / sqrt(5*8*7*6)
  //     = -9 / 40.98780 = -0.219578.
  // delta = pB - pA = 2/13 = 0.153846.
  // Distances: lB = pB - lowB = 0.247024, uB = highB - pB = 0.229478,
  //            lA = pA - lowA = 0.207519, uA = highA - pA = 0.260157.
  // low  = delta - sqrt(lB^2 - 2 phi lB uA + uA^2)
  //      = 0.153846 - sqrt(0.061021 + 0.028223 + 0.067682) = 0.153846 - 0.396139 = -0.242293
  // high = delta + sqrt(uB^2 - 2 phi uB lA + lA^2)
  //      = 0.153846 + sqrt(0.052660 + 0.020913 + 0.043064) = 0.153846 + 0.341522 = 0.495368
  PairCounts t{2, 3, 5, 3};
  EXPECT_NEAR(paired_difference(t), 2.0 / 13.0, 1e-15);
  Interval d = paired_difference_interval(t, kZ95);
  EXPECT_NEAR(d.low, -0.242293, 1e-5);
  EXPECT_NEAR(d.high, 0.495368, 1e-5);

  // A table with an empty margin (nobody in A failed: b + d = 0): phi is taken as 0.
  // both 2, only B 1, n = 3: pA = 2/3, pB = 1. Wilson(2, 3) = [0.207660, 0.938508] and
  // Wilson(3, 3) = [0.438503, 1]:
  // low  = 1/3 - sqrt((1 - 0.438503)^2 + (0.938508 - 0.666667)^2)
  //      = 0.333333 - sqrt(0.315279 + 0.073898) = 0.333333 - 0.623840 = -0.290507
  // high = 1/3 + sqrt((1 - 1)^2 + (0.666667 - 0.207660)^2) = 0.333333 + 0.459007 = 0.792340
  d = paired_difference_interval(PairCounts{2, 0, 1, 0}, kZ95);
  EXPECT_NEAR(d.low, -0.290507, 1e-5);
  EXPECT_NEAR(d.high, 0.792340, 1e-5);

  // No pairs: nothing known.
  d = paired_difference_interval(PairCounts{}, kZ95);
  EXPECT_EQ(d.low, -1.0);
  EXPECT_EQ(d.high, 1.0);
  // The interval always holds the estimate and stays within [-1, 1].
  for (PairCounts x : {PairCounts{0, 0, 40, 0}, PairCounts{0, 40, 0, 0}, PairCounts{100, 1, 9, 3},
                       PairCounts{1, 0, 0, 1}}) {
    Interval i = paired_difference_interval(x, kZ95);
    double e = paired_difference(x);
    EXPECT_LE(i.low, e);
    EXPECT_GE(i.high, e);
    EXPECT_GE(i.low, -1.0);
    EXPECT_LE(i.high, 1.0);
  }
}

}  // namespace
}  // namespace kforge::report
