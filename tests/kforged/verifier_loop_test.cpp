// kforged's verifier loop driven step by step: a ManualClock (through ClockedEnv), a real SQLite
// database in a temp dir, and the real local backend: a pool of one warm Python worker on the
// CPU with the stand-in Triton, verifying samples that wait in 'verify_queued'. The backoff and
// the drain are LoopPolicy's, the same as DaemonLoop's.

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/store/samples.hpp"
#include "loop_policy.hpp"
#include "testutil.hpp"
#include "verifier_loop.hpp"

namespace kforge::daemon {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(LoopPolicy, BacksOffPerFailureInARowAndDrainsUntilNothingIsLeftOrTheGraceEnds) {
  ManualClock clock;
  LoopPolicy p(clock, "test");
  EXPECT_EQ(LoopPolicy::backoff(1), 100ms);
  EXPECT_EQ(LoopPolicy::backoff(3), 300ms);
  EXPECT_EQ(LoopPolicy::backoff(80), 5000ms) << "at most 5 s";
  auto t0 = clock.steady_now();
  EXPECT_FALSE(p.after_step(Error("io", "down")));
  EXPECT_FALSE(p.after_step(Error("io", "down")));
  EXPECT_EQ(p.consecutive_errors(), 2);
  EXPECT_EQ(clock.steady_now() - t0, 300ms) << "slept on the clock";
  EXPECT_TRUE(p.after_step(Status()));
  EXPECT_EQ(p.consecutive_errors(), 0);

  EXPECT_FALSE(p.begin_drain(1s)) << "no stop asked";
  EXPECT_FALSE(p.drain_over(true)) << "not draining";
  p.request_stop();
  EXPECT_TRUE(p.begin_drain(1s));
  EXPECT_FALSE(p.begin_drain(1s)) << "once";
  EXPECT_EQ(p.drain_deadline(), clock.steady_now() + 1s);
  EXPECT_FALSE(p.drain_over(false));
  EXPECT_TRUE(p.drain_over(true));
  clock.advance(1s);
  EXPECT_TRUE(p.drain_over(false)) << "grace spent";
  LoopPolicy q(clock, "test");
  q.request_stop();
  ASSERT_TRUE(q.begin_drain(1h));
  q.request_stop();
  EXPECT_TRUE(q.drain_over(false)) << "a second stop ends the grace at once";
}

class VerifierLoopTest : public ::testing::Test {
 protected:
  void SetUp() override { db_ = open_db(); }

  std::unique_ptr<store::Db> open_db() {
    store::OpenOptions o;
    o.path = (dir_ / "kforge.db").string();
    auto db = store::Db::open(o);
    EXPECT_TRUE(db.ok()) << db.error().message;
    return db.ok() ? std::move(*db) : nullptr;
  }

  // A local pool of one CPU worker with the stand-in Triton; sample deadlines on the test's clock.
  verify::VerifierConfig cpu_config() const {
    verify::VerifierConfig c;
    c.devices = {"cpu"};
    c.cpu_workers = 1;
    c.python = "/usr/bin/python3";
    c.python_path = {(test::source_dir() / "tests" / "verify" / "fake_triton").string()};
    c.preload = {"triton", "triton.language"};
    c.timeout_s = 60;
    c.memory_cap_mb = 1024;
    c.mutant_check = false;
    c.work_dir = (dir_ / "verify-work").string();
    c.worker_start_timeout_s = 30;
    return c;
  }

  void start_loop() {
    queue_ = std::make_unique<pipeline::JobsVerifyQueue>(*db_);
    verify::PoolOptions o;
    o.config = cpu_config();
    o.env = &env_;
    auto b = verify::LocalBackend::create(*queue_, o, "hostA:1", "hostA:*");
    ASSERT_TRUE(b.ok()) << b.error().message;
    backend_ = std::move(*b);
    loop_ = std::make_unique<VerifierLoop>(
        VerifierLoop::Parts{*db_, *backend_, env_, shared_, backend_.get()}, config_path().string(),
        o.config);
  }

  std::filesystem::path config_path() const { return dir_ / "kforge.yaml"; }

