// The kernel battery and the degenerate-output checks, end to end through the pool on the CPU
// stand-in for Triton (tests/verify/fake_triton): a test whose inputs cannot tell a wrong kernel
// from the right one is flagged weak_inputs with the surviving mutant and its line; a strong
// test of a restricted domain (log on positives) stays verified; a small launch cannot hide a
// larger one from the output mutants; constant outputs are flagged. The operators and the
// equivalence replay themselves: kmutants/kernel_test.py (real Python, no pool).

#include <gtest/gtest.h>

#include "kforge/core/config.hpp"
#include "kforge/verify/config.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

// The pool of these tests: each sample's kernel battery builds, compiles and replays its
// mutants and an identity kernel (its control run), more than the default 2 s on a loaded
// 2-core machine.
verify::VerifierConfig battery_config(const TempDir& tmp) {
  auto cfg = test_config(tmp);
  cfg.timeout_s = 30;
  return cfg;
}

TEST(VerifyKernelMutants, PythonOperatorsAndReplay) {
  TempDir tmp;
  auto r = run_process(
      {sandbox_python(), (source_dir() / "tests/verify/kmutants/kernel_test.py").string(),
       (source_dir() / "libs/verify/harness").string(),
       (source_dir() / "tests/verify/fake_triton").string()},
      {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 17 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyKernelMutants, WeakInputsAreFlaggedWithTheSurvivorAndItsLine) {
  TempDir tmp;
  auto pool = make_pool(battery_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("kmutant_weak_relu_positive"),
                           load_sample("kmutant_weak_row_sum_block")});
  struct Want {
    const char* op;
    int line;
    const char* words;
  };
  const Want want[] = {{"constant", 11,
                        "the constant 0.0 is 1.0 (code line 11): the test's inputs "
                        "never reach where that constant matters"},
                       {"other", 10, "is 1.0 instead of 0.0 (code line 10): the test's sizes"}};
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(r[i].detail + "\n" + r[i].report.dump());
    ASSERT_EQ(r[i].verdict, Verdict::passed);
    EXPECT_EQ(r[i].flags, std::vector<std::string>{verify::kWeakInputs});
    EXPECT_FALSE(r[i].verified());
    // Every output mutant was killed: only a changed kernel shows the weakness.
    const auto& m = r[i].report["mutation"];
    EXPECT_EQ(m["survived"], Json::array());
    const auto& k = m["kernel"];
    ASSERT_EQ(k["survived"].size(), 1u);
    EXPECT_EQ(k["survived"][0]["op"], want[i].op);
    EXPECT_EQ(k["survived"][0]["section_line"], want[i].line);
    EXPECT_EQ(k["applicable"], k["killed"].get<int>() + 1);
    EXPECT_NE(r[i].detail.find(std::string("weak inputs: the test still passes when ")),
              std::string::npos);
    EXPECT_NE(r[i].detail.find(want[i].words), std::string::npos);
  }
  // The row sum's survivor differs from the original only at sizes one less than the block.
  const auto& battery = r[1].report["mutant"]["kernel_battery"];
  EXPECT_EQ(battery["mutants"].back()["result"], "survived");
  EXPECT_EQ(battery["mutants"].back()["replay"], "differs_tail");
}

TEST(VerifyKernelMutants, AnOperandTheTestMakesTheIdentityIsFlaggedByDroppingIt) {
  // An add tested with its second operand all zeros and a scale tested only with alpha = 1,
  // each operand loaded inline (no arithmetic mutant applies to an expression holding a
  // pointer): only a kernel that drops the operand shows what the test's inputs cannot see.
  TempDir tmp;
  auto pool = make_pool(battery_config(tmp));
  ASSERT_TRUE(pool);
  auto r =
      run_all(*pool, {load_sample("kmutant_weak_add_zero"), load_sample("kmutant_weak_scale_one")});
  const char* dropped[] = {"(`tl.load(y_ptr + offsets, mask=mask)` dropped)", "(`alpha` dropped)"};
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(r[i].detail + "\n" + r[i].report.dump());
    ASSERT_EQ(r[i].verdict, Verdict::passed);
    EXPECT_EQ(r[i].flags, std::vector<std::string>{verify::kWeakInputs});
    const auto& k = r[i].report["mutation"]["kernel"];
    ASSERT_EQ(k["survived"].size(), 1u);
    EXPECT_EQ(k["survived"][0]["op"], "drop");
    EXPECT_NE(r[i].detail.find(dropped[i]), std::string::npos);
    EXPECT_NE(r[i].detail.find("the dropped operand is the identity in every input"),
              std::string::npos);
  }
}

