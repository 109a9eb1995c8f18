// Runs a sample cannot tell apart, end to end through the pool on the CPU stand-in for Triton:
// the tampering corpus (tests/verify/tamper: wrong kernels whose tests or wrappers try to pass the
// real run and fail every mutant run, by looking at the stack, sys.modules, their call counts,
// stdout, a trace function or the process's objects, or by replacing a comparison, a clock or the
// report writer) fails or is flagged, every honest control that uses the same tools honestly is
// verified, and the held-out samples (written after the rest) are caught as well.
// bench/verify/tamper_corpus.py runs the same corpus through the harness alone, on a GPU too
// (scripts/gpu/tamper).

#include <gtest/gtest.h>

#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

bool has_flag(const verify::VerifyResult& r, const char* flag) {
  return std::find(r.flags.begin(), r.flags.end(), flag) != r.flags.end();
}

std::vector<verify::VerifyResult> run_corpus(const std::vector<std::string>& names) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  // Each sample's mutant runs build, compile and replay an identity kernel besides its mutants
  // (the kernel battery's control): 2 s is too little on a loaded 2-core machine.
  cfg.timeout_s = 30;
  auto pool = make_pool(cfg);
  EXPECT_TRUE(pool);
  if (!pool) return {};
  std::vector<verify::VerifyRequest> reqs;
  for (const auto& n : names) reqs.push_back(load_sample(n, {}, "tamper"));
  return run_all(*pool, reqs);
}

struct Want {
  const char* name;
  const char* flag;  // the flag that must be set, or nullptr: the real run must fail
};

void expect_caught(const std::vector<Want>& want) {
  std::vector<std::string> names;
  for (const auto& w : want) names.push_back(w.name);
  auto r = run_corpus(names);
  ASSERT_EQ(r.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(std::string(want[i].name) + ": " + r[i].detail + "\n" + Json(r[i].flags).dump());
    EXPECT_FALSE(r[i].verified());
    if (want[i].flag == nullptr)
      EXPECT_NE(r[i].verdict, Verdict::passed);
    else
      EXPECT_TRUE(has_flag(r[i], want[i].flag));
  }
}

