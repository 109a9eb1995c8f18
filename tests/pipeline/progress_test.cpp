// Progress of a run: the rate and ETA follow the recent speed, and routine events are not
// listed as errors.

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kforge/pipeline/progress.hpp"
#include "kforge/store/db.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

constexpr std::int64_t kNow = 1'800'000'000'000;

class Progress : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.path = (dir_ / "kforge.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    exec(
        "INSERT INTO runs (id, tag, pipeline, model, created_ms, updated_ms) VALUES "
        "(1, 'r', 'v1', 'm', 0, 0)");
    for (int i = 1; i <= 10; ++i) {
      exec(
          "INSERT INTO samples (id, key, code_sha256, code, record_json, source, source_index, "
          "created_ms, updated_ms) VALUES (" +
          std::to_string(i) + ", 'k" + std::to_string(i) + "', 'x', 'c', '{}', 'f', " +
          std::to_string(i) + ", 0, 0)");
      exec(
          "INSERT INTO jobs (id, run_id, sample_id, state, stage, created_ms, updated_ms) "
          "VALUES (" +
          std::to_string(i) + ", 1, " + std::to_string(i) + ", 'queued', 'generate', 0, 0)");
    }
  }
  void exec(const std::string& sql) {
    auto st = db_->exec(sql);
    ASSERT_TRUE(st.ok()) << st.error().message << "\n" << sql;
  }
  // `n` good generate answers, evenly from `from_ms` to `to_ms`.
  void answers(int n, std::int64_t from_ms, std::int64_t to_ms) {
    for (int i = 0; i < n; ++i) {
      std::int64_t t = from_ms + (to_ms - from_ms) * i / std::max(1, n - 1);
      exec(
          "INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, "
          "prompt_version, prompt_sha256, request_json, created_ms) VALUES "
          "(1, 1, 1, 'generate', 1, 'ok', 'v1', 'x', '{}', " +
          std::to_string(t) + ")");
    }
  }
  RunProgress progress() {
    auto p = collect_progress(*db_, kNow);
    EXPECT_TRUE(p.ok()) << p.error().message;
    return p.ok() && !p->empty() ? p->front() : RunProgress{};
  }

  test::TempDir dir_;
  std::unique_ptr<store::Db> db_;
};

