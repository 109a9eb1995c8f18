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
    // The run records its stages and their kinds, as kforge run create does: the rate counts
    // the answers of its code stage.
    exec(
        "INSERT INTO runs (id, tag, pipeline, model, prompts_json, created_ms, updated_ms) VALUES "
        "(1, 'r', 'v1', 'm', '{\"generate\": {\"version\": \"v1\", \"kind\": \"code\"}}', 0, "
        "0)");
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
          "prompt_version, prompt_sha256, request_text, created_ms) VALUES "
          "(1, 1, 1, 'generate', 1, 'ok', 'v1', 'x', kf_put('{}'), " +
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

// The rows of `sql` (`cols` columns) as text, one line each.
std::string rows(store::Db& db, const std::string& sql, int cols = 1) {
  auto st = db.prepare(sql);
  EXPECT_TRUE(st.ok()) << st.error().message << "\n" << sql;
  if (!st.ok()) return {};
  std::string out;
  while (true) {
    auto row = st->step();
    EXPECT_TRUE(row.ok());
    if (!row.ok() || !*row) break;
    for (int c = 0; c < cols; ++c) out += (c > 0 ? "|" : "") + st->text(c);
    out += "\n";
  }
  return out;
}

// Every kept count (migration 0012) against the same count taken from the rows.
void expect_counts_match_rows(store::Db& db) {
  EXPECT_EQ(rows(db,
                 "SELECT run_id, state, stage, n FROM run_job_counts WHERE n > 0 "
                 "ORDER BY 1, 2, 3",
                 4),
            rows(db,
                 "SELECT run_id, state, stage, count(*) FROM jobs GROUP BY 1, 2, 3 "
                 "ORDER BY 1, 2, 3",
                 4));
  EXPECT_EQ(rows(db,
                 "SELECT run_id, stage, status, n, prompt_tokens, completion_tokens, "
                 "round(cost_usd, 9), first_ms, last_ms FROM run_output_totals "
                 "WHERE n > 0 ORDER BY 1, 2, 3",
                 9),
            rows(db,
                 "SELECT run_id, stage, status, count(*), sum(prompt_tokens), "
                 "sum(completion_tokens), round(sum(cost_usd), 9), min(created_ms), "
                 "max(created_ms) FROM stage_outputs GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
                 9));
  EXPECT_EQ(rows(db,
                 "SELECT run_tag, replayed, n, prompt_tokens, completion_tokens, "
                 "round(cost_usd, 9) FROM run_call_totals WHERE n > 0 ORDER BY 1, 2",
                 6),
            rows(db,
                 "SELECT run_tag, status = 'replayed', "
                 "count(*), sum(prompt_tokens), sum(completion_tokens), "
                 "round(sum(CASE WHEN status = 'replayed' THEN coalesce((SELECT o.cost_usd "
                 "FROM llm_calls o WHERE o.id = c.replay_of), 0) ELSE cost_usd END), 9) "
                 "FROM llm_calls c WHERE run_tag IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2",
                 6));
  EXPECT_EQ(rows(db,
                 "SELECT run_id, verdict, n FROM run_verdict_counts WHERE n > 0 "
                 "ORDER BY 1, 2",
                 3),
            rows(db,
                 "SELECT run_id, verdict, count(*) FROM verifications GROUP BY 1, 2 "
                 "ORDER BY 1, 2",
                 3));
}

