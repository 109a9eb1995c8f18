// The Triton-specific logic of the harness, against a stand-in Triton (tests/verify/fake_triton)
// that runs kernels on the CPU and misbehaves like the real one where it matters.

#include <gtest/gtest.h>

#include <chrono>

#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Autotune;
using verify::MutantRun;
using verify::Verdict;

TEST(VerifyTriton, LaunchCountingAndMutantRuns) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("triton_vector_add"), load_sample("triton_vacuous"),
                           load_sample("triton_no_launch")});
  // A real test: kernel launched, and with launches skipped the test fails.
  EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_TRUE(r[0].flags.empty());
  EXPECT_TRUE(r[0].verified());
  EXPECT_EQ(r[0].report["triton"]["launches"]["add_kernel"], 4);
  EXPECT_EQ(r[0].report["mutant"]["verdict"], "failed");
  // The first launch (n = 1, 0 + 0) is skipped and its output poisoned: the test fails there.
  EXPECT_EQ(r[0].report["mutant"]["launches_skipped"]["add_kernel"], 1);
  EXPECT_EQ(r[0].report["mutant"]["process"], "same");
  EXPECT_EQ(r[0].report["triton"]["kernels"], nlohmann::json::array({"add_kernel"}));
  EXPECT_NE(r[0].stderr_tail.find("mutant run (kernel launches skipped)"), std::string::npos);
  // A vacuous test: passes with the kernel never running.
  EXPECT_EQ(r[1].verdict, Verdict::passed);
  EXPECT_EQ(r[1].flags, std::vector<std::string>{verify::kMutantSurvived});
  EXPECT_FALSE(r[1].verified());
  // A test that never launches the kernel of its code.
  EXPECT_EQ(r[2].verdict, Verdict::passed);
  EXPECT_EQ(r[2].flags, std::vector<std::string>{verify::kNoKernelLaunch});
  EXPECT_EQ(pool->stats().mutant_runs, 2u);
}

TEST(VerifyTriton, MutantRunInANewProcessGivesTheSameVerdicts) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.mutant_run = MutantRun::new_process;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("triton_vector_add"), load_sample("triton_vacuous")});
  EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_TRUE(r[0].flags.empty());
  EXPECT_EQ(r[0].report["mutant"]["verdict"], "failed");
  EXPECT_EQ(r[0].report["mutant"]["process"], "new");
  EXPECT_EQ(r[1].flags, std::vector<std::string>{verify::kMutantSurvived});
  EXPECT_EQ(pool->stats().mutant_runs, 2u);
}

// A test that polls for the kernel's result hangs when the launch is skipped. Its mutant runs'
// process is killed at its own deadline, and the real run's time is its own. A process that hangs
// or dies leaves no report of what ran (a sample can hang or end its own process on purpose when it
// is imported again, issue 52): it is made once more in a process of its own, and when that hangs
// too the sample is flagged unstable_test, not verified (before, the hang counted as a kill).
TEST(VerifyTriton, AMutantRunThatHangsIsKilledAtItsOwnDeadlineRunOnceMoreAndFlagged) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.timeout_s = 3;
  cfg.kernel_mutant_time_s = 1;  // the mutant run's deadline: its timeout plus this budget
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_one(*pool, load_sample("triton_mutant_hangs"));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // The real run passed; with the launch skipped the test waits for ever, in both attempts.
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kUnstableTest}) << r.detail;
  EXPECT_EQ(r.report["mutant"]["verdict"], "timeout");
  EXPECT_NE(r.report["mutant"]["detail"].get<std::string>().find("4 s deadline"),
            std::string::npos);
  ASSERT_EQ(r.report["mutant"]["lost"].size(), 2u) << r.report["mutant"].dump();
  EXPECT_EQ(r.report["mutant"]["process"], "new");  // the second attempt had its own
  EXPECT_GE(r.report["mutant"]["duration_ms"].get<std::int64_t>(), 3900);
  EXPECT_LT(r.duration_ms, 2900);                // the real run's own time, not the mutant's
  EXPECT_EQ(r.report["mutation"]["killed"], 0);  // a hang is no kill
  EXPECT_GE(took, 7.8);
  EXPECT_LT(took, 30.0);
  EXPECT_FALSE(r.verified());
}

TEST(VerifyTriton, AutotuneRunsTheFirstConfigThatWorksKeepingHooks) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_autotune"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  const auto& used = r.report["triton"]["autotune_used"].at(0);
  EXPECT_EQ(used["kernel"], "scale_kernel");
  EXPECT_EQ(used["index"], 1);
  EXPECT_EQ(used["of"], 3);
  EXPECT_NE(used["skipped"][0]["error"].get<std::string>().find("OutOfResources"),
            std::string::npos);
}

TEST(VerifyTriton, FullAutotuneBenchmarksEveryConfig) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.autotune = Autotune::full;
  cfg.mutant_check = false;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_autotune"));
  // The sample's own test asserts verify mode did not benchmark: under full autotuning it did.
  EXPECT_EQ(r.verdict, Verdict::failed) << r.detail;
  EXPECT_NE(r.detail.find("must not benchmark"), std::string::npos) << r.detail;
}

TEST(VerifyTriton, CompileStatementsAndTheirPrintsAreRemoved) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_compile_removed"));
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  auto removed = r.report["removed"];
  ASSERT_EQ(removed.size(), 4u) << removed.dump();
  EXPECT_EQ(removed[1]["statement"], "print(ret)");
  EXPECT_EQ(r.script.find("triton.compile(add_kernel"), std::string::npos);
  EXPECT_NE(r.script.find("pass  # kforge: removed triton.compile statement"), std::string::npos);
  EXPECT_NE(r.script.find("from triton import compile as tcompile"), std::string::npos);
}

TEST(VerifyTriton, CompileStatementsSharingALineFallBackToRegeneratedSource) {
  TempDir tmp;
  auto req = load_sample("compile_oneliner");
  nlohmann::json j = {{"code", *req.code},
                      {"kernel_wrapper", *req.kernel_wrapper},
                      {"unitest_code", *req.unitest_code}};
  write_text(tmp / "request.json", j.dump());
  auto harness = verify::find_harness(verify::VerifierConfig{});
  ASSERT_TRUE(harness.ok());
  auto r = run_process(
      {sandbox_python(), *harness, "assemble", "--request", (tmp / "request.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("triton.compile("), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("print(ret2.asm)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("print('kept', a)"), std::string::npos) << r.out;  // regenerated by ast
  EXPECT_NE(r.out.find("a = 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("def run():"), std::string::npos) << r.out;
}

TEST(VerifyTriton, CompatibilityShimsApplyOnlyWhenUsed) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("triton_shim"), load_sample("triton_vector_add")});
  EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_EQ(r[0].report["shims"], nlohmann::json::array({"triton.testing.assert_almost_equal"}));
  EXPECT_TRUE(r[1].report["shims"].empty());
}

}  // namespace
}  // namespace kforge::test
