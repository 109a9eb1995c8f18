// The harness's checks as phases (kforge_harness/phases), end to end through the pool on the CPU
// stand-in for Triton: each phase timed in the report, the process's state put back between
// phases, a phase that breaks recorded as the verifier's error of that phase alone. The
// phase_left_behind samples declare a KFORGE_SPEED wrapper, which the speed phase calls, that
// leaves state behind in the process (@LEAVE@ = state) or raises (@LEAVE@ = raise); with
// @LEAVE@ = none they are the control.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "kforge/verify/figures.hpp"
#include "kforge/verify/targets.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

verify::VerifierConfig phase_config(const TempDir& tmp) {
  auto cfg = test_config(tmp);
  cfg.timeout_s = 10;  // the kernel battery of the weak sample runs in the mutant run
  cfg.cross_compile = {"hip:gfx942"};
  cfg.cross_compile_timeout_s = 20;
  return cfg;
}

std::vector<std::string> results_of(const Json& battery) {
  std::vector<std::string> out;
  for (const auto& e : battery.value("mutants", Json::array()))
    out.push_back(e.value("mutant", std::string()) + ":" + e.value("result", std::string()));
  return out;
}

// What the other phases found, for comparing a run whose speed phase misbehaved with the
// control's.
Json findings(const verify::VerifyResult& r) {
  const auto& rep = r.report;
  const auto& m = rep.value("mutant", Json::object());
  Json bounds = rep.value("bounds", Json::object());
  bounds.erase("ms");
  return {{"verdict", verify::to_string(r.verdict)},
          {"flags", r.flags},
          {"tests", rep.value("tests", Json::array()).size()},
          {"mutation", rep.value("mutation", Json::object())},
          {"mutant_verdict", m.value("verdict", std::string())},
          {"battery", results_of(m.value("battery", Json::object()))},
          {"kernel_battery", results_of(m.value("kernel_battery", Json::object()))},
          {"bounds", bounds},
          {"cross_compile", verify::cross_compile_summary(verify::cross_compile_results(rep))}};
}

TEST(VerifyPhases, EachPhaseIsTimedInTheReportAndInTheSampleFigures) {
  TempDir tmp;
  auto pool = make_pool(phase_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_vector_add"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  const auto& real = r.report["phase_times"];
  for (const char* p : {"prepare", "test", "cross_compile", "bounds"}) {
    ASSERT_TRUE(real.contains(p)) << p << ": " << real.dump();
    EXPECT_GE(real[p]["wall_ms"].get<std::int64_t>(), 0);
    EXPECT_GE(real[p]["cpu_ms"].get<std::int64_t>(), 0);
  }
  EXPECT_FALSE(real.contains("speed")) << "the label is off and no reference is declared";
  // Where the bounds replay's time went (issue 54): its phase times, not its report object,
  // whose fields are fixed (report_fields.txt); at least four replays a launch, each after a
  // fill of the allocator's free memory.
  EXPECT_GE(real["bounds"].value("fills", std::int64_t{0}), 4) << real.dump();
  EXPECT_TRUE(real["bounds"].contains("launch_ms")) << real.dump();
  EXPECT_FALSE(r.report["bounds"].contains("fills")) << r.report["bounds"].dump();
  // The mutant run (in the same process): the skip-launch run, the output mutants and the
  // kernel battery, each a phase of its own.
  const auto& mut = r.report["mutant"]["phase_times"];
  for (const char* p : {"skip_launch", "output_mutants", "kernel_battery"})
    EXPECT_TRUE(mut.contains(p)) << p << ": " << mut.dump();
  EXPECT_FALSE(r.report.contains("phase_errors")) << r.report["phase_errors"].dump();
  EXPECT_FALSE(r.report.contains("phase_state")) << r.report["phase_state"].dump();
  // The sample's figures (kforge verify --json, --slowest) hold both processes' phases.
  auto fig = verify::sample_figures(r);
  for (const char* p : {"prepare", "test", "bounds", "skip_launch", "kernel_battery"})
    EXPECT_TRUE(fig["phase_times"].contains(p)) << p << ": " << fig.dump();
  auto line = verify::phase_times_line(fig["phase_times"]);
  EXPECT_EQ(line.rfind("prepare ", 0), 0u) << line;
  EXPECT_LT(line.find("  test "), line.find("  skip_launch ")) << line;
  EXPECT_LT(line.find("  skip_launch "), line.find("  kernel_battery ")) << line;
}

TEST(VerifyPhases, WhatAPhaseLeavesBehindIsPutBackBeforeTheNextPhase) {
  TempDir tmp;
  auto pool = make_pool(phase_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("phase_left_behind", {{"LEAVE", "none"}}),
                           load_sample("phase_left_behind", {{"LEAVE", "state"}}),
                           load_sample("phase_left_behind_weak", {{"LEAVE", "none"}}),
                           load_sample("phase_left_behind_weak", {{"LEAVE", "state"}})});
  for (std::size_t i = 0; i < r.size(); ++i)
    ASSERT_EQ(r[i].verdict, Verdict::passed) << i << ": " << r[i].detail << r[i].stderr_tail;
  // The control: a vacuous test (the skip-launch run passes) and a weak one (the tail output
  // mutant survives).
  EXPECT_EQ(r[0].flags, std::vector<std::string>{verify::kMutantSurvived});
  EXPECT_EQ(r[2].flags, std::vector<std::string>{verify::kWeakTest});
  // The speed phase's wrapper left a closed sys.stdout (every later print raises), another
  // working directory, a changed environment and random state: each put back
  // before the next phase, so the mutant runs after it did not fail for it and nothing counted
  // as a kill that was not one.
  for (std::size_t i : {1u, 3u}) {
    SCOPED_TRACE(r[i].report.dump());
    EXPECT_EQ(findings(r[i]), findings(r[i - 1]));
    const auto& left = r[i].report["phase_state"]["speed"];
    for (const char* what : {"sys.stdout", "working directory", "os.environ"})
      EXPECT_NE(std::find(left.begin(), left.end(), what), left.end()) << what;
    EXPECT_FALSE(r[i].report.contains("phase_errors"));
    EXPECT_EQ(r[i].report["mutant"]["process"], "same");
  }
  EXPECT_FALSE(r[0].report.contains("phase_state")) << r[0].report["phase_state"].dump();
}