// A second run, answers, calls (network, replayed, another run's, untagged), verdicts, state
// and stage changes, a deleted job: what a run's life does to the counted tables. `texts`: the
// schema keeps texts in `texts` (migration 0015) and calls their run (0026); false: a database
// from before both, whose calls name their run only in their label.
void live_a_little(store::Db& db, bool texts = true) {
  const std::string request_col = texts ? "request_text" : "request_json";
  const std::string request = texts ? "kf_put('{}')" : "'{}'";
  const std::string run_col = texts ? ", run_tag" : "";
  auto run_of = [&](const std::string& tag) { return texts ? ", " + tag : std::string(); };
  auto exec = [&](const std::string& sql) {
    auto st = db.exec(sql);
    ASSERT_TRUE(st.ok()) << st.error().message << "\n" << sql;
  };
  exec(
      "INSERT INTO runs (id, tag, pipeline, model, created_ms, updated_ms) VALUES "
      "(2, 'r2', 'v2', 'm', 0, 0)");
  exec(
      "INSERT INTO jobs (id, run_id, sample_id, state, stage, created_ms, updated_ms) VALUES "
      "(11, 2, 1, 'queued', 'analyze', 0, 0), (12, 2, 2, 'queued', 'analyze', 0, 0)");
  for (int i = 1; i <= 4; ++i) {
    std::string job = std::to_string(i);
    exec(
        "INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, "
        "prompt_version, prompt_sha256, " +
        request_col +
        ", prompt_tokens, completion_tokens, "
        "cost_usd, created_ms) VALUES (" +
        job + ", 1, " + job + ", 'generate', 1, '" + (i == 4 ? "rejected" : "ok") +
        "', 'v1', 'x', " + request + ", 100, 20, 0.0015, " + std::to_string(1000 * i) + ")");
    // A replayed call costs nothing; it points at the call it replays (which holds the cost).
    exec(
        "INSERT INTO llm_calls (request_sha256, tag, url, model, status, prompt_tokens, "
        "completion_tokens, cost_usd, created_ms, replay_of" +
        run_col + ") VALUES ('h" + job + "', 'run=r sample=k" + job +
        " stage=generate attempt=1', 'u', 'm', '" +
        (i == 3 ? "replayed', 100, 20, 0, 0, (SELECT id FROM llm_calls WHERE request_sha256 = 'h1')"
                : "ok', 100, 20, 0.0015, 0, NULL") +
        run_of("'r'") + ")");
  }
  exec(
      "INSERT INTO llm_calls (request_sha256, tag, url, model, status, prompt_tokens, "
      "completion_tokens, cost_usd, created_ms" +
      run_col +
      ") VALUES ('h9', 'run=r2 sample=k1 stage=analyze attempt=1', 'u', 'm', 'ok', 7, "
      "3, 0.5, 0" +
      run_of("'r2'") + "), ('h10', 'adhoc', 'u', 'm', 'ok', 7, 3, 0.5, 0" + run_of("NULL") + ")");
  exec("UPDATE jobs SET state = 'verify_queued', stage = 'verify' WHERE id IN (1, 2, 3)");
  exec("UPDATE jobs SET state = 'failed' WHERE id = 4");
  exec("UPDATE jobs SET updated_ms = 5 WHERE id = 5");  // no state or stage change
  exec("UPDATE jobs SET stage = 'generate' WHERE id = 11");
  for (int i = 1; i <= 3; ++i)
    exec("INSERT INTO verifications (job_id, run_id, sample_id, verdict, created_ms) VALUES (" +
         std::to_string(i) + ", 1, " + std::to_string(i) + ", '" + (i == 2 ? "failed" : "passed") +
         "', 0)");
  exec("UPDATE jobs SET state = 'done', stage = 'done' WHERE id IN (1, 2, 3)");
  exec("DELETE FROM jobs WHERE id = 2");  // its output and verdict go by ON DELETE CASCADE
}

