// Progress of a run: the rate and ETA follow the recent speed, and routine events are not
// listed as errors.

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kforge::pipeline