TEST_F(Progress, TheRateFollowsTheLastHundredFinishesNotTheTenMinuteWindow) {
  answers(50, kNow - 9 * 60'000, kNow - 8 * 60'000);  // a slow start, then a stop
  answers(100, kNow - 6'000, kNow);                   // 100 in the last 6 s since a restart
  auto p = progress();
  EXPECT_NEAR(p.per_minute, 1000.0, 20.0);  // the old 10-minute window said 16.7
  ASSERT_TRUE(p.eta_s.has_value());
  EXPECT_EQ(*p.eta_s, 1);  // 10 jobs left at 1000/min
}

TEST_F(Progress, TheRateDecaysWhileNothingFinishes) {
  answers(100, kNow - 5 * 60'000 - 6'000, kNow - 5 * 60'000);  // stopped 5 minutes ago
  auto p = progress();
  EXPECT_LT(p.per_minute, 21.0);
  EXPECT_GT(p.per_minute, 19.0);
}

TEST_F(Progress, LeasesTakenBackAtARestartAreNotErrors) {
  exec(
      "INSERT INTO job_events (run_id, job_id, level, kind, message, created_ms) VALUES "
      "(1, 1, 'warn', 'lease_reclaimed', 'host:1 stopped without releasing the lease', " +
      std::to_string(kNow - 1000) + ")");
  exec(
      "INSERT INTO job_events (run_id, job_id, level, kind, message, created_ms) VALUES "
      "(1, 2, 'warn', 'llm:timeout', 'timed out', " +
      std::to_string(kNow - 1000) + ")");
  auto p = progress();
  ASSERT_EQ(p.errors.size(), 1u);
  EXPECT_EQ(p.errors[0].kind, "llm:timeout");
}

// The rate comes from a time window, so it is right from a few to tens of thousands of samples a
// minute (the window of the last 100 finishes capped it at 6,000), and the ETA follows from it.
TEST_F(Progress, TheRateIsRightFromTenToTwentyThousandAMinute) {
  for (double rate : {10.0, 100.0, 1'000.0, 6'000.0, 20'000.0}) {
    exec("DELETE FROM stage_outputs");
    // Steady finishes for the last 10 minutes (at most 2,000 rows), the newest just now.
    auto gap_ms = static_cast<std::int64_t>(60'000.0 / rate);
    int n = static_cast<int>(std::min(2'000.0, rate * 10));
    exec("BEGIN");
    answers(n, kNow - gap_ms * (n - 1), kNow);
    exec("COMMIT");
    auto p = progress();
    EXPECT_NEAR(p.per_minute, rate, rate * 0.02) << "at " << rate << "/min";
    ASSERT_TRUE(p.eta_s.has_value());
    // 10 jobs left.
    EXPECT_NEAR(static_cast<double>(*p.eta_s), std::ceil(10 * 60.0 / rate), 1.0) << rate;
  }
}

TEST_F(Progress, RateFromFinishTimes) {
  // Evenly spaced: exactly one per gap, also when the newest is a gap old; it decays once the
  // wait is longer than a gap (here 10 gaps).
  std::vector<std::int64_t> t;
  for (int i = 0; i < 50; ++i) t.push_back(kNow - 6'000 * i);  // 10 a minute
  EXPECT_NEAR(rate_per_minute(t, kNow), 10.0, 0.01);
  EXPECT_NEAR(rate_per_minute(t, kNow + 6'000), 10.0, 0.01);
  EXPECT_NEAR(rate_per_minute(t, kNow + 60'000), 10.0 * 50 / 59, 0.01);
  // A pause of an hour between two stretches: only the newer one counts.
  std::vector<std::int64_t> u;
  for (int i = 0; i < 20; ++i) u.push_back(kNow - 100 * i);  // 600 a minute
  for (int i = 0; i < 20; ++i) u.push_back(kNow - 3'600'000 - 100 * i);
  EXPECT_NEAR(rate_per_minute(u, kNow), 600.0, 1.0);
  EXPECT_EQ(rate_per_minute({}, kNow), 0.0);
}

// Failed jobs are listed by their real kind with a count and an example sample, and verdicts
// other than passed by their cause.
TEST_F(Progress, FailuresByKindAndVerdictsByCause) {
  exec(
      "UPDATE jobs SET state = 'failed', error_kind = 'rejected:unknown_kernel', error = 'the "
      "analysis names kernel foo, which the code does not define' WHERE id IN (1, 2, 3)");
  exec(
      "UPDATE jobs SET state = 'failed', error_kind = 'python_syntax', error = 'the code cannot "
      "be read: line 3: unterminated string' WHERE id = 4");
  exec(
      "UPDATE jobs SET state = 'failed', error_kind = 'llm:truncated', error = 'the answer was "
      "cut at max_tokens' WHERE id = 5");
  exec("UPDATE jobs SET state = 'done', stage = 'done' WHERE id IN (6, 7, 8)");
  for (int i : {6, 7})
    exec(
        "INSERT INTO verifications (job_id, run_id, sample_id, verdict, flags_json, detail, "
        "created_ms) VALUES (" +
        std::to_string(i) + ", 1, " + std::to_string(i) +
        ", 'error', '[\"environment\"]', 'ModuleNotFoundError: No module named torch', 0)");
  exec(
      "INSERT INTO verifications (job_id, run_id, sample_id, verdict, flags_json, detail, "
      "created_ms) VALUES (8, 1, 8, 'failed', '[]', 'AssertionError: Z != X.T', 0)");
  auto p = progress();
  ASSERT_EQ(p.failures.size(), 3u);
  EXPECT_EQ(p.failures[0].kind, "unknown_kernel");
  EXPECT_EQ(p.failures[0].stored, "rejected:unknown_kernel");
  EXPECT_EQ(p.failures[0].count, 3);
  EXPECT_EQ(p.failures[0].example_key, "k3");  // the newest
  EXPECT_NE(p.failures[0].example.find("kernel foo"), std::string::npos);
  // Equal counts in the order of the stored kind.
  EXPECT_EQ(p.failures[1].kind, "truncated");
  EXPECT_EQ(p.failures[1].example_key, "k5");
  EXPECT_EQ(p.failures[2].kind, "python_syntax");
  ASSERT_EQ(p.causes.size(), 2u);
  EXPECT_EQ(p.causes[0].verdict, "error");
  EXPECT_EQ(p.causes[0].cause, "environment");
  EXPECT_EQ(p.causes[0].count, 2);
  EXPECT_EQ(p.causes[1].cause, "sample");
  EXPECT_EQ(p.causes[1].example, "AssertionError: Z != X.T");
  EXPECT_EQ(p.ended, 8);
  EXPECT_NEAR(p.ended_fraction(), 0.8, 1e-9);
  auto j = p.to_json();
  EXPECT_EQ(j["failures"][0]["kind"], "unknown_kernel");
  EXPECT_EQ(j["verdict_causes"][0]["cause"], "environment");
}

}  // namespace
}  // namespace kforge::pipeline
