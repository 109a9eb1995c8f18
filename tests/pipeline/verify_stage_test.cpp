// The verifier side of the pipeline on databases the real daemon wrote: the local verify backend
// driven directly over the jobs' queue (a verdict flagged `infrastructure` goes back to
// 'verify_queued'; 'verifying' jobs of another owner are taken back only once their lease has
// expired), and pipeline.verify_backlog holding the LLM side back; `kforge run cancel` stopping
// what the real kforged's pool holds.

#include <gtest/gtest.h>

#include "daemon_util.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/core/env.hpp"
#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/local_backend.hpp"

namespace kforge::pipeline::e2e {
namespace {

const char* kVerifyQueued = "SELECT count(*) FROM jobs WHERE state = 'verify_queued'";

// The real daemon (verifier off) takes `n` samples of `corpus` through the LLM stages of
// fake_script; they then wait in 'verify_queued'.
void fill_verify_queue(Site& site, const fs::path& corpus, int n) {
  site.import_corpus(corpus);
  site.create_run("v1", "v1", {"--limit", std::to_string(n)});
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for(kVerifyQueued, n, 60s), n) << d->log();
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait(20s), std::optional<int>(0)) << d->log();
}

// fake_llm_cpu.json with tests that sleep `seconds` first: long enough to be caught verifying.
json slow_cpu_script(double seconds) {
  json s = script("fake_llm_cpu.json");
  for (auto& rule : s["rules"]) {
    if (!rule["reply_json"].contains("unitest_code")) continue;
    std::string t = rule["reply_json"]["unitest_code"];
    auto body = t.find("():\n");
    if (body == std::string::npos) continue;
    t.insert(body + 4, "    import time\n    time.sleep(" + std::to_string(seconds) + ")\n");
    rule["reply_json"]["unitest_code"] = t;
  }
  return s;
}

verify::PoolOptions cpu_pool(const Site& site) {
  verify::PoolOptions o;
  o.config.devices = {"cpu"};
  o.config.cpu_workers = 2;
  o.config.python = "/usr/bin/python3";
  o.config.python_path = {fake_triton_dir().string()};
  o.config.preload = {"triton", "triton.language"};
  o.config.timeout_s = 20;
  o.config.memory_cap_mb = 1024;
  o.config.work_dir = (site.dir().path() / "verify-work").string();
  o.config.worker_start_timeout_s = 30;
  return o;
}

// Steps the stage until pred holds (at most `limit`); returns pred().
bool step_until(verify::LocalBackend& stage, const std::function<bool()>& pred,
                std::chrono::milliseconds limit = 60s) {
  auto until = std::chrono::steady_clock::now() + limit;
  while (!pred() && std::chrono::steady_clock::now() < until) {
    auto st = stage.step(50ms);
    if (!st.ok()) {
      ADD_FAILURE() << st.error().message;
      return false;
    }
  }
  return pred();
}

TEST(VerifyStage, AnInfrastructureVerdictPutsTheJobBackInTheQueueWithNoVerdictStored) {
  Site site(script("fake_llm_cpu.json"));
  fill_verify_queue(site, cpu_corpus(), 2);
  // A GPU whose workers never start (its torch says CUDA is unavailable): the device leaves the
  // rotation and every sample comes back as an error of the verifier itself.
  verify::PoolOptions o = cpu_pool(site);
  o.config.python_path = {(test::source_dir() / "tests" / "verify" / "fake_gpu_broken").string()};
  o.config.preload = {"torch"};
  o.config.workers_per_device = 1;
  o.config.max_start_failures = 1;
  o.devices = {verify::Device{"cuda:0", verify::Vendor::nvidia, 0, "Fake GPU", ""}};
  auto db = site.open_db();
  JobsVerifyQueue queue(*db);
  auto stage = verify::LocalBackend::create(queue, o, "hostA:1", "hostA:*");
  ASSERT_TRUE(stage.ok()) << stage.error().message;
  verify::LocalBackend& s = **stage;
  ASSERT_TRUE(step_until(s, [&] { return s.stats().requeued >= 2; }))
      << "requeued " << s.stats().requeued << ", stored " << s.stats().stored;
  s.drain();
  ASSERT_TRUE(step_until(s, [&] { return s.idle(); }));
  EXPECT_EQ(s.stats().stored, 0u);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), 0);
  EXPECT_EQ(site.rows("SELECT state, stage, coalesce(error_kind, ''), coalesce(lease_owner, '') "
                      "FROM jobs ORDER BY id",
                      4),
            (std::vector<std::string>{"verify_queued|verify|verifier|",
                                      "verify_queued|verify|verifier|"}));
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE coalesce(error, '') = ''"), 0)
      << "the verifier's reason is kept on the job";
}

