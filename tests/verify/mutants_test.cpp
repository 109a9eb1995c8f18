// The battery of output mutants, end to end through the pool, on launches of the CPU stand-in
// for Triton (tests/verify/fake_triton): finding each launch's outputs, applying each mutant,
// the applicability rules, the weak_test flag and the mutation score.

#include <gtest/gtest.h>

#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::MutantRun;
using verify::Verdict;
using Json = nlohmann::json;

bool has_flag(const verify::VerifyResult& r, const char* flag) {
  return std::find(r.flags.begin(), r.flags.end(), flag) != r.flags.end();
}

std::vector<std::string> results_of(const Json& battery) {
  std::vector<std::string> out;
  for (const auto& e : battery["mutants"])
    out.push_back(e["mutant"].get<std::string>() + ":" + e["result"].get<std::string>());
  return out;
}

TEST(VerifyMutants, AStrongTestKillsEveryMutantAndTheRealRunFindsTheOutputs) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_vector_add"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_TRUE(r.verified()) << Json(r.flags).dump();
  // The outputs: the one buffer each launch wrote. Size 1 (0 + 0) changed nothing: that launch
  // was made again with its buffers filled in turn, which found out_ptr.
  const auto& cov = r.report["coverage"];
  EXPECT_EQ(cov["outputs"], Json({{"add_kernel", {"out_ptr"}}}));
  EXPECT_EQ(cov["probed_outputs"], Json({"out_ptr"}));
  EXPECT_EQ(cov["output_sizes"], Json({1, 63, 64, 130}));
  EXPECT_EQ(cov["blocks"], Json({64}));
  EXPECT_EQ(cov["tail_path"], true);  // 63 and 130 are not multiples of 64
  EXPECT_EQ(cov["size_one"], true);
  EXPECT_EQ(cov["empty"], false);
  EXPECT_EQ(cov["launches"], 4);
  const auto& battery = r.report["mutant"]["battery"];
  EXPECT_EQ(results_of(battery), (std::vector<std::string>{
                                     "tail:killed", "interior:killed", "permute:killed",
                                     "permute_row:not_applicable", "scale:killed", "zero:killed"}));
  EXPECT_EQ(r.report["mutation"]["killed"], 6);  // the skip-launch run counts as one
  EXPECT_EQ(r.report["mutation"]["applicable"], 6);
  // Launches of more than one element (63, 64, 130) had the partial mutants applied to each alone.
  EXPECT_EQ(battery["mutants"][0]["per_launch"].size(), 3u) << battery.dump();
  EXPECT_NE(
      r.stderr_tail.find("output mutants (tail, interior, permute, permute_row, scale, zero)"),
      std::string::npos);
}

TEST(VerifyMutants, WeakTestsAreFlaggedByTheFirstSurvivorAndTheBatteryStopsThere) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r =
      run_all(*pool, {load_sample("mutant_weak_prefix"), load_sample("mutant_weak_sorted"),
                      load_sample("mutant_weak_loose"), load_sample("mutant_weak_self_golden")});
  struct Want {
    const char* survivor;
    int killed;
    const char* words;
  };
  const Want want[] = {{"tail", 1, "never checks the tail"},
                       {"permute", 3, "reordered"},
                       {"scale", 4, "tolerance is too loose"},
                       {"zero", 5, "golden result comes from the kernel itself"}};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(std::to_string(i) + ": " + r[i].detail + "\n" + r[i].report.dump());
    EXPECT_EQ(r[i].verdict, Verdict::passed);
    EXPECT_EQ(r[i].flags, std::vector<std::string>{verify::kWeakTest});
    EXPECT_FALSE(r[i].verified());
    const auto& m = r[i].report["mutation"];
    EXPECT_EQ(m["survived"], Json({want[i].survivor}));
    EXPECT_EQ(m["killed"], want[i].killed);
    EXPECT_EQ(m["applicable"], want[i].killed + 1);
    EXPECT_NE(r[i].detail.find(std::string("weak test: it still passes under the ") +
                               want[i].survivor + " mutant"),
              std::string::npos);
    EXPECT_NE(r[i].detail.find(want[i].words), std::string::npos);
    // Stopped at the first survivor: the mutants after it did not run.
    const auto& battery = r[i].report["mutant"]["battery"];
    EXPECT_EQ(battery["mutants"].back()["mutant"], want[i].survivor);
    EXPECT_EQ(battery["mutants"].size() + battery["not_run"].size(), 6u);
  }
}

