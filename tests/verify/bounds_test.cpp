// The out-of-bounds check (docs/VERIFIER.md, "Out-of-bounds accesses") on the CPU: the guard-zone
// replay itself in Python on launches of the CPU stand-in for Triton (bounds/bounds_test.py); the
// pool's part end to end in real processes: a passing sample's launches are checked and a clean
// one stays verified, a run that died of an illegal memory access is flagged out_of_bounds, the
// check can be turned off; and how a report's findings become the flag and the detail. On a GPU:
// tests/verify/gpu/oob_* and out_of_bounds (VerifyGpu.Samples).

#include <gtest/gtest.h>

#include "kforge/core/config.hpp"
#include "kforge/core/embedded.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/verdict.hpp"
#include "verify_util.hpp"

namespace kforge::verify {
std::span<const EmbeddedFile> harness_fault_words();  // cmake/Embed.cmake
}

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

TEST(VerifyBounds, PythonGuardReplay) {
  TempDir tmp;
  auto r =
      run_process({sandbox_python(), (source_dir() / "tests/verify/bounds/bounds_test.py").string(),
                   (source_dir() / "libs/verify/harness").string(),
                   (source_dir() / "tests/verify/fake_triton").string()},
                  {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 26 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyBounds, APassingSampleIsCheckedAndACleanOneStaysVerified) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_vector_add"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  const auto& b = r.report["bounds"];
  SCOPED_TRACE(b.dump());
  // Four sizes, one distinct launch each (1, 63, 64 and 130 elements), all masked.
  EXPECT_EQ(b["checked"], 4);
  EXPECT_EQ(b["out_of_bounds"], false);
  EXPECT_EQ(b["writes"], Json::array());
  EXPECT_EQ(b["reads"], Json::array());
  EXPECT_TRUE(r.verified()) << Json(r.flags).dump();
}

// A test that draws its inputs without a seed of its own sees the same draws in every run (the
// harness seeds the global generators before the sample starts: runner.SAMPLE_SEED), so two runs
// of the same sample give the same flags (issue 52: out_of_bounds came and went with the draws).
TEST(VerifyBounds, EveryRunOfASampleDrawsTheSameInputs) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  for (int i = 0; i < 2; ++i) {
    auto r = run_one(*pool, load_sample("seeded_draws"));
    ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
    EXPECT_EQ(r.report["bounds"]["out_of_bounds"], false) << r.report["bounds"].dump();
  }
}

TEST(VerifyBounds, TurnedOffTheReportHasNoCheck) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.bounds_check = false;
  cfg.kernel_mutants = 0;  // nor a recorder for the kernel battery
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_vector_add"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_FALSE(r.report.contains("bounds")) << r.report["bounds"].dump();
}

TEST(VerifyBounds, ARunThatDiedOfAnIllegalMemoryAccessIsFlagged) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("bounds_fault"));
  ASSERT_EQ(r.verdict, Verdict::error) << r.detail << r.stderr_tail;
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kOutOfBounds});
  EXPECT_NE(r.detail.find("out of bounds: the run died of an illegal memory access"),
            std::string::npos)
      << r.detail;
  EXPECT_EQ(r.report["bounds"]["fault"]["in"], "the run");
}

// A passing sample whose kernel faults in its bounds replay (bounds_replay_fault: its stores land
// far past its output after its first launch): the harness's bounds phase says mutants_void, the
// pool passes it on to the mutant runs' process of their own, whose controls void every result;
// the pool reads that: nothing is counted, and the sample is flagged out_of_bounds alone (a
// kernel out of bounds gets no flag from its mutant runs and controls), never mutant_survived,
// unstable_test or weak_test.
TEST(VerifyBounds, AFaultInTheBoundsReplayVoidsTheMutantRunsInTheHarness) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.kernel_mutants = 0;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("bounds_replay_fault"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kOutOfBounds}) << r.detail;
  ASSERT_TRUE(r.report["bounds"]["fault"].is_object()) << r.report["bounds"].dump();
  const std::string why = r.report.value("mutants_void", std::string());
  EXPECT_NE(why.find("illegal memory access in its bounds replay"), std::string::npos) << why;
  const auto& controls = r.report["mutant"]["controls"];
  EXPECT_EQ(r.report["mutant"]["process"], "new");
  EXPECT_EQ(controls["void"], true) << controls.dump();
  EXPECT_EQ(controls["void_reason"], why);
  EXPECT_EQ(r.report["mutation"]["applicable"], 0) << r.report["mutation"].dump();
  EXPECT_EQ(r.report["mutation"]["stopped"], why);
  EXPECT_EQ(r.detail.find("unstable test"), std::string::npos) << r.detail;
}