  // n generated samples waiting in 'verify_queued', committed on a connection of their own (as
  // the daemon's LLM side would): vector_add.py's kernel with the wrapper and test
  // fake_llm_cpu.json answers for it, the test sleeping `sleep_s` first.
  void queue_samples(int n, double sleep_s) {
    auto db = open_db();
    ASSERT_TRUE(db);
    json corpus = json::parse(test::read_text(test::source_dir() / "tests/data/corpus_cpu.json"));
    json script =
        json::parse(test::read_text(test::source_dir() / "tests/pipeline/fake_llm_cpu.json"));
    json answer;
    for (const auto& r : script["rules"])
      if (r["name"] == "add_passes") answer = r["reply_json"];
    ASSERT_TRUE(answer.contains("unitest_code"));
    std::string t = answer["unitest_code"];
    t.insert(t.find("():\n") + 4,
             "    import time\n    time.sleep(" + std::to_string(sleep_s) + ")\n");
    answer["unitest_code"] = t;
    pipeline::JobStore jobs(*db, clock_, "cli");
    store::Samples samples(*db);
    for (int i = 0; i < n; ++i) {
      store::SampleRow r;
      r.key = "s" + std::to_string(next_sample_);
      r.code = corpus[0]["output"].get<std::string>() + "# " + r.key + "\n";
      r.code_sha256 = sha256_hex(r.code);
      r.record_json = json{{"key", r.key}}.dump();
      r.source = "test";
      r.source_index = next_sample_++;
      ASSERT_TRUE(samples.insert(r, clock_.wall_ms()).ok());
    }
    auto lib = pipeline::PromptLibrary::load(test::source_dir() / "prompts");
    ASSERT_TRUE(lib.ok()) << lib.error().message;
    const pipeline::PipelineSpec* spec = *lib->pipeline("v2");
    pipeline::NewRun run;
    run.tag = "r" + std::to_string(next_sample_);
    run.pipeline = "v2";
    run.model = "fake-model";
    run.first_stage = spec->first_stage();
    run.prompts = spec->identities();
    auto ids = jobs.sample_ids(-1);
    ASSERT_TRUE(ids.ok());
    for (auto id : *ids)
      if (id > last_sample_id_) run.sample_ids.push_back(id);
    last_sample_id_ = run.sample_ids.back();
    ASSERT_TRUE(jobs.create_run(run).ok());
    // Generated: generate's answer stored, the job at the verifier.
    auto ins = db->prepare(
        "INSERT INTO stage_outputs (job_id, run_id, sample_id, stage, attempt, status, "
        "prompt_version, prompt_sha256, parsed_text, created_ms) SELECT id, run_id, sample_id, "
        "'generate', 1, 'ok', 'v2', '', kf_put(?1), 0 FROM jobs WHERE state = 'queued'");
    ASSERT_TRUE(ins.ok()) << ins.error().message;
    const std::string parsed = answer.dump();
    ASSERT_TRUE(ins->bind(1, parsed).run().ok());
    ASSERT_TRUE(db->exec("UPDATE jobs SET state = 'verify_queued', stage = 'verify' WHERE state = "
                         "'queued'")
                    .ok());
  }

  // The first column of the first row of sql, read on a connection of its own.
  std::string text(const std::string& sql) {
    auto db = open_db();
    auto st = db->prepare(sql);
    EXPECT_TRUE(st.ok()) << sql;
    if (!st.ok()) return "";
    auto v = st->one([](store::Stmt& r) { return r.text(0); });
    EXPECT_TRUE(v.ok() && *v) << sql;
    return v.ok() && *v ? **v : "";
  }
  std::int64_t scalar(const std::string& sql) { return std::stoll(text(sql)); }

  // Steps the loop until pred holds (real time, at most `limit`); returns pred().
  bool step_until(const std::function<bool()>& pred, std::chrono::seconds limit = 60s) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!pred() && std::chrono::steady_clock::now() < until) {
      backend_->wake();  // an idle pool's wait ends at once
      if (!loop_->step()) return pred();
    }
    return pred();
  }
  verify::BackendStats stats() {
    std::lock_guard l(shared_.mu);
    return shared_.stats;
  }

  test::TempDir dir_;
  ManualClock clock_;
  ClockedEnv env_{clock_};
  std::unique_ptr<store::Db> db_;
  std::unique_ptr<pipeline::JobsVerifyQueue> queue_;
  std::unique_ptr<verify::LocalBackend> backend_;
  VerifierLoop::Shared shared_;
  std::unique_ptr<VerifierLoop> loop_;
  int next_sample_ = 0;
  std::int64_t last_sample_id_ = 0;
};

// The database breaks under the loop: steps fail, are kept for the log and back off on the
// clock; repaired, the next step succeeds and the count starts again.
TEST_F(VerifierLoopTest, AFailingStepBacksOffOnTheClockAndASuccessResetsIt) {
  ASSERT_NO_FATAL_FAILURE(start_loop());
  {
    auto other = open_db();
    ASSERT_TRUE(other->exec("ALTER TABLE jobs RENAME TO jobs_away").ok());
  }
  for (int i = 1; i <= 3; ++i) {
    auto before = clock_.steady_now();
    ASSERT_TRUE(loop_->step());
    EXPECT_EQ(loop_->consecutive_errors(), i);
    EXPECT_EQ(clock_.steady_now() - before, std::chrono::milliseconds(100 * i)) << "back-off";
  }
  {
    std::lock_guard l(shared_.mu);
    EXPECT_NE(shared_.last_error.find("jobs"), std::string::npos) << shared_.last_error;
  }
  {
    auto other = open_db();
    ASSERT_TRUE(other->exec("ALTER TABLE jobs_away RENAME TO jobs").ok());
  }
  backend_->wake();
  auto before = clock_.steady_now();
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->consecutive_errors(), 0);
  EXPECT_EQ(clock_.steady_now(), before) << "no back-off after a success";
}

