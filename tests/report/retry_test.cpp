// kforge retry: re-queue finished samples by verdict or failure, keeping every attempt. The
// report chooses the jobs (report/retry.hpp), the pipeline re-queues them (pipeline/requeue.hpp),
// in one transaction (app/retry.hpp puts them together for cmd_retry.cpp).

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fixture.hpp"
#include "kforge/app/retry.hpp"
#include "kforge/report/compare.hpp"
#include "kforge/report/export.hpp"
#include "kforge/report/retry.hpp"

namespace kforge::report {
namespace {

using test::ReportFixture;

struct Retried {
  std::int64_t requeued = 0;
  std::vector<std::string> keys;
  std::vector<std::pair<std::string, std::int64_t>> by_stage;
  bool run_reactivated = false;
};

constexpr std::int64_t kNow = 1'800'000'000'000;

Result<Retried> retry(store::Db& db, const std::string& tag, const RetryOptions& o,
                      pipeline::Commit commit = pipeline::Commit::yes) {
  KF_TRY(auto done, app::retry(db, tag, o, kNow, commit));
  Retried r;
  r.requeued = done.result.requeued;
  for (const auto& j : done.selection.jobs) r.keys.push_back(j.key);
  r.by_stage = done.selection.by_stage;
  r.run_reactivated = done.result.run_reactivated;
  return r;
}

class ReportRetry : public ::testing::Test {
 protected:
  ReportFixture fx;
  std::string job(const std::string& tag, const std::string& key) {
    return fx.text("job_of", {tag, key});
  }
  std::int64_t history() {
    return fx.scalar("count_stage_outputs") * 1000 + fx.scalar("count_verifications");
  }
};

TEST_F(ReportRetry, CrashedAndTimedOutGoBackToTheVerifier) {
  std::int64_t before = history();
  RetryOptions o;
  o.verdicts = {"crashed", "timeout"};
  auto r = retry(fx.db(), "v1", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // v1: llvm_abort crashed, matmul_autotune timed out.
  EXPECT_EQ(r->requeued, 2);
  EXPECT_EQ(r->keys, (std::vector<std::string>{"llvm_abort.py", "matmul_autotune.py"}));
  EXPECT_EQ(r->by_stage, (std::vector<std::pair<std::string, std::int64_t>>{{"verify", 2}}));
  EXPECT_EQ(job("v1", "llvm_abort.py"), "verify_queued|verify|0|crashed");
  EXPECT_EQ(job("v1", "matmul_autotune.py"), "verify_queued|verify|0|timeout");
  EXPECT_EQ(job("v1", "softmax.py"), "done|done|1|");
  EXPECT_EQ(history(), before) << "every attempt stays in the history";
  // v1 had finished; it is active again so the daemon picks the jobs up.
  EXPECT_TRUE(r->run_reactivated);
  EXPECT_EQ(fx.text("run_state", {"v1"}), "active");
  // Re-queued samples are not finished: compare leaves them out until they are.
  auto c = compare(fx.db(), {"v1", "v2"}, CompareOptions{});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->pairs[0].samples, 11);
  // Nothing is left to match a second time.
  auto again = retry(fx.db(), "v1", o);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->requeued, 0);
}

TEST_F(ReportRetry, StageFailuresGoBackToTheirStageOrTheOneAskedFor) {
  RetryOptions o;
  o.failures = {"rejected"};
  o.stage = "generate";
  auto r = retry(fx.db(), "v2", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->keys, (std::vector<std::string>{"retry_gen.py", "wrong_launch.py"}));
  EXPECT_EQ(job("v2", "wrong_launch.py"), "queued|generate|0|rejected");
  // Without --stage, a sample goes back to the stage where it failed: garbled_output's analysis.
  RetryOptions p;
  p.failures = {"parse_error"};
  r = retry(fx.db(), "v2", p);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->requeued, 1);
  EXPECT_EQ(job("v2", "garbled_output.py"), "queued|analyze|0|parse_error");
  // v2 was active: it stays so, and nothing says it was reactivated.
  EXPECT_FALSE(r->run_reactivated);
  // A job whose generation failed at the provider goes back to generate.
  RetryOptions q;
  q.failures = {"llm_error"};
  r = retry(fx.db(), "v2-qwen", q);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->keys, std::vector<std::string>{"softmax.py"});
  EXPECT_EQ(job("v2-qwen", "softmax.py"), "queued|generate|0|llm_error");
  // A quality flag is selectable on its own, and can be sent back to generation.
  RetryOptions f;
  f.verdicts = {"flagged"};
  f.stage = "generate";
  r = retry(fx.db(), "v1", f);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->keys, (std::vector<std::string>{"no_launch.py", "vacuous_test.py"}));
  EXPECT_EQ(job("v1", "vacuous_test.py"), "queued|generate|0|flagged");
}