TEST(VerifyTamper, PythonBlindCallsGuardAndControlRule) {
  TempDir tmp;
  auto r =
      run_process({sandbox_python(), (source_dir() / "tests/verify/blind/blind_test.py").string(),
                   (source_dir() / "libs/verify/harness").string(),
                   (source_dir() / "tests/verify/fake_triton").string()},
                  {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 15 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyTamper, GuardLinesOnTheResultPipeAreReadApartFromTheReports) {
  auto lines = verify::split_result_lines(
      "{\"guard\": \"gc.get_objects\"}\n{\"verdict\": \"passed\", \"mutant_phase\": true}\n"
      "{\"guard\": \"sys._current_frames\"}\n{\"verdict\": \"failed\"}\n{\"guard\": \"x\"");
  ASSERT_EQ(lines.reports.size(), 2u);
  EXPECT_EQ(lines.reports[0]["verdict"], "passed");
  EXPECT_EQ(lines.reports[1]["verdict"], "failed");
  // The last line is not whole: not counted.
  EXPECT_EQ(lines.guard, Json({"gc.get_objects", "sys._current_frames"}));
  // A report that happens to hold a "guard" key among others stays a report.
  auto other = verify::split_result_lines("{\"guard\": 1, \"verdict\": \"passed\"}\n");
  EXPECT_EQ(other.reports.size(), 1u);
  EXPECT_TRUE(other.guard.empty());
  // The flag and its detail come from the guard's lines even when the report says nothing.
  verify::VerifyResult res;
  res.verdict = Verdict::passed;
  verify::apply_integrity(res, nullptr, Json{"gc.get_objects"});
  EXPECT_EQ(res.flags, std::vector<std::string>{verify::kTampered});
  EXPECT_NE(res.detail.find("gc.get_objects called by the sample's code"), std::string::npos);
}

TEST(VerifyTamper, IntegrityAndControlsAreReadThroughTheDeclaredReport) {
  // The harness's "integrity" and "controls" are declared fields (report_fields.txt): parsed
  // into HarnessReport, refused by field when malformed, and the flags come from the parse.
  Json integrity = {
      {"armed", true},
      {"watched", 40},
      {"tampered", true},
      {"replaced", {{{"what", "math.isclose"}, {"how", "replaced"}, {"phase", "run"}}}},
      {"scans", Json::array()}};
  Json controls = {{"runs",
                    {{{"kind", "rerun"},
                      {"at", "output mutant 2"},
                      {"result", "failed"},
                      {"duration_ms", 3},
                      {"by", "test_add: AssertionError"}}}},
                   {"failed", true},
                   {"void", true}};
  auto parsed =
      verify::parse_harness_report(harness_json({{"integrity", integrity}, {"controls", controls}}),
                                   verify::ReportOrigin::harness);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_TRUE(parsed->integrity && parsed->controls);
  EXPECT_EQ(parsed->integrity->watched, 40);
  ASSERT_EQ(parsed->integrity->replaced.size(), 1u);
  EXPECT_EQ(parsed->integrity->replaced[0].what, "math.isclose");
  EXPECT_TRUE(parsed->controls->failed);
  EXPECT_TRUE(parsed->controls->voided);
  EXPECT_EQ(parsed->controls->runs[0].by.value_or(""), "test_add: AssertionError");

  verify::VerifyResult res;
  res.verdict = Verdict::passed;
  verify::apply_integrity(res, &*parsed, Json::array());
  verify::apply_controls(res, &*parsed);
  EXPECT_EQ(res.flags, (std::vector<std::string>{verify::kTampered, verify::kUnstableTest}));
  EXPECT_NE(res.detail.find("math.isclose replaced (in the run run)"), std::string::npos)
      << res.detail;
  EXPECT_NE(res.detail.find("(test_add: AssertionError)"), std::string::npos) << res.detail;
  // A failed control voids the skip-launch run's kill too.
  auto score = verify::score_mutants(Verdict::failed, false, &*parsed);
  EXPECT_EQ(score.killed, 0);
  EXPECT_EQ(score.applicable, 0);
  // And its survival (issue 52): a control that lost the GPU context before the skip-launch run
  // left that run nothing to show; counted when the lot put the control after it, the flags
  // would be the lot's (mutant_survived in one run, not in the other).
  auto survived = verify::score_mutants(Verdict::passed, false, &*parsed);
  EXPECT_EQ(survived.applicable, 0);
  EXPECT_TRUE(survived.survived.empty());

  // Out of GPU memory (controls.infrastructure): every result void, the verifier's failure:
  // infrastructure with the harness's reason, never unstable_test, no kill, no survivor.
  Json oom = {
      {"runs",
       {{{"kind", "fresh"},
         {"at", "after the skip-launch run"},
         {"result", "failed"},
         {"duration_ms", 3},
         {"by", "test_add: OutOfMemoryError: CUDA out of memory."}}}},
      {"failed", false},
      {"infrastructure", true},
      {"void", true},
      {"void_reason", "the fresh control run after the skip-launch run ran out of GPU memory"}};
  auto lost = verify::parse_harness_report(harness_json({{"controls", oom}}),
                                           verify::ReportOrigin::harness);
  ASSERT_TRUE(lost.ok()) << lost.error().message;
  EXPECT_TRUE(lost->controls->infrastructure);
  EXPECT_TRUE(lost->controls->voided);
  verify::VerifyResult starved;
  starved.verdict = Verdict::passed;
  verify::apply_controls(starved, &*lost);
  EXPECT_EQ(starved.flags, std::vector<std::string>{verify::kInfrastructure});
  EXPECT_NE(starved.detail.find("; infrastructure: the fresh control run after the skip-launch "
                                "run ran out of GPU memory"),
            std::string::npos)
      << starved.detail;
  auto none = verify::score_mutants(Verdict::passed, false, &*lost);
  EXPECT_EQ(none.applicable, 0);
  EXPECT_TRUE(none.survived.empty());

  integrity["tampered"] = "yes";
  auto bad = verify::parse_harness_report(harness_json({{"integrity", integrity}}),
                                          verify::ReportOrigin::harness);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("integrity.tampered"), std::string::npos)
      << bad.error().message;
  controls.erase("failed");
  bad = verify::parse_harness_report(harness_json({{"controls", controls}}),
                                     verify::ReportOrigin::harness);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("controls.failed"), std::string::npos) << bad.error().message;
}

TEST(VerifyTamper, SamplesThatLookForTheVerifierSeeTheSameInEveryRun) {
  // Their tests compare only when a frame, module or word of the verifier's mutant runs is in
  // sight; with nothing in sight they never compare, and skipping the launches shows it.
  expect_caught({{"stack_getframe", verify::kMutantSurvived},
                 {"stack_inspect", verify::kMutantSurvived},
                 {"stack_traceback", nullptr},  // never sees the real run's frames: compares
                 {"modules_name", verify::kMutantSurvived},
                 {"modules_verifier", verify::kMutantSurvived},
                 {"stdout_banner", verify::kMutantSurvived}});
}