TEST(VerifyKernelMutants, AStrongTestOfARestrictedDomainStaysVerified) {
  // log on positive inputs only: right, since log is undefined elsewhere. The replay runs on
  // inputs of both signs and compares where the original is finite.
  TempDir tmp;
  auto pool = make_pool(battery_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("kmutant_strong_log"), load_sample("triton_vector_add")});
  for (const auto& x : r) {
    SCOPED_TRACE(x.detail + "\n" + x.report.dump());
    ASSERT_EQ(x.verdict, Verdict::passed);
    EXPECT_TRUE(x.verified()) << Json(x.flags).dump();
    const auto& k = x.report["mutation"]["kernel"];
    EXPECT_EQ(k["killed"], k["applicable"]);
    EXPECT_GE(k["killed"].get<int>(), 3);
    EXPECT_EQ(k["tried"], 8);  // verifier.kernel_mutants
    EXPECT_EQ(k["survived"], Json::array());
    // A killed mutant was launched in place of the original (not skipped).
    for (const auto& e : x.report["mutant"]["kernel_battery"]["mutants"])
      if (e["result"] == "killed") {
        EXPECT_GE(e["swapped_launches"].get<int>(), 1) << e.dump();
      }
  }
  // The fill of the masked load never reaches the output: an equivalent mutant, not counted.
  Json other;
  for (const auto& e : r[0].report["mutant"]["kernel_battery"]["mutants"])
    if (e["op"] == "other") other = e;
  EXPECT_EQ(other.value("result", ""), "equivalent") << r[0].report["mutant"].dump();
  EXPECT_EQ(r[0].report["mutation"]["kernel"]["equivalent"], 1);
}

TEST(VerifyKernelMutants, AMutantPassedByStaleMemoryIsConfirmedOnPoisonedOutputs) {
  // The test frees its golden answer just before the kernel's output takes that memory: a
  // mutant that leaves the last element unwritten passes on the stale right answer, then fails
  // when the outputs it should write are poisoned first.
  TempDir tmp;
  auto pool = make_pool(battery_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("mutant_reused_memory"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_TRUE(r.verified()) << r.detail << r.report["mutant"].dump();
  bool bound_killed = false;
  for (const auto& e : r.report["mutant"]["kernel_battery"]["mutants"])
    bound_killed |= e["op"] == "bound" && e["result"] == "killed";
  EXPECT_TRUE(bound_killed) << r.report["mutant"]["kernel_battery"].dump();
}

TEST(VerifyKernelMutants, ASmallLaunchCannotHideALargerOneFromTheOutputMutants) {
  TempDir tmp;
  auto pool = make_pool(battery_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("mutant_weak_small_launch"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kWeakTest}) << r.detail;
  EXPECT_EQ(r.report["mutation"]["survived"], Json({"tail"}));
  EXPECT_EQ(r.report["mutation"]["survived_in_launch"], Json({{"tail", 2}}));
  EXPECT_NE(r.detail.find("under the tail mutant in launch 2 alone"), std::string::npos)
      << r.detail;
  EXPECT_FALSE(r.report["mutation"].contains("kernel"));  // weak already: no kernel battery
}

TEST(VerifyKernelMutants, ConstantOutputsAreFlagged) {
  TempDir tmp;
  auto pool = make_pool(battery_config(tmp));
  ASSERT_TRUE(pool);
  // All zeros; every element 7; a single element (trivially constant).
  auto r =
      run_all(*pool, {load_sample("kmutant_constant_output"), load_sample("mutant_int_constant"),
                      load_sample("kmutant_single_element")});
  for (const auto& x : r) {
    SCOPED_TRACE(x.detail + "\n" + x.report.dump());
    ASSERT_EQ(x.verdict, Verdict::passed);
    EXPECT_FALSE(x.verified());
    EXPECT_NE(std::find(x.flags.begin(), x.flags.end(), verify::kConstantOutput), x.flags.end());
    EXPECT_EQ(x.report["coverage"]["constant_outputs"], true);
    EXPECT_NE(x.detail.find("constant output: every output"), std::string::npos);
  }
  // All zeros: a subtraction where an addition should be passes as well.
  EXPECT_EQ(r[0].flags, (std::vector<std::string>{verify::kConstantOutput, verify::kWeakInputs}));
  EXPECT_EQ(r[0].report["mutation"]["kernel"]["survived"][0]["desc"], "`+` is `-` in `x + y`");
}

TEST(VerifyKernelMutants, TheBatteryKeepsToItsCountInEitherProcessModeAndCanBeOff) {
  for (auto mode : {verify::MutantRun::same_process, verify::MutantRun::new_process}) {
    SCOPED_TRACE(std::string(verify::to_string(mode)));
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.mutant_run = mode;
    cfg.kernel_mutants = 2;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto r = run_all(
        *pool, {load_sample("kmutant_strong_log"), load_sample("kmutant_weak_row_sum_block")});
    EXPECT_TRUE(r[0].verified()) << r[0].detail;
    EXPECT_EQ(r[0].report["mutation"]["kernel"]["tried"], 2);
    EXPECT_EQ(r[1].flags, std::vector<std::string>{verify::kWeakInputs});
  }
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.kernel_mutants = 0;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("kmutant_weak_relu_positive"));
  EXPECT_TRUE(r.verified()) << r.detail;  // only a kernel mutant shows this one
  EXPECT_FALSE(r.report["mutation"].contains("kernel"));
  // Without output mutants the kernel battery still runs, and flags it.
  TempDir tmp2;
  auto cfg2 = test_config(tmp2);
  cfg2.mutants = {};
  auto pool2 = make_pool(cfg2);
  ASSERT_TRUE(pool2);
  r = run_one(*pool2, load_sample("kmutant_weak_relu_positive"));
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kWeakInputs}) << r.report.dump();
  EXPECT_EQ(r.report["mutation"]["kernel"]["survived"].size(), 1u);
}