// Idle, the backend waits up to kIdleWait for work, and a change of the database (the FileWatch
// calls notice_db_change) ends the wait; with work, it steps every kBusyWait.
TEST_F(VerifierLoopTest, AnIdleLoopWaitsForAChangeAndTheChangeWakesIt) {
  ASSERT_NO_FATAL_FAILURE(start_loop());
  ASSERT_TRUE(step_until([&] {
    auto d = backend_->pool().devices();
    return !d.empty() && d[0].ready_workers == 1;
  })) << "the worker is ready";
  EXPECT_EQ(loop_->next_wait(), VerifierLoop::kIdleWait);
  std::thread watch([this] {
    std::this_thread::sleep_for(300ms);
    loop_->notice_db_change();
  });
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(loop_->step());
  auto waited = std::chrono::steady_clock::now() - t0;
  watch.join();
  EXPECT_LT(waited, VerifierLoop::kIdleWait - 2s) << "the change ended the idle wait";

  ASSERT_NO_FATAL_FAILURE(queue_samples(1, 30));
  ASSERT_TRUE(step_until([&] { return stats().leased == 1; }));
  EXPECT_EQ(loop_->next_wait(), VerifierLoop::kBusyWait) << "a sample is being verified";
  EXPECT_EQ(text("SELECT state FROM jobs"), "verifying");
}

// A stop: no more leases; the sample being verified gets the grace period, then it is killed and
// its job goes back to the queue with no verdict.
TEST_F(VerifierLoopTest, AStopDrainsWithinTheGraceAndGivesTheRestBack) {
  ASSERT_NO_FATAL_FAILURE(queue_samples(1, 30));
  ASSERT_NO_FATAL_FAILURE(start_loop());
  ASSERT_TRUE(step_until([&] { return backend_->pool().in_flight() == 1; }));
  loop_->request_stop(10s);
  EXPECT_TRUE(loop_->step()) << "the sample in flight gets the grace period";
  EXPECT_EQ(loop_->drain_deadline(), clock_.steady_now() + 10s);
  EXPECT_EQ(loop_->next_wait(), VerifierLoop::kBusyWait);
  ASSERT_NO_FATAL_FAILURE(queue_samples(1, 30));  // arrives while draining
  clock_.advance(9'999ms);
  EXPECT_TRUE(loop_->step());
  EXPECT_TRUE(loop_->step());
  EXPECT_EQ(stats().leased, 1u) << "no lease while draining";
  clock_.advance(1ms);
  EXPECT_FALSE(loop_->step()) << "grace spent";
  ASSERT_TRUE(loop_->finish().ok());
  EXPECT_EQ(stats().requeued, 1u);
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued' AND lease_owner IS "
                   "NULL"),
            2);
  EXPECT_EQ(scalar("SELECT count(*) FROM verifications"), 0);
}

TEST_F(VerifierLoopTest, AStopEndsOnceTheSampleInFlightIsVerified) {
  ASSERT_NO_FATAL_FAILURE(queue_samples(1, 0.5));
  ASSERT_NO_FATAL_FAILURE(start_loop());
  ASSERT_TRUE(step_until([&] { return stats().leased == 1; }));
  loop_->request_stop(10s);
  ASSERT_NO_FATAL_FAILURE(queue_samples(1, 0));  // arrives while draining
  ASSERT_FALSE(step_until([] { return false; })) << "the loop ended";
  EXPECT_EQ(stats().leased, 1u) << "no lease while draining";
  EXPECT_EQ(stats().stored, 1u);
  ASSERT_TRUE(loop_->finish().ok());
  EXPECT_EQ(text("SELECT state || '|' || v.verdict FROM jobs j JOIN verifications v ON v.job_id = "
                 "j.id"),
            "done|passed");
  EXPECT_EQ(scalar("SELECT count(*) FROM jobs WHERE state = 'verify_queued'"), 1);
}

// SIGHUP: the reloadable settings take effect for the samples started from then on (here a
// shorter timeout that kills a sleeping test); a bad file keeps the running settings.
TEST_F(VerifierLoopTest, AReloadAppliesTheReloadableSettingsAndABadFileKeepsThem) {
  ASSERT_NO_FATAL_FAILURE(start_loop());
  test::write_text(config_path(), "verifier:\n  timeout_s: 2\n  devices: [cuda:7]\n");
  loop_->request_reload();
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->config().timeout_s, 2);
  EXPECT_EQ(backend_->pool().config().timeout_s, 2);
  EXPECT_EQ(loop_->config().devices, std::vector<std::string>{"cpu"}) << "takes a restart";

  ASSERT_NO_FATAL_FAILURE(queue_samples(1, 30));
  ASSERT_TRUE(step_until([&] { return backend_->pool().in_flight() == 1; }));
  clock_.advance(2'500ms);
  ASSERT_TRUE(step_until([&] { return stats().stored == 1; }));
  EXPECT_EQ(text("SELECT verdict FROM verifications"), "timeout");

  test::write_text(config_path(), "verifier:\n  timeout_s: nonsense\n");
  loop_->request_reload();
  ASSERT_TRUE(loop_->step());
  EXPECT_EQ(loop_->config().timeout_s, 2) << "kept";
  EXPECT_EQ(backend_->pool().config().timeout_s, 2);
}

}  // namespace
}  // namespace kforge::daemon