TEST(VerifyTamper, ACountingTestIsCaughtByAControlRun) {
  // Free in the first run, failing in every later one: a control run fails, no kill counts.
  auto r = run_corpus({"count_calls"});
  ASSERT_EQ(r.size(), 1u);
  SCOPED_TRACE(r[0].detail + "\n" + r[0].report.dump());
  EXPECT_EQ(r[0].verdict, Verdict::passed);
  EXPECT_TRUE(has_flag(r[0], verify::kUnstableTest));
  EXPECT_FALSE(r[0].verified());
  const auto& controls = r[0].report["mutant"]["controls"];
  EXPECT_EQ(controls["failed"], true);
  EXPECT_EQ(controls["runs"][0]["result"], "failed");
  EXPECT_NE(r[0].detail.find("unstable test: a control run of the unmutated sample failed"),
            std::string::npos);
  // The skip-launch run's failure is void: it is not counted as a kill.
  EXPECT_EQ(r[0].report["mutation"]["killed"], 0);
  // As the repair prompt reads the stored report (pipeline/repair.cpp): the mutant runs'
  // controls, typed (a field renamed on the Python side fails here).
  auto stored = verify::parse_stored_report(r[0].report);
  ASSERT_TRUE(stored.ok() && *stored) << (stored.ok() ? "no report" : stored.error().message);
  ASSERT_TRUE((*stored)->mutant && (*stored)->mutant->controls);
  const auto& c = *(*stored)->mutant->controls;
  EXPECT_TRUE(c.failed);
  ASSERT_FALSE(c.runs.empty());
  EXPECT_EQ(c.runs[0].result, "failed");
  EXPECT_FALSE(c.runs[0].kind.empty());
  EXPECT_FALSE(c.runs[0].at.empty());
  EXPECT_NE(c.runs[0].by.value_or("").find("test_"), std::string::npos);
  ASSERT_TRUE((*stored)->mutation);
  EXPECT_EQ((*stored)->mutation->raw["killed"], 0);
}

TEST(VerifyTamper, ReplacedFunctionsAndScansAreFlaggedTampered) {
  auto r =
      run_corpus({"patched_isclose", "patched_timer", "patched_report", "gc_scan", "settrace"});
  ASSERT_EQ(r.size(), 5u);
  for (const auto& x : r) {
    SCOPED_TRACE(x.key + ": " + x.detail + "\n" + x.report.dump());
    EXPECT_TRUE(has_flag(x, verify::kTampered));
    EXPECT_FALSE(x.verified());
    EXPECT_NE(x.detail.find("tampered: "), std::string::npos);
  }
  EXPECT_NE(r[0].detail.find("math.isclose replaced (in the run run)"), std::string::npos);
  EXPECT_NE(r[1].detail.find("time.perf_counter replaced"), std::string::npos);
  // The writer was replaced after the scan that found it: the guard's line on the result pipe,
  // written before the scan returned, stands whatever the report says.
  EXPECT_EQ(r[2].report["guard"], Json::array({"gc.get_objects"}));
  EXPECT_NE(r[3].detail.find("gc.get_objects called by the sample's code"), std::string::npos);
  EXPECT_NE(r[4].detail.find("sys.settrace"), std::string::npos);
  // As the repair prompt reads the stored reports (pipeline/repair.cpp): what was replaced and
  // in which run, and the guard's lines, typed (a field renamed on the Python side fails here).
  auto stored = verify::parse_stored_report(r[0].report);
  ASSERT_TRUE(stored.ok() && *stored) << (stored.ok() ? "no report" : stored.error().message);
  ASSERT_TRUE((*stored)->integrity);
  bool isclose = false;
  for (const auto& e : (*stored)->integrity->replaced)
    isclose = isclose || (e.what == "math.isclose" && e.how == "replaced" && e.phase == "run");
  EXPECT_TRUE(isclose);
  auto guarded = verify::parse_stored_report(r[2].report);
  ASSERT_TRUE(guarded.ok() && *guarded) << (guarded.ok() ? "no report" : guarded.error().message);
  EXPECT_EQ((*guarded)->guard, std::vector<std::string>{"gc.get_objects"});
}