TEST_F(ReportRetry, JobsInFlightAreLeftAlone) {
  fx.exec("lease_job", {"v2", "add_kernel.py"});
  RetryOptions o;
  o.verdicts = {"passed"};
  auto r = retry(fx.db(), "v2", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Seven passes in v2, one of them now leased by a daemon.
  EXPECT_EQ(r->requeued, 6);
  EXPECT_EQ(job("v2", "add_kernel.py"), "leased|done|1|");
  EXPECT_EQ(job("v2", "slow_pending.py"), "verify_queued|verify|0|");
}

TEST_F(ReportRetry, DryRunChangesNothing) {
  RetryOptions o;
  o.verdicts = {"crashed", "timeout"};
  auto r = retry(fx.db(), "v1", o, pipeline::Commit::no);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->requeued, 2);
  EXPECT_EQ(job("v1", "llvm_abort.py"), "done|done|1|");
  EXPECT_EQ(fx.text("run_state", {"v1"}), "finished");
}

TEST_F(ReportRetry, AllOrNothing) {
  // The second of the two flagged jobs (by key: no_launch, then vacuous_test) cannot be changed:
  // the first must not stay changed either.
  fx.exec("add_failing_trigger");
  RetryOptions o;
  o.verdicts = {"flagged"};
  auto r = retry(fx.db(), "v1", o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("injected failure"), std::string::npos);
  EXPECT_EQ(job("v1", "no_launch.py"), "done|done|1|");
  EXPECT_EQ(fx.text("run_state", {"v1"}), "finished");
}

TEST_F(ReportRetry, BadRequestsAreRefused) {
  RetryOptions none;
  auto r = retry(fx.db(), "v1", none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "usage");
  RetryOptions bad;
  bad.verdicts = {"exploded"};
  r = retry(fx.db(), "v1", bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "usage");
  EXPECT_NE(r.error().message.find("'exploded'"), std::string::npos);
  RetryOptions verify_failures;
  verify_failures.failures = {"llm_error"};
  verify_failures.stage = "verify";
  r = retry(fx.db(), "v1", verify_failures);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "usage");
  RetryOptions analyze_v1;
  analyze_v1.failures = {"llm_error"};
  analyze_v1.stage = "analyze";
  r = retry(fx.db(), "v1", analyze_v1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no analysis stage"), std::string::npos);
  RetryOptions ok;
  ok.verdicts = {"crashed"};
  r = retry(fx.db(), "v5", ok);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "not_found");
  fx.exec("set_run_state", {"v2", "cancelled"});
  r = retry(fx.db(), "v2", ok);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, "conflict");
  EXPECT_EQ(job("v2", "llvm_abort.py"), "done|done|1|");
}

// "The code a job holds" is one definition (the view code_outputs, migration 0021) that retry,
// the verifier and export all read; retry and export still answer different questions.
// add_kernel was regenerated after a repair round (kforge retry --stage generate): its newest
// code is the round-0 generation, which retry --stage verify must verify again, not the older
// round 1 (the highest round). layernorm's newest attempt is a generation that failed after a
// repair round held code: the export shows that failed attempt (the sample's latest state, no
// code), while retry verifies round 1's code, the newest the job holds.
TEST_F(ReportRetry, VerifyAgainTheCodeTheJobHoldsWhileExportShowsTheLatestAttempt) {
  const std::string b =
      R"({"kernel_wrapper":"def round_one(): pass","unitest_code":"def test_b(): pass"})";
  const std::string c =
      R"({"kernel_wrapper":"def regenerated(): pass","unitest_code":"def test_c(): pass"})";
  fx.exec("record_repair_stage", {"v2"});
  fx.exec("add_answer", {"v2", "add_kernel.py", "repair", "ok", "1", b});
  fx.exec("add_answer", {"v2", "add_kernel.py", "generate", "ok", "0", c});
  fx.exec("add_answer", {"v2", "layernorm.py", "repair", "ok", "1", b});
  // An unfixable repair answer holds no code: it is not the round to verify.
  fx.exec("add_answer", {"v2", "layernorm.py", "repair", "ok", "2", R"({"unfixable":"no"})"});
  fx.exec("add_failed_generation", {"v2", "layernorm.py"});

  auto out = fx.dir() / "v2.jsonl";
  auto sum = export_run(fx.db(), "v2", out, ExportOptions{});
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  std::map<std::string, nlohmann::ordered_json> rec;
  std::ifstream in(out);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::ordered_json::parse(line);
    rec[j["file"].get<std::string>()] = j;
  }
  EXPECT_EQ(rec.at("add_kernel.py")["kernel_wrapper"], "def regenerated(): pass");
  EXPECT_EQ(rec.at("add_kernel.py")["repair_round"], 0);
  EXPECT_TRUE(rec.at("layernorm.py")["kernel_wrapper"].is_null()) << rec.at("layernorm.py").dump();

  RetryOptions o;
  o.verdicts = {"passed", "failed"};
  o.stage = "verify";
  auto r = retry(fx.db(), "v2", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(job("v2", "add_kernel.py"), "verify_queued|verify|0|verified");
  EXPECT_EQ(fx.scalar("job_round", {"v2", "add_kernel.py"}), 0);
  EXPECT_EQ(job("v2", "layernorm.py"), "verify_queued|verify|0|failed");
  EXPECT_EQ(fx.scalar("job_round", {"v2", "layernorm.py"}), 1);
}

}  // namespace
}  // namespace kforge::report