// The verifier cannot run a sample (flagged `infrastructure`) again and again: the job goes back
// to the queue with a growing wait (not leased before it), and at the cap it ends with an `error`
// verdict naming the cause instead of looping.
TEST(VerifyStage, InfrastructureRequeuesAreCappedWithBackOffThenEndedWithAVerdict) {
  Site site(script("fake_llm_cpu.json"));
  fill_verify_queue(site, cpu_corpus(), 1);
  auto db = site.open_db();
  JobsVerifyQueue queue(
      *db, RequeuePolicy{.max_requeues = 3, .backoff_ms = 1000, .max_backoff_ms = 600'000});
  std::int64_t now = system_clock().wall_ms();
  auto lease = [&](std::int64_t at) {
    auto r = queue.lease("hostD:1", at + 60'000, at);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : std::nullopt;
  };
  verify::VerifyResult infra;
  infra.verdict = verify::Verdict::error;
  infra.flags = {verify::kInfrastructure};
  infra.detail = "harness: source code string cannot contain null bytes";
  auto fail_once = [&](const verify::LeasedSample& l, std::int64_t at) {
    auto tx = store::Transaction::begin(*db);
    EXPECT_TRUE(tx.ok());
    auto out = queue.store_verdict("hostD:1", l.job, infra, at);
    EXPECT_TRUE(out.ok()) << out.error().message;
    EXPECT_TRUE(tx->commit().ok());
    return out.ok() ? *out : verify::VerdictOutcome::lost;
  };
  auto first = lease(now);
  ASSERT_TRUE(first);
  EXPECT_EQ(fail_once(*first, now), verify::VerdictOutcome::requeued);
  EXPECT_EQ(site.scalar("SELECT not_before_ms FROM jobs"), now + 1000);
  EXPECT_FALSE(lease(now + 999)) << "waits out its back-off";
  auto second = lease(now + 1000);  // due: leased at once, not kRecheckEmptyMs later
  ASSERT_TRUE(second);
  now += 1000;
  EXPECT_EQ(fail_once(*second, now), verify::VerdictOutcome::requeued);
  EXPECT_EQ(site.scalar("SELECT not_before_ms FROM jobs"), now + 2000) << "doubled";
  EXPECT_FALSE(lease(now + 1999));
  auto third = lease(now + 2000);
  ASSERT_TRUE(third);
  now += 2000;
  EXPECT_EQ(fail_once(*third, now), verify::VerdictOutcome::stored);
  EXPECT_EQ(site.rows("SELECT state, verify_requeues FROM jobs", 2),
            std::vector<std::string>{"done|2"});
  EXPECT_EQ(site.rows("SELECT verdict, flags_json, detail FROM verifications", 3),
            std::vector<std::string>{
                "error|[\"infrastructure\"]|the verifier could not run this sample 3 times in a "
                "row (verifier.max_requeues 3); the last time: harness: source code string "
                "cannot contain null bytes"});
  EXPECT_FALSE(lease(now + 600'000));
}

// An idle verifier asks the queue often. After a lease that found nothing, the queue answers
// without a query until another connection commits (a job put back by a retry, a run resumed),
// the queue itself writes (a release), or kRecheckEmptyMs pass; what any of those makes leasable
// is leased at once.
TEST(VerifyStage, AnEmptyQueueLooksAgainWhenAnotherConnectionCommitsOrItWritesItself) {
  Site site(script("fake_llm_cpu.json"));
  fill_verify_queue(site, cpu_corpus(), 2);
  auto db = site.open_db();
  JobsVerifyQueue queue(*db);
  const std::int64_t now = system_clock().wall_ms();
  auto lease = [&](std::int64_t at) {
    auto r = queue.lease("hostC:1", at + 60'000, at);
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? *r : std::nullopt;
  };
  auto a = lease(now), b = lease(now);
  ASSERT_TRUE(a && b);
  EXPECT_FALSE(lease(now)) << "both taken";

  // Another connection puts one back, as `kforge retry` does.
  auto other = site.open_db();
  ASSERT_TRUE(other
                  ->exec("UPDATE jobs SET state = 'verify_queued', lease_owner = NULL, "
                         "lease_expires_ms = NULL WHERE id = " +
                         std::to_string(a->job.job_id))
                  .ok());
  auto again = lease(now + 1);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->job.job_id, a->job.job_id);
  EXPECT_FALSE(lease(now + 2));

  // The queue's own release is seen at once (its connection's writes move no data_version).
  auto released =
      queue.release(b->job.job_id, "hostC:1", verify::Release::requeue, std::nullopt, now + 3);
  ASSERT_TRUE(released.ok() && *released);
  auto back = lease(now + 4);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->job.job_id, b->job.job_id);

  // Written on the queue's own connection behind its back: seen after kRecheckEmptyMs.
  EXPECT_FALSE(lease(now + 5));
  ASSERT_TRUE(db->exec("UPDATE jobs SET state = 'verify_queued', lease_owner = NULL WHERE id = " +
                       std::to_string(b->job.job_id))
                  .ok());
  EXPECT_FALSE(lease(now + 6));
  EXPECT_TRUE(lease(now + 5 + JobsVerifyQueue::kRecheckEmptyMs));
}

TEST(VerifyStage, AnotherOwnersVerifyingJobsAreTakenBackOnlyWhenTheirLeaseHasExpired) {
  // hostB's daemon is killed while it verifies two samples that pass (their tests sleep first).
  Site site(slow_cpu_script(2));
  Options opt;
  opt.verify = true;
  opt.fake_triton = true;
  opt.owner = "hostB";
  site.write_config(opt);
  site.import_corpus(cpu_corpus());
  site.create_run("v1", "v1", {"--limit", "2"});  // vector_add.py, vector_sub.py
  const char* by_b =
      "SELECT count(*) FROM jobs WHERE state = 'verifying' AND lease_owner LIKE 'hostB:%'";
  {
    auto d = site.start_daemon();
    ASSERT_EQ(site.wait_for(by_b, 2, 60s), 2) << d->log();
    d->kill9();
  }
  ASSERT_EQ(site.scalar(by_b), 2);
  ASSERT_EQ(site.scalar("SELECT count(*) FROM verifications"), 0);
  // The later of the two leases (the jobs may have been leased a moment apart).
  const std::int64_t expires = site.scalar("SELECT max(lease_expires_ms) FROM jobs");

  auto db = site.open_db();
  JobsVerifyQueue queue(*db);
  ManualClock clock(system_clock().wall_ms());
  ClockedEnv env(clock);
  ASSERT_GT(site.scalar("SELECT min(lease_expires_ms) FROM jobs"), clock.wall_ms());
  verify::PoolOptions o = cpu_pool(site);
  o.env = &env;
  {
    // hostC starts before the lease expires: hostB may still be alive, so its jobs stay.
    auto c = verify::LocalBackend::create(queue, o, "hostC:1", "hostC:*");
    ASSERT_TRUE(c.ok()) << c.error().message;
    for (int i = 0; i < 5; ++i) ASSERT_TRUE((*c)->step(20ms).ok());
    EXPECT_EQ((*c)->stats().leased, 0u);
    EXPECT_EQ(site.scalar(by_b), 2);
  }
  clock.advance(std::chrono::milliseconds(expires - clock.wall_ms()));
  auto c = verify::LocalBackend::create(queue, o, "hostC:2", "hostC:*");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(site.scalar(by_b), 0) << "taken back when the stage starts";
  ASSERT_TRUE(step_until(**c, [&] { return (*c)->stats().stored >= 2; }))
      << "stored " << (*c)->stats().stored;
  EXPECT_EQ((*c)->stats().leased, 2u);
  EXPECT_EQ(site.rows("SELECT j.state || '|' || v.verdict || '|' || v.attempt FROM jobs j JOIN "
                      "verifications v ON v.job_id = j.id ORDER BY j.id",
                      1),
            (std::vector<std::string>{"done|passed|1", "done|passed|1"}));
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL"), 0);
}

// `kforge run cancel` of a dataset run whose jobs are with the real kforged's verifier (two
// running on the pool's two slots, one waiting for a slot): the waiting one never starts, the
// running ones are stopped, nothing of them is stored, and every job ends cancelled (before, the
// cancel left them 'verifying' and the pool ran them to their end and stored them as done).
TEST(VerifyStage, CancellingARunStopsTheSamplesTheVerifierHolds) {
  Site site(slow_cpu_script(3600));  // past verifier.timeout_s (30): nothing ends on its own
  Options opt;
  opt.verify = true;
  opt.fake_triton = true;
  site.write_config(opt);
  site.import_corpus(cpu_corpus());  // three samples reach the verifier; vector_neg.py fails
  site.create_run("v1", "v1");
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE state = 'verifying'", 3, 60s), 3)
      << d->log();
  auto starts = [&] {
    const std::string log = d->log();
    int n = 0;
    for (auto at = log.find(" starts on slot"); at != std::string::npos;
         at = log.find(" starts on slot", at + 1))
      ++n;
    return n;
  };
  auto until = std::chrono::steady_clock::now() + 60s;
  while (starts() < 2 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  ASSERT_EQ(starts(), 2) << d->log();  // both slots busy, the third waits in the pool

  auto c = site.kforge({"run", "cancel", "v1"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("3 jobs cancelled"), std::string::npos) << c.out;
  EXPECT_EQ(site.wait_for("SELECT count(*) FROM jobs WHERE state = 'cancelled'", 3, 20s), 3)
      << d->log();
  until = std::chrono::steady_clock::now() + 20s;
  while (d->log().find("stopping 3 samples whose jobs were cancelled") == std::string::npos &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(50ms);
  EXPECT_NE(d->log().find("stopping 3 samples whose jobs were cancelled"), std::string::npos)
      << d->log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  EXPECT_EQ(starts(), 2) << d->log();  // the waiting one never started
  EXPECT_EQ(site.scalar("SELECT count(*) FROM verifications"), 0);
  EXPECT_EQ(final_states(site, "v1"),
            (std::vector<std::string>{"vector_add.py|cancelled|verify|cancelled",
                                      "vector_neg.py|failed|generate|rejected:no_test_function",
                                      "vector_scale.py|cancelled|verify|cancelled",
                                      "vector_sub.py|cancelled|verify|cancelled"}));
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL"), 0);
}

TEST(VerifyBacklog, AFullVerifyQueueHoldsTheLlmSideBack) {
  Site site(script("fake_llm_answers.json", 50));
  Options o;
  o.max_in_flight = 2;
  o.verify_backlog = 4;
  site.write_config(o);
  site.import_corpus();
  site.create_run("v1", "v1", {"--limit", "20"});
  auto d = site.start_daemon();
  ASSERT_GE(site.wait_for(kVerifyQueued, 4, 30s), 4) << d->log();
  // The daemon goes on stepping, but leases nothing while 4 samples wait for the verifier.
  std::this_thread::sleep_for(1500ms);
  const std::int64_t requests = site.fake().stats()["requests"].get<std::int64_t>();
  std::this_thread::sleep_for(1000ms);
  EXPECT_EQ(site.fake().stats()["requests"].get<std::int64_t>(), requests);
  // At most what was in flight when the backlog was reached gets past it.
  std::int64_t queued = site.scalar(kVerifyQueued);
  EXPECT_GE(queued, 4);
  EXPECT_LE(queued, 4 + o.max_in_flight - 1);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'queued'"), 20 - queued);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'leased'"), 0);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(20s), std::optional<int>(0)) << d->log();

  // The same run with the backlog off goes through.
  o.verify_backlog = 0;
  site.write_config(o);
  auto e = site.start_daemon();
  EXPECT_EQ(site.wait_for(kVerifyQueued, 20, 60s), 20) << e->log();
  e->signal(SIGTERM);
  EXPECT_EQ(e->wait(20s), std::optional<int>(0)) << e->log();
}

}  // namespace
}  // namespace kforge::pipeline::e2e