TEST_F(Progress, KeptCountsFollowEveryChangeToTheRowsTheyCount) {
  expect_counts_match_rows(*db_);
  live_a_little(*db_);
  expect_counts_match_rows(*db_);
  auto all = collect_progress(*db_, kNow);
  ASSERT_TRUE(all.ok()) << all.error().message;
  ASSERT_EQ(all->size(), 2u);
  const RunProgress& p = all->front();
  EXPECT_EQ(p.total, 9);
  EXPECT_EQ(p.by_state.at("done"), 2);
  EXPECT_EQ(p.by_state.at("failed"), 1);
  EXPECT_EQ(p.by_state.at("queued"), 6);
  EXPECT_EQ(p.by_stage.at("done").at("done"), 2);
  EXPECT_EQ(p.outputs.at("generate").at("ok"), 2);
  EXPECT_EQ(p.outputs.at("generate").at("rejected"), 1);
  EXPECT_EQ(p.prompt_tokens, 300);  // network calls: 1, 2 and 4 (3 was replayed)
  EXPECT_EQ(p.completion_tokens, 60);
  EXPECT_NEAR(p.cost_usd, 0.0045, 1e-12);
  EXPECT_EQ(p.replayed_calls, 1);
  EXPECT_NEAR(p.saved_usd, 0.0015, 1e-12);
  EXPECT_EQ(p.verdicts.size(), 1u);
  EXPECT_EQ(p.verdicts.at("passed"), 2);
  EXPECT_TRUE(p.flags.empty());
  // Quality flags on the passing samples' latest verdicts, by flag: a later verdict of the same
  // sample replaces the earlier one.
  exec(
      "UPDATE verifications SET flags_json = '[\"weak_inputs\",\"constant_output\"]' "
      "WHERE sample_id = 1");
  exec(
      "INSERT INTO verifications (job_id, run_id, sample_id, verdict, flags_json, created_ms) "
      "VALUES (3, 1, 3, 'passed', '[\"weak_inputs\"]', 1)");
  all = collect_progress(*db_, kNow);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->front().flags,
            (std::map<std::string, std::int64_t>{{"constant_output", 1}, {"weak_inputs", 2}}));
  EXPECT_EQ(all->front().to_json()["quality_flags"]["weak_inputs"], 2);
  EXPECT_EQ(all->front().out_of_bounds, 0);
  // out_of_bounds is counted whatever the verdict: a passing sample the guard-zone check
  // flagged (also among the quality flags), and one whose run died of an illegal memory access.
  exec("UPDATE verifications SET flags_json = '[\"out_of_bounds\"]' WHERE sample_id = 3");
  exec(
      "INSERT INTO verifications (job_id, run_id, sample_id, verdict, flags_json, created_ms) "
      "VALUES (1, 1, 1, 'error', '[\"out_of_bounds\"]', 1)");
  all = collect_progress(*db_, kNow);
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(all->front().out_of_bounds, 2);
  EXPECT_EQ(all->front().flags.at("out_of_bounds"), 1);
  EXPECT_EQ(all->front().to_json()["out_of_bounds"], 2);
  const RunProgress& q = all->back();
  EXPECT_EQ(q.total, 2);
  EXPECT_EQ(q.by_stage.at("generate").at("queued"), 1);
  EXPECT_EQ(q.prompt_tokens, 7);

  ASSERT_TRUE(db_->exec("DELETE FROM runs WHERE id = 2").ok());
  EXPECT_EQ(rows(*db_, "SELECT count(*) FROM run_job_counts WHERE run_id = 2"), "0\n");
  expect_counts_match_rows(*db_);
}

// kforge status's speed flags: the label's flags over the passing samples' latest verdicts, and
// why the labels without figures were not timed (verification_speed, migration 0032).
TEST_F(Progress, SpeedFlagsAndWhyASampleWasNotTimed) {
  live_a_little(*db_);
  exec(
      "INSERT INTO verification_speed (verification_id, timed, reason, flags_json) "
      "SELECT id, 0, 'timing failed: OutOfMemoryError: CUDA out of memory', '[\"not_timed\"]' "
      "FROM verifications WHERE sample_id = 1");
  exec(
      "INSERT INTO verification_speed (verification_id, timed, speedup, pass_perf, flags_json) "
      "SELECT id, 1, 1.4, 0, '[\"library_work\"]' FROM verifications WHERE sample_id = 3");
  auto all = collect_progress(*db_, kNow);
  ASSERT_TRUE(all.ok()) << all.error().message;
  const RunProgress& p = all->front();
  using Pairs = std::vector<std::pair<std::string, std::int64_t>>;
  EXPECT_EQ(p.speed_flags, (Pairs{{"library_work", 1}, {"not_timed", 1}}));
  EXPECT_EQ(p.not_timed_reasons,
            (Pairs{{"timing failed: OutOfMemoryError: CUDA out of memory", 1}}));
  auto j = p.to_json();
  EXPECT_EQ(j["speed"]["flags"]["not_timed"], 1);
  EXPECT_EQ(j["speed"]["not_timed_reasons"][0]["reason"],
            "timing failed: OutOfMemoryError: CUDA out of memory");
}