TEST(VerifyMutants, AMutantThatCannotChangeAnOutputDoesNotApply) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("mutant_int_constant"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  // Every element of its one output is 7: the output mutants that cannot change it do not
  // apply, the others are killed, and the sample is flagged for its constant output.
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kConstantOutput}) << r.detail;
  const auto& m = r.report["mutation"];
  EXPECT_EQ(m["not_applicable"], Json({"permute", "permute_row", "scale"}));
  EXPECT_EQ(m["killed"], 4);
  EXPECT_EQ(m["applicable"], 4);
  const auto& battery = r.report["mutant"]["battery"];
  EXPECT_EQ(battery["mutants"][4]["detail"],
            "the change vanished in every output (all elements equal, or integer/boolean "
            "rounding)");
  EXPECT_EQ(r.report["coverage"]["output_dtypes"], Json({"int"}));
}

TEST(VerifyMutants, TheConfiguredMutantsRunInEitherProcessMode) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.mutants = {"scale"};
  cfg.mutant_run = MutantRun::new_process;
  cfg.kernel_mutants = 0;  // the output mutants alone (the prefix test has weak inputs too)
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("mutant_weak_prefix"), load_sample("mutant_weak_loose")});
  // Only scale runs: the prefix test catches it (every element changes), the loose one does not.
  EXPECT_TRUE(r[0].verified()) << r[0].report.dump();
  EXPECT_EQ(results_of(r[0].report["mutant"]["battery"]), std::vector<std::string>{"scale:killed"});
  EXPECT_EQ(r[0].report["mutant"]["process"], "new");
  EXPECT_EQ(r[1].flags, std::vector<std::string>{verify::kWeakTest});
  EXPECT_EQ(r[1].report["mutation"]["survived"], Json({"scale"}));
}

TEST(VerifyMutants, NoOutputMutantsLeavesTheSkipLaunchRunAlone) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.mutants = {};
  cfg.kernel_mutants = 0;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("mutant_weak_prefix"), load_sample("triton_vacuous")});
  EXPECT_TRUE(r[0].verified()) << r[0].report.dump();
  EXPECT_FALSE(r[0].report["mutant"].contains("battery"));
  EXPECT_EQ(r[0].report["mutation"]["killed"], 1);
  EXPECT_EQ(r[0].report["mutation"]["applicable"], 1);
  // A vacuous test: the skip-launch run survives; its flag is its own, not weak_test.
  EXPECT_EQ(r[1].flags, std::vector<std::string>{verify::kMutantSurvived});
  EXPECT_EQ(r[1].report["mutation"]["survived"], Json({"skip_launch"}));
  EXPECT_EQ(r[1].report["mutation"]["killed"], 0);
  EXPECT_FALSE(has_flag(r[1], verify::kWeakTest));
}

TEST(VerifyMutants, ASkippedLaunchPoisonsItsOutputsSoReusedMemoryCannotPassIt) {
  // The test frees the buffer holding its golden answer just before the kernel's output is
  // allocated, and the allocator hands that buffer out again: the real launch changes nothing,
  // and with the launch skipped the right answer would still be in the output. The real run
  // finds the output by launching again on filled buffers, and the skipped launch fills it
  // with all-ones bytes (NaN here), in either process mode.
  for (MutantRun mode : {MutantRun::same_process, MutantRun::new_process}) {
    SCOPED_TRACE(std::string(verify::to_string(mode)));
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.mutant_run = mode;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto r = run_one(*pool, load_sample("mutant_reused_memory"));
    ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
    EXPECT_TRUE(r.verified()) << Json(r.flags).dump() << r.detail;
    // The real run's one launch left its output as it was (the answer was in it already):
    // made again on a filled output, it showed which buffer it writes.
    EXPECT_EQ(r.report["coverage"]["outputs"], Json({{"add_kernel", {"out_ptr"}}}));
    EXPECT_EQ(r.report["coverage"]["probed_outputs"], Json({"out_ptr"}));
    EXPECT_EQ(r.report["mutant"]["verdict"], "failed") << r.report["mutant"].dump();
    EXPECT_EQ(r.report["mutation"]["killed"], 6);
    EXPECT_EQ(r.report["mutation"]["applicable"], 6);
  }
}

}  // namespace
}  // namespace kforge::test