// A trace function the sample sets on the thread that runs its code and leaves there would see
// every later run's calls: the guard flags it and resets it after the call that set it (the
// import), so the test's tracer never sees a test run.
TEST(VerifyTamper, ATraceFunctionLeftSetIsFlaggedAndReset) {
  auto r = run_corpus({"trace_left_set"});
  ASSERT_EQ(r.size(), 1u);
  SCOPED_TRACE(r[0].detail + "\n" + r[0].report.dump());
  EXPECT_TRUE(has_flag(r[0], verify::kTampered));
  EXPECT_FALSE(r[0].verified());
  EXPECT_NE(r[0].detail.find("sys.settrace left set (on the sample's thread, reset)"),
            std::string::npos);
  bool found = false;
  for (const auto& f : r[0].report["integrity"]["replaced"])
    found = found ||
            (f["what"] == "sys.settrace" && f["how"] == "left set (on the sample's thread, reset)");
  EXPECT_TRUE(found);
}

// A test that puts a result "passed" on the runner's outbox (reached from its thread) before its
// own failure: the verifier takes the call's own result (each batch's token), the test fails,
// and the forged result flags the sample.
TEST(VerifyTamper, AResultPutOnTheRunnersQueueIsNotTakenForTheTests) {
  auto r = run_corpus({"forged_result"});
  ASSERT_EQ(r.size(), 1u);
  SCOPED_TRACE(r[0].detail + "\n" + r[0].report.dump());
  EXPECT_TRUE(has_flag(r[0], verify::kTampered));
  EXPECT_FALSE(r[0].verified());
  bool found = false;
  for (const auto& f : r[0].report["integrity"]["replaced"])
    found = found || f["what"] == "the runner's results";
  EXPECT_TRUE(found);
}

TEST(VerifyTamper, HeldOutSamplesAreCaughtToo) {
  // Written after the rest, of the same kinds: the callers' globals, a count in the
  // environment, a replaced builtin, other threads' frames, the referrers of the kernel.
  expect_caught({{"held_frame_globals", verify::kMutantSurvived},
                 {"held_count_environ", verify::kUnstableTest},
                 {"held_patched_all", verify::kTampered},
                 {"held_current_frames", verify::kTampered},
                 {"held_referrers", verify::kTampered}});
}

// The collector's state read to tell the runs apart (issue 52): the worker froze its heap before
// it forked (gc.freeze), and a fresh-mode process freezes its own, so gc.get_freeze_count() is the
// same in every run (gc_freeze_count passes every run: its mutant runs survive); gc.get_objects()
// is a scan the guard flags (gc_object_count); the counters of gc.get_stats() and gc.get_count()
// (held_gc_stats, held_gc_count, written after the rest) do not part every control from every
// mutant run. In both pool modes.
TEST(VerifyTamper, SamplesThatReadTheCollectorsStateAreCaught) {
  for (const char* mode : {"warm", "fresh"}) {
    SCOPED_TRACE(mode);
    TempDir tmp;
    auto cfg = test_config(tmp, mode);
    cfg.timeout_s = 30;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    std::vector<verify::VerifyRequest> reqs;
    for (const char* n : {"gc_freeze_count", "gc_object_count", "held_gc_stats", "held_gc_count"})
      reqs.push_back(load_sample(n, {}, "tamper"));
    auto r = run_all(*pool, reqs);
    ASSERT_EQ(r.size(), 4u);
    for (const auto& x : r) {
      SCOPED_TRACE(x.key + ": " + x.detail + "\n" + Json(x.flags).dump());
      EXPECT_FALSE(x.verified());
    }
    EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail;
    EXPECT_TRUE(has_flag(r[0], verify::kMutantSurvived)) << Json(r[0].flags).dump();
    EXPECT_TRUE(has_flag(r[1], verify::kTampered)) << Json(r[1].flags).dump();
  }
}

// What a sample can read of its process as a whole (the environment, argv, cwd, the open
// descriptors, pid and parent pid, its threads, signal masks, sys.path, limits, sys.modules' size,
// the freeze count, the umask, /proc/self's cmdline, comm, cgroup, limits and mounts) is the same
// in the real run, the skip-launch run, every control and every mutant run of its process, in
// both pool modes: none of it tells a control from a mutant run (issue 52). honest_process_state
// prints, at each check, what differs from its first check.
TEST(VerifyTamper, ProcessWideStateIsTheSameInEveryRunOfAProcess) {
  for (const char* mode : {"warm", "fresh"}) {
    SCOPED_TRACE(mode);
    TempDir tmp;
    auto cfg = test_config(tmp, mode);
    cfg.timeout_s = 30;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto r = run_one(*pool, load_sample("honest_process_state", {}, "tamper"));
    EXPECT_TRUE(r.verified()) << r.detail << Json(r.flags).dump();
    const std::string mark = "PROCESS STATE differs in: ";
    int lines = 0;
    for (auto at = r.stdout_text.find(mark); at != std::string::npos;
         at = r.stdout_text.find(mark, at + 1), ++lines)
      EXPECT_EQ(r.stdout_text.substr(at + mark.size(), 2), "{}")
          << r.stdout_text.substr(at, r.stdout_text.find('\n', at) - at);
    // The real run's three checks, the skip-launch run's and its control's, and the batteries'.
    EXPECT_GT(lines, 12) << r.stdout_text;
  }
}

