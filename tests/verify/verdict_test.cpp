// From a finished run to a verdict, and the verifier's configuration section.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>

#include "kforge/verify/config.hpp"
#include "kforge/verify/verdict.hpp"
#include "verify_util.hpp"

namespace kforge::verify {
namespace {

int signalled(int sig) {
  return sig & 0x7f;  // the raw wait status of a process killed by sig, no core
}

TEST(VerifyClassify, SignalWithTheTellingStderrLine) {
  RunFacts f;
  f.wait_status = signalled(SIGABRT);
  ASSERT_TRUE(WIFSIGNALED(f.wait_status));
  f.stderr_tail =
      "compiling...\nLLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo\nStack dump:\n0. x\n";
  auto c = classify(f);
  EXPECT_EQ(c.verdict, Verdict::crashed);
  EXPECT_EQ(c.detail, "SIGABRT (signal 6): LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.foo");
}

TEST(VerifyClassify, ExitWithoutReport) {
  RunFacts f;
  f.wait_status = 3 << 8;
  ASSERT_TRUE(WIFEXITED(f.wait_status));
  f.stderr_tail = "last words\n";
  auto c = classify(f);
  EXPECT_EQ(c.verdict, Verdict::crashed);
  EXPECT_EQ(c.detail, "exit code 3 without a report: last words");
}

TEST(VerifyClassify, KillsByThePoolWin) {
  RunFacts f;
  f.wait_status = signalled(SIGKILL);
  f.killed = KillReason::timeout;
  f.timeout_s = 120;
  EXPECT_EQ(classify(f).verdict, Verdict::timeout);
  EXPECT_NE(classify(f).detail.find("120 s deadline"), std::string::npos);
  f.killed = KillReason::memory_rss;
  f.memory_cap_mb = 256;
  f.peak_rss_kb = 300 * 1024;
  EXPECT_EQ(classify(f).verdict, Verdict::crashed);
  EXPECT_EQ(
      classify(f).detail,
      "killed: resident memory 300 MiB passed the 256 MiB cap (RSS watch; no cgroup memory limit)");
  f.killed = KillReason::worker_lost;
  EXPECT_EQ(classify(f).flags, std::vector<std::string>{kInfrastructure});
}

TEST(VerifyClassify, ReportDecides) {
  RunFacts f;
  f.wait_status = 0;
  auto parse = [](const nlohmann::json& fields) {
    auto h = parse_harness_report(test::harness_json(fields), ReportOrigin::harness);
    EXPECT_TRUE(h.ok()) << h.error().message;
    return h.ok() ? std::optional<HarnessReport>(*h) : std::nullopt;
  };
  f.report = parse({{"verdict", "failed"}, {"detail", "test_x: AssertionError: boom"}});
  auto c = classify(f);
  EXPECT_EQ(c.verdict, Verdict::failed);
  EXPECT_EQ(c.detail, "test_x: AssertionError: boom");
  EXPECT_TRUE(c.flags.empty());
  f.report = parse({{"verdict", "error"}, {"phase", "sandbox"}, {"detail", "x"}});
  EXPECT_EQ(classify(f).flags, std::vector<std::string>{kInfrastructure});
  // A report that did not parse: the verifier failed, whatever the report said.
  f.report.reset();
  f.report_error = "harness report: field \"detail\" is missing";
  c = classify(f);
  EXPECT_EQ(c.verdict, Verdict::error);
  EXPECT_EQ(c.detail, f.report_error);
  EXPECT_EQ(c.flags, std::vector<std::string>{kInfrastructure});
}

using test::read_verifier;

TEST(VerifyConfig, ReadsAndValidates) {
  VerifierConfig c;
  auto st = read_verifier(
      "verifier:\n  mode: warm\n  workers_per_device: 8\n  devices: [cuda:0, cuda:1]\n"
      "  autotune: sometimes\n",
      c);
  EXPECT_EQ(c.workers_per_device, 8);
  EXPECT_EQ(c.devices.size(), 2u);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "k.yaml:5: verifier.autotune: 'sometimes' is not one of single, full");
}

TEST(VerifyConfig, WorkersPerDeviceIsAutoByDefaultOrANumber) {
  VerifierConfig c;
  EXPECT_EQ(c.workers_per_device, kAutoWorkers);
  c.workers_per_device = 3;
  EXPECT_TRUE(read_verifier("verifier:\n  workers_per_device: auto\n", c).ok());
  EXPECT_EQ(c.workers_per_device, kAutoWorkers);
  auto st = read_verifier("verifier:\n  workers_per_device: 0\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "k.yaml:2: verifier.workers_per_device: '0' is not auto or a number >= 1");
}

TEST(VerifyConfig, GpuHardwareQueuesDefaultToOneAndAreChecked) {
  VerifierConfig c;
  EXPECT_EQ(c.gpu_hw_queues, 1);
  EXPECT_TRUE(read_verifier("verifier:\n  gpu_hw_queues: 0\n", c).ok());
  EXPECT_EQ(c.gpu_hw_queues, 0);
  auto st = read_verifier("verifier:\n  gpu_hw_queues: -2\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "k.yaml:2: verifier.gpu_hw_queues: must be between 0 (the driver's default) and 128");
}

// verifier.cuda_sync: auto (the driver's default) unless set; each name read, anything else
// refused at its line naming the key; a reload takes it.
TEST(VerifyConfig, CudaSyncIsAutoByDefaultReadByNameAndReloaded) {
  VerifierConfig c;
  EXPECT_EQ(c.cuda_sync, CudaSync::automatic);
  EXPECT_EQ(to_string(c.cuda_sync), "auto");
  for (auto [name, value] :
       {std::pair{"spin", CudaSync::spin}, std::pair{"yield", CudaSync::yield},
        std::pair{"blocking", CudaSync::blocking}, std::pair{"auto", CudaSync::automatic}}) {
    EXPECT_TRUE(read_verifier(std::string("verifier:\n  cuda_sync: ") + name + "\n", c).ok());
    EXPECT_EQ(c.cuda_sync, value) << name;
  }
  VerifierConfig bad;
  auto st = read_verifier("verifier:\n  timeout_s: 5\n  cuda_sync: sleepy\n", bad);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "k.yaml:3: verifier.cuda_sync: 'sleepy' is not one of auto, spin, yield, blocking");
  // config/kforge.yaml documents it with its default.
  auto shipped = ConfigReader::load_file(test::source_dir() / "config" / "kforge.yaml",
                                         [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(shipped.ok()) << shipped.error().message;
  VerifierConfig from_file;
  from_file.cuda_sync = CudaSync::spin;
  read_config((*shipped)->root().child("verifier"), from_file);
  EXPECT_EQ(from_file.cuda_sync, CudaSync::automatic);
  VerifierConfig running, fresh;
  fresh.cuda_sync = CudaSync::blocking;
  EXPECT_TRUE(apply_reloadable(running, fresh));
  EXPECT_EQ(running.cuda_sync, CudaSync::blocking);
  EXPECT_FALSE(apply_reloadable(running, fresh));
}

TEST(VerifyConfig, MutantsDefaultToAllAndUnknownOnesAreRefused) {
  VerifierConfig c;
  EXPECT_EQ(c.mutants, (std::vector<std::string>{"tail", "interior", "permute", "permute_row",
                                                 "scale", "zero"}));
  EXPECT_TRUE(read_verifier("verifier:\n  mutants: []\n", c).ok());
  EXPECT_TRUE(c.mutants.empty());
  auto st = read_verifier("verifier:\n  mutants: [tail, shuffle]\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "k.yaml:2: verifier.mutants: 'shuffle' is not one of tail, interior, permute, "
            "permute_row, scale, zero");
  st = read_verifier("verifier:\n  mutants: [zero, zero]\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "k.yaml:2: verifier.mutants: 'zero' is listed twice");
}

TEST(VerifyMutationScore, CountsTheSkipLaunchRunAndTheOutputMutantsThatApplied) {
  nlohmann::json fields = {{"verdict", "failed"},
                           {"battery",
                            {{"mutants",
                              {{{"mutant", "tail"}, {"result", "killed"}},
                               {{"mutant", "interior"}, {"result", "not_applicable"}},
                               {{"mutant", "permute"}, {"result", "error"}},
                               {{"mutant", "scale"}, {"result", "survived"}}}},
                             {"not_run", {"zero"}},
                             {"stopped", "first survivor"}}}};
  auto report = parse_harness_report(test::harness_json(fields), ReportOrigin::harness);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto s = score_mutants(Verdict::failed, false, &*report);
  EXPECT_EQ(s.killed, 2);
  EXPECT_EQ(s.applicable, 3);
  EXPECT_EQ(s.survived, std::vector<std::string>{"scale"});
  EXPECT_EQ(s.not_applicable, std::vector<std::string>{"interior"});
  EXPECT_EQ(s.not_run, std::vector<std::string>{"zero"});
  VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  apply_mutation_score(r, s);
  EXPECT_EQ(r.flags, std::vector<std::string>{kWeakTest});
  EXPECT_FALSE(r.verified());
  EXPECT_EQ(r.detail,
            "1 test passed; weak test: it still passes under the scale mutant (the test still "
            "passes when every output element is a few percent off: its tolerance is too loose)");
  EXPECT_EQ(r.report["mutation"]["killed"], 2);
  // The verifier's own failure in the skip-launch run counts for nothing.
  auto infra = score_mutants(Verdict::error, true, nullptr);
  EXPECT_EQ(infra.applicable, 0);
  VerifyResult clean;
  clean.verdict = Verdict::passed;
  apply_mutation_score(clean, score_mutants(Verdict::failed, false, nullptr));
  EXPECT_TRUE(clean.verified());
  EXPECT_EQ(clean.report["mutation"]["killed"], 1);
}

// A kernel that died of an illegal memory access in its own bounds replay makes every rerun's
// outcome a matter of where the allocator put the buffers: on an H200 the same sample's control
// failed in one run (unstable_test) and passed in the other (mutant_survived). The harness decides
// it: the real run's report says mutants_void, the pool passes it on to the mutant runs, whose
// controls void every result (controls.void, void_reason; contract/report_schema_test.py,
// MutantsVoid), and C++ reads that: nothing counts, and the sample is flagged unstable_test,
// whether or not a control failed.
TEST(VerifyMutationScore, AKernelThatFaultedInItsBoundsReplayVoidsEveryMutantResult) {
  const std::string why =
      "the kernel died of an illegal memory access in its bounds replay, so where memory lies "
      "decides its runs and no mutant run's result counts";
  auto mutant_report = [&](bool voided) {
    nlohmann::json fields = {{"verdict", "passed"},
                             {"battery",
                              {{"mutants",
                                {{{"mutant", "tail"}, {"result", voided ? "void" : "killed"}},
                                 {{"mutant", "scale"}, {"result", voided ? "void" : "survived"}}}},
                               {"not_run", nlohmann::json::array()},
                               {"stopped", ""}}},
                             {"controls", {{"runs", nlohmann::json::array()}, {"failed", false}}}};
    if (voided) {
      fields["controls"]["void"] = true;
      fields["controls"]["void_reason"] = why;
    }
    return parse_harness_report(test::harness_json(fields), ReportOrigin::harness);
  };
  auto report = mutant_report(true);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->controls->voided);
  EXPECT_EQ(report->controls->void_reason, why);
  auto s = score_mutants(Verdict::passed, false, &*report);
  EXPECT_EQ(s.applicable, 0);
  EXPECT_EQ(s.killed, 0);
  EXPECT_TRUE(s.survived.empty());
  EXPECT_EQ(s.stopped, why);
  VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  apply_mutation_score(r, s);
  apply_controls(r, &*report);
  EXPECT_EQ(r.flags, std::vector<std::string>{kUnstableTest});
  EXPECT_EQ(r.detail, "1 test passed; unstable test: " + why);
  // Without the harness's void the same runs count as before.
  auto plain = mutant_report(false);
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  auto counted = score_mutants(Verdict::passed, false, &*plain);
  EXPECT_EQ(counted.applicable, 3);
  VerifyResult p;
  p.verdict = Verdict::passed;
  apply_controls(p, &*plain);
  EXPECT_TRUE(p.flags.empty());
}

// A kernel that reads or writes out of bounds (or died of an illegal memory access in its own
// bounds replay) makes every rerun's outcome a matter of what lies around its buffers: on an
// H200 the same samples' controls failed in one run (unstable_test) and passed in the other
// (mutant_survived), label off against label on and main against an earlier main. Out of
// bounds voids the mutant runs' results and flags neither, whether or not a control failed.
TEST(VerifyMutationScore, AKernelThatReadsOutOfBoundsGetsNoMutationResultAndNoControlFlag) {
  nlohmann::json fields = {{"verdict", "passed"},
                           {"controls",
                            {{"failed", true},
                             {"runs",
                              {{{"kind", "fresh"},
                                {"at", "after the skip-launch run"},
                                {"result", "failed"},
                                {"duration_ms", 5},
                                {"by", "test_x: AssertionError"}}}}}},
                           {"battery",
                            {{"mutants",
                              {{{"mutant", "tail"}, {"result", "killed"}},
                               {{"mutant", "scale"}, {"result", "survived"}}}},
                             {"not_run", nlohmann::json::array()},
                             {"stopped", ""}}}};
  auto report = parse_harness_report(test::harness_json(fields), ReportOrigin::harness);
  ASSERT_TRUE(report.ok()) << report.error().message;
  for (Verdict skip : {Verdict::passed, Verdict::failed}) {
    auto s = score_mutants(skip, false, &*report, /*foreign_memory=*/true);
    EXPECT_EQ(s.applicable, 0);
    EXPECT_EQ(s.killed, 0);
    EXPECT_TRUE(s.survived.empty());
    EXPECT_NE(s.stopped.find("out_of_bounds"), std::string::npos) << s.stopped;
    VerifyResult r;
    r.verdict = Verdict::passed;
    r.detail = "1 test passed";
    apply_mutation_score(r, s);
    apply_controls(r, &*report, /*foreign_memory=*/true);
    EXPECT_TRUE(r.flags.empty()) << nlohmann::json(r.flags).dump();
    EXPECT_EQ(r.report["mutation"]["stopped"], s.stopped);
  }
  // Without out of bounds the same report's failed control flags unstable_test as before.
  VerifyResult p;
  p.verdict = Verdict::passed;
  apply_controls(p, &*report);
  EXPECT_EQ(p.flags, std::vector<std::string>{kUnstableTest});
}

// A control run of the unmutated sample that died of an illegal memory access ran only the
// sample's own code: its kernel touched memory it does not own, which the bounds replay missed
// that time. On an H200 (bench-score, 512 items) three copies of one TritonBench-G kernel were
// flagged unstable_test by such a control in one run and mutant_survived in another; such a
// kernel is out of bounds, and out of bounds voids its mutant runs and controls (issue 52).
TEST(VerifyBounds, AControlRunThatDiedOfAnIllegalAccessFlagsOutOfBoundsNotUnstableTest) {
  auto report_with = [](const std::string& by) {
    nlohmann::json fields = {{"verdict", "passed"},
                             {"controls",
                              {{"failed", true},
                               {"runs",
                                {{{"kind", "fresh"},
                                  {"at", "after the skip-launch run"},
                                  {"result", "failed"},
                                  {"duration_ms", 5},
                                  {"by", by}}}}}}};
    return parse_harness_report(test::harness_json(fields), ReportOrigin::harness);
  };
  auto faulted = report_with(
      "<import>: AcceleratorError: CUDA error: an illegal memory access was encountered");
  ASSERT_TRUE(faulted.ok()) << faulted.error().message;
  VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  r.report["bounds"] = {{"out_of_bounds", false}, {"checked", 3}};
  apply_control_faults(r, &*faulted);
  EXPECT_EQ(r.flags, std::vector<std::string>{kOutOfBounds});
  EXPECT_EQ(r.report["bounds"]["out_of_bounds"], true);
  EXPECT_EQ(r.report["bounds"]["checked"], 3);  // the replay's own record is kept
  EXPECT_EQ(r.report["bounds"]["fault"]["in"], "a fresh control run");
  EXPECT_NE(r.detail.find("out of bounds: a fresh control run of the unmutated sample died of an "
                          "illegal memory access"),
            std::string::npos)
      << r.detail;
  // Then the control flags nothing (the out-of-bounds rule), and calling it again adds nothing.
  apply_controls(r, &*faulted, /*foreign_memory=*/true);
  apply_control_faults(r, &*faulted);
  EXPECT_EQ(r.flags, std::vector<std::string>{kOutOfBounds});
  // A control that failed its assertion is the test's instability, not a fault.
  auto asserted = report_with("test_x: AssertionError");
  ASSERT_TRUE(asserted.ok()) << asserted.error().message;
  VerifyResult p;
  p.verdict = Verdict::passed;
  apply_control_faults(p, &*asserted);
  EXPECT_TRUE(p.flags.empty());
  apply_controls(p, &*asserted);
  EXPECT_EQ(p.flags, std::vector<std::string>{kUnstableTest});
}

}  // namespace
}  // namespace kforge::verify