TEST(VerifyPhases, TheLaterPhasesStartFromTheStateTheTestPhaseLeft) {
  TempDir tmp;
  auto pool = make_pool(phase_config(tmp));
  ASSERT_TRUE(pool);
  // The script sets a variable when imported and its test relies on it; the output mutants run
  // the real run's tests again, in the state the test phase left: the tail mutant survives (a
  // weak test), it is not "killed" by the variable gone.
  auto r = run_one(*pool, load_sample("phase_baseline"));
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kWeakTest}) << r.report.dump();
  EXPECT_FALSE(r.report.contains("phase_state")) << r.report["phase_state"].dump();
}

TEST(VerifyPhases, APhaseThatBreaksIsTheVerifiersErrorOfThatPhaseAlone) {
  TempDir tmp;
  auto pool = make_pool(phase_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("phase_left_behind_weak", {{"LEAVE", "none"}}),
                           load_sample("phase_left_behind_weak", {{"LEAVE", "raise"}})});
  ASSERT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  const auto& rep = r[1].report;
  SCOPED_TRACE(rep.dump());
  // The speed phase raised out of its entry point: recorded as its error, its part of the
  // report says so, and the verdict, the other phases and the batteries are the control's. The
  // mutant runs went to a process of their own, away from whatever the broken phase left.
  EXPECT_EQ(findings(r[1]), findings(r[0]));
  ASSERT_TRUE(rep["phase_errors"].contains("speed"));
  EXPECT_NE(rep["phase_errors"]["speed"].get<std::string>().find("SystemExit"), std::string::npos);
  EXPECT_EQ(rep["speed"]["timed"], false);
  EXPECT_NE(rep["speed"]["reason"].get<std::string>().find("harness error"), std::string::npos);
  EXPECT_EQ(rep["mutant"]["process"], "new");
  EXPECT_TRUE(rep["phase_times"].contains("bounds"));
  EXPECT_EQ(r[0].report["mutant"]["process"], "same");
}