TEST(VerifyBounds, TheHarnessFindingsBecomeTheFlagAndTheDetail) {
  verify::VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  test::set_report(
      r,
      {{"bounds",
        {{"out_of_bounds", true}, {"detail", "kernel _fwd_kernel reads outside V (launch 1)"}}}});
  verify::apply_bounds_facts(r);
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kOutOfBounds});
  EXPECT_FALSE(r.verified());
  EXPECT_EQ(r.detail,
            "1 test passed; out of bounds: kernel _fwd_kernel reads outside V (launch 1)");
  verify::apply_bounds_facts(r);  // once only
  EXPECT_EQ(r.flags.size(), 1u);
  EXPECT_EQ(r.detail,
            "1 test passed; out of bounds: kernel _fwd_kernel reads outside V (launch 1)");

  // The report comes from the sample's process: a field of the wrong type is no report at all
  // (parse_harness_report names it; the pool makes it an infrastructure error).
  auto forged = verify::parse_harness_report(
      test::harness_json({{"bounds", {{"out_of_bounds", "yes"}, {"detail", "x"}}}}),
      verify::ReportOrigin::harness);
  ASSERT_FALSE(forged.ok());
  EXPECT_NE(forged.error().message.find("\"bounds.out_of_bounds\" is string"), std::string::npos)
      << forged.error().message;
  verify::VerifyResult vague;
  vague.verdict = Verdict::passed;
  test::set_report(vague, {{"bounds", {{"out_of_bounds", true}}}});
  verify::apply_bounds_facts(vague);
  EXPECT_EQ(vague.detail, "; out of bounds: a kernel reads or writes outside its buffers");

  // A clean check, or an error that is no fault, flags nothing.
  verify::VerifyResult clean;
  clean.verdict = Verdict::passed;
  test::set_report(clean, {{"bounds", {{"out_of_bounds", false}, {"checked", 2}}}});
  verify::apply_bounds_facts(clean);
  EXPECT_TRUE(clean.flags.empty());
  verify::VerifyResult other;
  other.verdict = Verdict::error;
  other.detail = "test_x: RuntimeError: CUDA error: out of memory";
  verify::apply_bounds_facts(other);
  EXPECT_TRUE(other.flags.empty());

  // A crash whose stderr says the GPU met an illegal address (no report): flagged too.
  verify::VerifyResult crash;
  crash.verdict = Verdict::crashed;
  crash.detail = "killed by SIGABRT";
  crash.stderr_tail = "terminate called after ... CUDA_ERROR_ILLEGAL_ADDRESS ...";
  verify::apply_bounds_facts(crash);
  EXPECT_EQ(crash.flags, std::vector<std::string>{verify::kOutOfBounds});
  EXPECT_EQ(crash.report["bounds"]["out_of_bounds"], true);
  // A store so far past its buffer that it leaves the global address space (an H200's words).
  verify::VerifyResult far;
  far.verdict = Verdict::error;
  far.detail =
      "test_scatter: AcceleratorError: CUDA error: operation not supported on global/shared "
      "address space (kernel_wrapper line 3)";
  test::set_report(far, {{"bounds", {{"out_of_bounds", false}, {"checked", 0}}}});
  verify::apply_bounds_facts(far);
  EXPECT_EQ(far.flags, std::vector<std::string>{verify::kOutOfBounds});
  // The typed report says the same as the JSON one: the fault and what it means (repair's
  // prompt reads them), not an empty detail.
  ASSERT_TRUE(far.harness && far.harness->bounds);
  EXPECT_TRUE(far.harness->bounds->fault);
  EXPECT_NE(far.harness->bounds->detail.find("died of an illegal memory access"), std::string::npos)
      << far.harness->bounds->detail;
  EXPECT_EQ(far.report["bounds"]["detail"], far.harness->bounds->detail);
  EXPECT_EQ(far.report["bounds"]["fault"]["in"], "the run");
  EXPECT_FALSE(far.report["bounds"].contains("checked"));  // a dead run's check had no figures
  // Every phrase of kforge_harness/fault_words.txt, the file the harness reads too.
  auto words = listed_lines(verify::harness_fault_words());
  ASSERT_GE(words.size(), 5u);
  for (const auto& w : words) {
    verify::VerifyResult died;
    died.verdict = Verdict::crashed;
    died.stderr_tail = "RuntimeError: " + w + " (launch 1)";
    verify::apply_bounds_facts(died);
    EXPECT_EQ(died.flags, std::vector<std::string>{verify::kOutOfBounds}) << w;
    EXPECT_EQ(died.report["bounds"]["fault"]["error"], w);
  }
  // A passing run that mentions the words in its output is not a fault.
  verify::VerifyResult chatty;
  chatty.verdict = Verdict::passed;
  chatty.stderr_tail = "an illegal memory access was encountered";
  verify::apply_bounds_facts(chatty);
  EXPECT_TRUE(chatty.flags.empty());
}

TEST(VerifyBounds, TheConfigKeyIsReadAndOnByDefault) {
  verify::VerifierConfig c;
  EXPECT_TRUE(c.bounds_check);
  auto r = ConfigReader::load_string("verifier:\n  bounds_check: false\n", "k.yaml",
                                     [](const std::string&) { return std::nullopt; });
  ASSERT_TRUE(r.ok()) << r.error().message;
  verify::read_config((*r)->root().child("verifier"), c);
  ASSERT_TRUE((*r)->finish().ok());
  EXPECT_FALSE(c.bounds_check);
}

}  // namespace
}  // namespace kforge::test
