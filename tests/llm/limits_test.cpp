#include <gtest/gtest.h>

#include "kforge/llm/limits.hpp"

namespace kforge::llm {
namespace {

TimePoint t0() {
  return TimePoint{} + std::chrono::hours(1);
}

TEST(TokenBucket, PacesAtTheRateAfterABurstOfATenthOfAMinute) {
  TokenBucket b(60);  // one per second, burst 6
  TimePoint now = t0();
  TimePoint ready{};
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(b.try_take(1, now, &ready)) << i;
  EXPECT_FALSE(b.try_take(1, now, &ready));
  EXPECT_EQ(ready - now, Millis(1000));
  EXPECT_FALSE(b.try_take(1, now + Millis(999), &ready));
  EXPECT_TRUE(b.try_take(1, now + Millis(1000), &ready));
}

TEST(TokenBucket, UnlimitedAndLargeCosts) {
  TokenBucket none(0);
  EXPECT_TRUE(none.unlimited());
  EXPECT_TRUE(none.try_take(1e9, t0(), nullptr));

  TokenBucket tpm(6000);  // 100 tokens/s, capacity 600
  TimePoint now = t0();
  TimePoint ready{};
  EXPECT_TRUE(tpm.try_take(5000, now, &ready));  // larger than the capacity: allowed when full
  EXPECT_LT(tpm.level(now), 0);
  EXPECT_FALSE(tpm.try_take(100, now, &ready));
  EXPECT_EQ(ready - now, Millis(45'000));  // from -4400 up to 100 at 100/s
  // A correction: the request used 100 tokens, not 5000.
  tpm.adjust(4900, now);
  EXPECT_NEAR(tpm.level(now), 500, 1e-9);
  EXPECT_TRUE(tpm.try_take(100, now, &ready));
}

TEST(TokenBucket, RateChangeKeepsLevel) {
  TokenBucket b(600);  // capacity 60
  TimePoint now = t0();
  EXPECT_TRUE(b.try_take(50, now, nullptr));
  b.set_rate(60, now);  // capacity 6, level clamped to 6 at most
  EXPECT_NEAR(b.level(now), 6, 1e-9);
  EXPECT_TRUE(b.try_take(6, now, nullptr));
  EXPECT_FALSE(b.try_take(1, now, nullptr));
}

TEST(AdaptiveConcurrency, CutsOnOverloadAndGrowsBackAdditively) {
  AdaptiveConcurrency::Params p;
  p.min = 2;
  p.max = 16;
  p.initial = 16;  // past slow start
  p.cooldown = Millis(1000);
  AdaptiveConcurrency a(p);
  TimePoint now = t0();
  EXPECT_EQ(a.limit(), 16);
  EXPECT_TRUE(a.on_overload(now));
  EXPECT_EQ(a.limit(), 8);
  EXPECT_FALSE(a.on_overload(now + Millis(10)));  // within the cooldown: one burst, one cut
  EXPECT_EQ(a.limit(), 8);
  EXPECT_TRUE(a.on_overload(now + Millis(1500)));
  EXPECT_EQ(a.limit(), 4);
  a.on_overload(now + Millis(3000));
  a.on_overload(now + Millis(4500));
  EXPECT_EQ(a.limit(), 2);  // never below min
  // Additive increase: one slot per `limit` successes.
  for (int i = 0; i < 2; ++i) a.on_success(Millis(10), now);
  EXPECT_EQ(a.limit(), 3);
  for (int i = 0; i < 3; ++i) a.on_success(Millis(10), now);
  EXPECT_EQ(a.limit(), 4);
}

TEST(AdaptiveConcurrency, CutsWhenLatencyClimbsFarAboveItsBaseline) {
  AdaptiveConcurrency::Params p;
  p.max = 32;
  p.initial = 32;
  p.latency_factor = 3;
  p.cooldown = Millis(0);
  AdaptiveConcurrency a(p);
  TimePoint now = t0();
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(a.on_success(Millis(100), now));
  EXPECT_NEAR(a.baseline_ms(), 100, 1);
  EXPECT_EQ(a.limit(), 32);
  // One long completion is not an overload.
  EXPECT_FALSE(a.on_success(Millis(5000), now));
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(a.on_success(Millis(100), now));
  // A run of them is: the median of the last 9 crosses 3x the baseline on the 5th.
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(a.on_success(Millis(2000), now + Millis(i))) << i;
  EXPECT_TRUE(a.on_success(Millis(2000), now + Millis(4)));
  EXPECT_EQ(a.limit(), 16);
}

TEST(AdaptiveConcurrency, NewParamsMoveAnUncutLimitToTheNewMaximum) {
  AdaptiveConcurrency::Params p;
  p.initial = p.max;
  AdaptiveConcurrency a(p);
  p.max = 64;
  a.set_params(p);
  EXPECT_EQ(a.limit(), 64);
  a.on_overload(t0());
  EXPECT_EQ(a.limit(), 32);
  p.max = 128;
  a.set_params(p);
  EXPECT_EQ(a.limit(), 32);  // a cut limit grows back on its own
  p.max = 8;
  a.set_params(p);
  EXPECT_EQ(a.limit(), 8);
}

TEST(AdaptiveConcurrency, SlowStartDoublesPerRoundUntilTheFirstCutThenGrowsByOne) {
  AdaptiveConcurrency::Params p;
  p.max = 64;
  p.initial = 2;
  AdaptiveConcurrency a(p);
  TimePoint now = t0();
  EXPECT_EQ(a.limit(), 2);
  for (int i = 0; i < 2; ++i) a.on_success(Millis(10), now);
  EXPECT_EQ(a.limit(), 4);  // one round of 2 successes doubled it
  for (int i = 0; i < 4; ++i) a.on_success(Millis(10), now);
  EXPECT_EQ(a.limit(), 8);
  a.on_overload(now);
  EXPECT_EQ(a.limit(), 4);
  for (int i = 0; i < 4; ++i) a.on_success(Millis(10), now);
  EXPECT_EQ(a.limit(), 5);  // additive after the cut
  a.restart();
  EXPECT_EQ(a.limit(), 2);  // after a halt: slow start again
  for (int i = 0; i < 2; ++i) a.on_success(Millis(10), now);
  EXPECT_EQ(a.limit(), 4);
}

TEST(AdaptiveConcurrency, DisabledStaysAtMax) {
  AdaptiveConcurrency::Params p;
  p.max = 8;
  p.enabled = false;
  AdaptiveConcurrency a(p);
  EXPECT_FALSE(a.on_overload(t0()));
  EXPECT_EQ(a.limit(), 8);
}

TEST(RetryAfter, SecondsAndHttpDates) {
  std::int64_t now_ms = 1'700'000'000'000;  // Tue, 14 Nov 2023 22:13:20 GMT
  EXPECT_EQ(parse_retry_after("120", now_ms), Millis(120'000));
  EXPECT_EQ(parse_retry_after(" 0 ", now_ms), Millis(0));
  EXPECT_EQ(parse_retry_after("1.5", now_ms), Millis(1500));
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:15:20 GMT", now_ms), Millis(120'000));
  EXPECT_EQ(parse_retry_after("Tue, 14 Nov 2023 22:00:00 GMT", now_ms), Millis(0));  // past
  EXPECT_FALSE(parse_retry_after("soon", now_ms));
  EXPECT_FALSE(parse_retry_after("", now_ms));
  EXPECT_FALSE(parse_retry_after("-5", now_ms));
}

TEST(ResetDuration, OpenAiFormats) {
  EXPECT_EQ(parse_reset_duration("1s"), Millis(1000));
  EXPECT_EQ(parse_reset_duration("6m0s"), Millis(360'000));
  EXPECT_EQ(parse_reset_duration("20ms"), Millis(20));
  EXPECT_EQ(parse_reset_duration("1h2m3.5s"), Millis(3'723'500));
  EXPECT_EQ(parse_reset_duration("12.5"), Millis(12'500));
  EXPECT_FALSE(parse_reset_duration("later"));
  EXPECT_FALSE(parse_reset_duration("5x"));
}

}  // namespace
}  // namespace kforge::llm