// A run's cost is the sum over the calls stored with its tag in their run column (migration
// 0026), whatever their label says.
TEST_F(Progress, ARunsCostIsItsCallsByTheirRunColumnNotTheirLabel) {
  exec(
      "INSERT INTO llm_calls (request_sha256, tag, url, model, status, prompt_tokens, "
      "completion_tokens, cost_usd, created_ms, run_tag) VALUES "
      "('a', 'generate k1', 'u', 'm', 'ok', 11, 2, 0.25, 0, 'r'), "
      "('b', 'run=r sample=k2 stage=generate attempt=1', 'u', 'm', 'ok', 13, 3, 0.5, 0, NULL), "
      "('c', 'run=r sample=k3 stage=generate attempt=1', 'u', 'm', 'ok', 17, 5, 1.0, 0, 'r2')");
  auto p = progress();
  EXPECT_EQ(p.prompt_tokens, 11);
  EXPECT_EQ(p.completion_tokens, 2);
  EXPECT_NEAR(p.cost_usd, 0.25, 1e-12);
  EXPECT_EQ(rows(*db_, "SELECT run_tag, n, prompt_tokens FROM run_call_totals ORDER BY 1", 3),
            "r|1|11\nr2|1|17\n");
  ASSERT_TRUE(db_->exec("DELETE FROM llm_calls WHERE request_sha256 = 'a'").ok());
  EXPECT_EQ(rows(*db_, "SELECT run_tag, n, prompt_tokens FROM run_call_totals ORDER BY 1", 3),
            "r|0|0\nr2|1|17\n");
}

TEST(ProgressMigration, CountsAreFilledFromRowsStoredBeforeIt) {
  test::TempDir dir;
  store::OpenOptions o;
  o.path = (dir / "old.db").string();
  o.migrate = false;
  auto db = store::Db::open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  std::vector<EmbeddedFile> before;
  for (const auto& f : store::migrations())
    if (f.name < std::string_view("0012")) before.push_back(f);
  ASSERT_TRUE(store::migrate(**db, before).ok());
  ASSERT_TRUE((*db)
                  // Recorded before stages had kinds: migration 0017 gives generate its kind.
                  ->exec("INSERT INTO runs (id, tag, pipeline, model, prompts_json, created_ms, "
                         "updated_ms) VALUES (1, 'r', 'v1', 'm', "
                         "'{\"generate\": {\"version\": \"v1\"}}', 0, 0)")
                  .ok());
  for (int i = 1; i <= 10; ++i) {
    std::string n = std::to_string(i);
    ASSERT_TRUE((*db)
                    ->exec("INSERT INTO samples (id, key, code_sha256, code, record_json, source, "
                           "source_index, created_ms, updated_ms) VALUES (" +
                           n + ", 'k" + n + "', 'x', 'c', '{}', 'f', " + n +
                           ", 0, 0); INSERT INTO jobs (id, run_id, sample_id, state, stage, "
                           "created_ms, updated_ms) VALUES (" +
                           n + ", 1, " + n + ", 'queued', 'generate', 0, 0)")
                    .ok());
  }
  live_a_little(**db, /*texts=*/false);
  ASSERT_TRUE(store::migrate(**db, store::migrations()).ok());
  EXPECT_NE(rows(**db, "SELECT count(*) FROM run_output_totals"), "0\n");
  // The calls' run, from their labels (migration 0026): none for the untagged one.
  EXPECT_EQ(rows(**db, "SELECT coalesce(run_tag, '-') FROM llm_calls ORDER BY id"),
            "r\nr\nr\nr\nr2\n-\n");
  expect_counts_match_rows(**db);
  EXPECT_EQ(
      rows(**db, "SELECT json_extract(prompts_json, '$.generate.kind') FROM runs WHERE id = 1"),
      "code\n");
  // and the triggers go on from there
  ASSERT_TRUE((*db)->exec("UPDATE jobs SET state = 'cancelled' WHERE run_id = 2").ok());
  ASSERT_TRUE((*db)->exec("DELETE FROM verifications WHERE job_id = 1").ok());
  expect_counts_match_rows(**db);
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