TEST(VerifyKernelMutants, TheConfigurationIsReadStrictly) {
  verify::VerifierConfig c;
  EXPECT_EQ(c.kernel_mutants, 8);
  EXPECT_EQ(c.kernel_mutant_time_s, 30);
  EXPECT_EQ(c.mutants.size(), 6u);
  ASSERT_TRUE(read_verifier("verifier:\n  kernel_mutants: 3\n  kernel_mutant_time_s: 12.5\n"
                            "  mutants: [permute_row]\n",
                            c)
                  .ok());
  EXPECT_EQ(c.kernel_mutants, 3);
  EXPECT_EQ(c.kernel_mutant_time_s, 12.5);
  EXPECT_EQ(c.mutants, std::vector<std::string>{"permute_row"});
  for (const char* bad :
       {"verifier:\n  kernel_mutants: -1\n", "verifier:\n  kernel_mutants: many\n",
        "verifier:\n  kernel_mutant_time_s: 0\n", "verifier:\n  kernel_mutant: 3\n"}) {
    SCOPED_TRACE(bad);
    verify::VerifierConfig d;
    auto st = read_verifier(bad, d);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("k.yaml:2: verifier.kernel_mutant"), std::string::npos)
        << st.error().message;
  }
}

TEST(VerifyKernelMutants, TheScoreCarriesTheKernelBatteryAndFlagsItsSurvivor) {
  verify::VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  Json report = {
      {"battery", {{"mutants", Json::array({{{"mutant", "tail"}, {"result", "killed"}}})}}},
      {"kernel_battery",
       {{"mutants", Json::array({{{"result", "killed"}},
                                 {{"result", "equivalent"}},
                                 {{"result", "unsafe"}},
                                 {{"result", "survived"}}})},
        {"killed", 1},
        {"applicable", 2},
        {"equivalent", 1},
        {"not_run", 0},
        {"survived", Json::array({{{"mutant", "k4"},
                                   {"op", "mask_drop"},
                                   {"kernel", "add_kernel"},
                                   {"section", "code"},
                                   {"section_line", 12},
                                   {"desc", "the mask of the tl.load `tl.load(x)` is removed"},
                                   {"hint",
                                    "inputs whose size is a multiple of the block cannot "
                                    "tell them apart"}}})}}}};
  report["verdict"] = "failed";
  auto parsed = verify::parse_harness_report(harness_json(report), verify::ReportOrigin::harness);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  verify::apply_mutation_score(r, verify::score_mutants(Verdict::failed, false, &*parsed));
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kWeakInputs});
  const auto& k = r.report["mutation"]["kernel"];
  EXPECT_EQ(k["killed"], 1);
  EXPECT_EQ(k["applicable"], 2);
  EXPECT_EQ(k["equivalent"], 1);
  EXPECT_EQ(k["tried"], 4);
  EXPECT_EQ(r.report["mutation"]["killed"], 2);  // skip-launch and tail: the output battery
  EXPECT_EQ(r.detail,
            "1 test passed; weak inputs: the test still passes when the mask of the tl.load "
            "`tl.load(x)` is removed (code line 12): inputs whose size is a multiple of the "
            "block cannot tell them apart");
}

}  // namespace
}  // namespace kforge::test