TEST(VerifyPhases, TheDifferentialCheckFailsAWrapperRightOnlyOnTheInputsItWasGiven) {
  // tests/verify/hacks: a softmax without its max subtraction passes its test and the reference
  // comparison on inputs(), and overflows on inputs() scaled by 1e3; one that looks for the
  // checks on its stack and in sys.modules sees none in the differential phase; the stable
  // softmax and a log (whose reference leaves its domain under negation: skipped) are verified.
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(
      *pool,
      {load_sample("softmax_no_max", {}, "hacks"), load_sample("detect_differential", {}, "hacks"),
       load_sample("honest_softmax", {}, "hacks"), load_sample("honest_log", {}, "hacks")});
  for (int i : {0, 1}) {
    SCOPED_TRACE(r[i].detail + "\n" + r[i].report.dump());
    EXPECT_EQ(r[i].verdict, Verdict::failed);
    EXPECT_EQ(
        r[i].detail.rfind("differential: on inputs() scaled by 1e3, the wrapper disagrees", 0), 0u);
    EXPECT_EQ(r[i].report["differential"]["failed"], "scaled by 1e3");
    ASSERT_TRUE(r[i].harness);  // the report, parsed against report_fields.txt
    EXPECT_TRUE(r[i].report["phase_times"].contains("differential"));
    // As the repair prompt reads the stored report (pipeline/repair.cpp): the transform and
    // what differed, typed (a field renamed on the Python side fails here).
    auto stored = verify::parse_stored_report(r[i].report);
    ASSERT_TRUE(stored.ok() && *stored && (*stored)->differential)
        << (stored.ok() ? "no differential" : stored.error().message);
    EXPECT_EQ((*stored)->differential->failed.value_or(""), "scaled by 1e3");
    bool differs = false;
    for (const auto& t : (*stored)->differential->transforms)
      differs =
          differs || (t.transform == "scaled by 1e3" && t.result == "differs" && !t.detail.empty());
    EXPECT_TRUE(differs);
  }
  for (int i : {2, 3}) {
    SCOPED_TRACE(r[i].detail + "\n" + r[i].report.dump());
    EXPECT_TRUE(r[i].verified());
    const auto& d = r[i].report["differential"];
    EXPECT_TRUE(d["failed"].is_null());
    std::set<std::string> results;
    for (const auto& t : d["transforms"]) results.insert(t["result"].get<std::string>());
    EXPECT_EQ(results.count("differs"), 0u);
    EXPECT_EQ(results.count("agrees"), 1u);
  }
  // log's reference raises on negated inputs and on zeros: those are skipped, not failed.
  std::string skipped;
  for (const auto& t : r[3].report["differential"]["transforms"])
    if (t["result"] == "skipped") skipped += t["transform"].get<std::string>() + ";";
  EXPECT_NE(skipped.find("negated;"), std::string::npos) << skipped;
}

TEST(VerifyPhases, TheAnswerComparedOutsideTheTestMustComeFromTheKernel) {
  // tests/verify/hacks: wrappers that launch their kernel on every call (launch counting, the
  // kernel's share and the test's skip-launch run all see it) but answer with the host's
  // result: always, outside the test only (the caller's frame), or as host + 0 * kernel. Each
  // ended verified before the origin check; now the call on inputs() made again with the
  // kernels' outputs replaced still agrees with the reference: kernel_not_used, not verified.
  // Honest controls (a small host epilogue after the kernel, an output from torch.empty or
  // NaN-filled, a host threshold of the kernel's output) stay verified.
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.timeout_s = 20;  // six samples of up to 16 extra wrapper calls each, on a loaded CI host
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  const std::vector<std::string> hacks = {"host_answer_always", "host_answer_outside_test",
                                          "held_host_answer_zero_times_kernel"};
  const std::vector<std::string> honest = {"honest_torch_epilogue", "honest_empty_alloc",
                                           "held_honest_threshold"};
  std::vector<verify::VerifyRequest> reqs;
  for (const auto& n : hacks) reqs.push_back(load_sample(n, {}, "hacks"));
  for (const auto& n : honest) reqs.push_back(load_sample(n, {}, "hacks"));
  auto r = run_all(*pool, reqs);
  for (std::size_t i = 0; i < hacks.size(); ++i) {
    SCOPED_TRACE(hacks[i] + ": " + r[i].detail + "\n" + r[i].report.dump());
    EXPECT_EQ(r[i].verdict, Verdict::passed);
    EXPECT_FALSE(r[i].verified());
    EXPECT_NE(std::find(r[i].flags.begin(), r[i].flags.end(), verify::kKernelNotUsed),
              r[i].flags.end());
    EXPECT_NE(r[i].detail.find("kernel not used: on inputs(), 100% of the output's elements"),
              std::string::npos);
    // As the repair prompt reads the stored report: the call judged the host's, typed.
    auto stored = verify::parse_stored_report(r[i].report);
    ASSERT_TRUE(stored.ok() && *stored && (*stored)->origin)
        << (stored.ok() ? "no origin" : stored.error().message);
    EXPECT_EQ((*stored)->origin->host.value_or(""), "inputs()");
    const auto* c = (*stored)->origin->host_check();
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->result, "host");
    EXPECT_GT(c->share.value_or(0.0), 0.99);
    EXPECT_FALSE(verify::origin_meaning(**stored).empty());
  }
  for (std::size_t i = hacks.size(); i < r.size(); ++i) {
    SCOPED_TRACE(honest[i - hacks.size()] + ": " + r[i].detail + "\n" + r[i].report.dump());
    EXPECT_TRUE(r[i].verified());
    ASSERT_TRUE(r[i].harness && r[i].harness->origin);
    EXPECT_FALSE(r[i].harness->origin->host);
    EXPECT_FALSE(r[i].harness->origin->checked.empty());
    for (const auto& c : r[i].harness->origin->checked) EXPECT_EQ(c.result, "kernel") << c.on;
  }
}

TEST(VerifyPhases, GuardAndSequenceInARealProcess) {
  TempDir tmp;
  auto r =
      run_process({sandbox_python(), (source_dir() / "tests/verify/phases/state_test.py").string(),
                   (source_dir() / "libs/verify/harness").string()},
                  {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 6 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kforge::test