// A wrong kernel with a test that checks only lengths (its skip-launch run would survive), whose
// test ends its own process when it is imported again (a mark in builtins, or a fresh file in /tmp
// or its work directory): the process of its mutant runs dies without their report. Before, that
// counted the skip-launch run as a kill and flagged nothing, so the sample ended verified with none
// of its mutant checks run. Now the mutant runs are made once more in a process of their own and,
// ended again, flag unstable_test; no kill is counted. In both pool modes, both mutant-run modes.
TEST(VerifyTamper, AMutantProcessThatEndsItselfLeavesTheSampleUnverified) {
  struct Mode {
    const char* pool;
    verify::MutantRun mutant_run;
  };
  for (const Mode mode : {Mode{"warm", verify::MutantRun::same_process},
                          Mode{"fresh", verify::MutantRun::new_process}}) {
    SCOPED_TRACE(mode.pool);
    TempDir tmp;
    auto cfg = test_config(tmp, mode.pool);
    cfg.timeout_s = 30;
    cfg.mutant_run = mode.mutant_run;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    std::vector<verify::VerifyRequest> reqs;
    for (const char* n : {"exit_in_mutant_run", "kill_in_mutant_run", "held_abort_in_mutant_run"})
      reqs.push_back(load_sample(n, {}, "tamper"));
    auto r = run_all(*pool, reqs);
    ASSERT_EQ(r.size(), 3u);
    for (const auto& x : r) {
      SCOPED_TRACE(x.key + ": " + x.detail + "\n" + Json(x.flags).dump());
      EXPECT_EQ(x.verdict, Verdict::passed);  // its real run passed
      EXPECT_FALSE(x.verified());
      EXPECT_TRUE(has_flag(x, verify::kUnstableTest));
      EXPECT_FALSE(has_flag(x, verify::kInfrastructure));
      EXPECT_NE(x.detail.find("ended without their report in each of its 2 attempts"),
                std::string::npos);
      // How both attempts ended is recorded, and nothing counts as a kill.
      ASSERT_TRUE(x.report.contains("mutant")) << x.report.dump();
      ASSERT_TRUE(x.report["mutant"].contains("lost")) << x.report["mutant"].dump();
      EXPECT_EQ(x.report["mutant"]["lost"].size(), 2u) << x.report["mutant"].dump();
      EXPECT_EQ(x.report["mutation"]["killed"], 0) << x.report["mutation"].dump();
    }
  }
}

// A control run told from a mutant run by what the verifier does around it (issue 52, stop 63):
// who reads the kernel's parameter names in a launch (the output mutator does, a plain rerun did
// not), a file new in the script's directory, linecache, the objects made between two checks,
// the time between them, the mutant's source beside the kernel's own, and the order of a kernel
// mutant's run and its poisoned confirmation. Before, each was verified in most runs (the
// controls passed, every mutant failed); now each control is made through the mutant's own path
// with a mutation that changes nothing (an identity output mutator on copies; the kernel rebuilt
// unmutated as a mutant, replayed, swapped in and confirmed), so the sample fails its control
// (unstable_test), or, failing only the confirmation, its kernel mutants count as survivors
// (weak_inputs). The honest observer looks at the same things and compares every time. In both
// pool modes.
TEST(VerifyTamper, ControlRunsAreMadeThroughTheMutantsOwnPath) {
  const std::vector<Want> want = {
      {"ctrl_mutant_file", verify::kUnstableTest},    {"ctrl_linecache", verify::kUnstableTest},
      {"ctrl_gc_between", verify::kUnstableTest},     {"ctrl_kernel_source", verify::kUnstableTest},
      {"ctrl_confirm_order", verify::kWeakInputs},    {"held_ctrl_gap", verify::kUnstableTest},
      {"held_ctrl_jit_cache", verify::kUnstableTest}, {"honest_run_observer", nullptr}};
  for (const char* mode : {"warm", "fresh"}) {
    SCOPED_TRACE(mode);
    TempDir tmp;
    auto cfg = test_config(tmp, mode);
    cfg.timeout_s = 30;
    // Workers that preload triton alone, as where torch is not installed: ctrl_confirm_order
    // takes the first kernel mutant's build for the battery by the objects made between two of
    // its checks (over 400: the modules the build imports); a worker that preloaded torch has
    // imported those already (at most 80 objects between two checks), so the sample never
    // cheats and is rightly verified (its test kills every mutant itself).
    cfg.preload = {"triton", "triton.language"};
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    std::vector<verify::VerifyRequest> reqs;
    for (const auto& w : want) reqs.push_back(load_sample(w.name, {}, "tamper"));
    auto r = run_all(*pool, reqs);
    ASSERT_EQ(r.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(std::string(want[i].name) + ": " + r[i].detail + "\n" + Json(r[i].flags).dump());
      EXPECT_EQ(r[i].verdict, Verdict::passed);  // every real run passes
      if (want[i].flag == nullptr) {
        EXPECT_TRUE(r[i].verified());
        for (const auto& c : r[i].report["mutant"]["controls"]["runs"])
          EXPECT_EQ(c["result"], "passed") << c.dump();
        continue;
      }
      EXPECT_FALSE(r[i].verified());
      EXPECT_TRUE(has_flag(r[i], want[i].flag));
    }
  }
}

TEST(VerifyTamper, HonestControlsAreVerified) {
  // The same tools used honestly: inspect and sys._getframe for names, a call counter that
  // compares every time, a clock, math.isclose, print and gc.collect.
  auto r = run_corpus(
      {"honest_inspect", "honest_counting", "honest_timer", "honest_isclose", "honest_stdout"});
  ASSERT_EQ(r.size(), 5u);
  for (const auto& x : r) {
    SCOPED_TRACE(x.key + ": " + x.detail + "\n" + x.report.dump());
    EXPECT_EQ(x.verdict, Verdict::passed);
    EXPECT_TRUE(x.verified()) << Json(x.flags).dump();
    // Every control run passed, and the guard found nothing.
    const auto& controls = x.report["mutant"]["controls"];
    EXPECT_EQ(controls["failed"], false);
    EXPECT_GE(controls["runs"].size(), 2u);
    for (const auto& c : controls["runs"]) EXPECT_EQ(c["result"], "passed") << c.dump();
    EXPECT_EQ(x.report["integrity"]["tampered"], false);
    EXPECT_GT(x.report["integrity"]["watched"].get<int>(), 100);
  }
}

TEST(VerifyTamper, TheSampleSeesOneNeutralCallerAndNoVerifierModule) {
  // What the sample's code sees, written into its own stdout by a test that passes: the frames
  // above the test, the verifier's modules in sys.modules, the names JITFunction.run wears.
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto req = load_sample("honest_counting", {}, "tamper");
  *req.unitest_code += R"(

import sys
import threading
import triton.runtime.jit as _jit


def test_what_it_sees():
    f, frames = sys._getframe(), []
    while f is not None:
        frames.append("%s:%s" % (f.f_code.co_filename.rsplit("/", 1)[-1], f.f_code.co_name))
        f = f.f_back
    ours = [m for m in sys.modules if m.startswith("kforge_harness")]
    run = _jit.JITFunction.run
    print("SEEN", frames, ours, sys.modules["__main__"].__dict__.get("__file__"),
          run.__module__, run.__qualname__, run.__code__.co_filename.rsplit("/", 1)[-1],
          run.__globals__["__name__"], threading.current_thread().name)
)";
  auto r = run_one(*pool, req);
  ASSERT_EQ(r.verdict, Verdict::passed) << r.detail;
  auto at = r.stdout_text.find("SEEN ");
  ASSERT_NE(at, std::string::npos) << r.stdout_text;
  std::string seen = r.stdout_text.substr(at, r.stdout_text.find('\n', at) - at);
  EXPECT_EQ(seen,
            "SEEN ['kforge_sample.py:test_what_it_sees', '<string>:run', 'threading.py:run', "
            "'threading.py:_bootstrap_inner', 'threading.py:_bootstrap'] [] None "
            "triton.runtime.jit JITFunction.run jit.py triton.runtime.jit Thread-1");
  EXPECT_TRUE(r.verified()) << Json(r.flags).dump();
}

}  // namespace
}  // namespace kforge::test
