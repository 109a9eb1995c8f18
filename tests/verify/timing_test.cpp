// The speed label without a GPU (docs/VERIFIER.md, "The speed label"): the statistics and the
// per-device lock in real Python processes (timing/stats_test.py, its watcher in
// timing/lock_watch_test.py); end to end through the pool
// on the CPU stand-in for Triton, where the figures are perf_counter times of Python calls: a
// wrapper slower or faster than its reference gets the speedup it should, a reference that
// disagrees with the wrapper fails the sample, no sample's GPU section overlaps another's
// exclusive one, a run that requires a speedup flags a slow sample, and the label is stored.

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "kforge/core/config.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/store/vocabulary.hpp"
#include "kforge/verify/record_run.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/store.hpp"
#include "kforge/verify/verdict_line.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

verify::VerifierConfig timing_config(const TempDir& tmp) {
  auto cfg = test_config(tmp);
  cfg.timeout_s = 20;
  cfg.memory_cap_mb = 400;
  cfg.mutant_check = false;
  cfg.timing.enabled = verify::TimingOn::all;
  cfg.timing.budget_s = 1.0;
  cfg.timing.min_reps = 5;
  cfg.timing.max_reps = 40;
  cfg.timing.wait_s = 15;
  return cfg;
}

TEST(VerifyTiming, TheConfigurationSectionIsReadStrictly) {
  verify::VerifierConfig c;
  // auto: the label on for GPUs, off for the CPU device.
  EXPECT_EQ(c.timing.enabled, verify::TimingOn::gpus);
  EXPECT_TRUE(c.timing.on_for(verify::Vendor::nvidia));
  EXPECT_TRUE(c.timing.on_for(verify::Vendor::amd));
  EXPECT_FALSE(c.timing.on_for(verify::Vendor::cpu));
  EXPECT_DOUBLE_EQ(c.timing.gather_s, 0);
  EXPECT_DOUBLE_EQ(c.timing.budget_s, 0.3);
  ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    enabled: true\n    budget_s: 0.5\n"
                            "    min_reps: 5\n    max_reps: 50\n    min_speedup: 1.2\n",
                            c)
                  .ok());
  EXPECT_EQ(c.timing.enabled, verify::TimingOn::all);
  EXPECT_TRUE(c.timing.on_for(verify::Vendor::cpu));
  EXPECT_DOUBLE_EQ(c.timing.budget_s, 0.5);
  {
    verify::VerifierConfig off, back, bad;
    ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    enabled: false\n", off).ok());
    EXPECT_FALSE(off.timing.on_for(verify::Vendor::nvidia));
    EXPECT_FALSE(off.timing.on_for(verify::Vendor::cpu));
    ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    enabled: auto\n", back).ok());
    EXPECT_EQ(back.timing.enabled, verify::TimingOn::gpus);
    // The key was a boolean: a file that spells one the YAML way still reads.
    ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    enabled: yes\n", back).ok());
    EXPECT_EQ(back.timing.enabled, verify::TimingOn::all);
    ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    enabled: Off\n", back).ok());
    EXPECT_EQ(back.timing.enabled, verify::TimingOn::none);
    auto refused = read_verifier("verifier:\n  timing:\n    enabled: gpu\n", bad);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find(
                  "k.yaml:3: verifier.timing.enabled: 'gpu' is not one of auto, true, false"),
              std::string::npos)
        << refused.error().message;
  }
  EXPECT_EQ(c.timing.max_reps, 50);
  EXPECT_DOUBLE_EQ(c.timing.min_speedup, 1.2);
  auto st = read_verifier("verifier:\n  timing:\n    budget_s: 0\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("k.yaml:3: verifier.timing.budget_s: must be > 0"),
            std::string::npos)
      << st.error().message;
  verify::VerifierConfig c2, c3;  // fresh: a refused value stays in the struct it was read into
  st = read_verifier("verifier:\n  timing:\n    min_reps: 20\n    max_reps: 10\n", c2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("verifier.timing.max_reps: must be at least min_reps"),
            std::string::npos)
      << st.error().message;
  verify::VerifierConfig c4, c5;
  EXPECT_DOUBLE_EQ(c4.timing.workers_factor, 1.0);
  ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    workers_factor: 1.5\n", c4).ok());
  EXPECT_DOUBLE_EQ(c4.timing.workers_factor, 1.5);
  st = read_verifier("verifier:\n  timing:\n    workers_factor: 0.5\n", c5);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("verifier.timing.workers_factor"), std::string::npos)
      << st.error().message;
  st = read_verifier("verifier:\n  timing:\n    reps: 10\n", c3);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("verifier.timing.reps"), std::string::npos)
      << st.error().message;
}

TEST(VerifyTiming, PythonStatistics) {
  TempDir tmp;
  auto r =
      run_process({sandbox_python(), (source_dir() / "tests/verify/timing/stats_test.py").string(),
                   (source_dir() / "libs/verify/harness").string()},
                  {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 21 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyTiming, LockWatcherInRealProcesses) {
  TempDir tmp;
  auto r = run_process(
      {sandbox_python(), (source_dir() / "tests/verify/timing/lock_watch_test.py").string(),
       (source_dir() / "libs/verify/harness").string()},
      {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 23 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyTiming, TheWatcherRunsWhereATimingSampleMayCome) {
  TempDir tmp;
  auto cfg = timing_config(tmp);
  cfg.timing.enabled = verify::TimingOn::none;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto watch_of = [](const verify::VerifyResult& r) {
    return r.report.value("gpu_lock", Json::object()).value("watch", std::string("missing"));
  };
  // The label off and no run asking for it: no watcher thread in the samples.
  auto off = run_all(*pool, {load_sample("timing_cpu_faster")});
  ASSERT_EQ(off[0].verdict, Verdict::passed) << off[0].detail;
  EXPECT_EQ(watch_of(off[0]), "off");
  // A run that requires a speedup: from then on every sample of the pool watches.
  auto timed = load_sample("timing_cpu_faster");
  timed.require_speedup = 1.0;
  auto on = run_all(*pool, {timed, load_sample("timing_cpu_slower")});
  for (const auto& r : on) {
    ASSERT_EQ(r.verdict, Verdict::passed) << r.detail;
    EXPECT_EQ(watch_of(r), "on");
  }
}

TEST(VerifyTiming, SpeedupsAgainstTheReferenceOnTheCpuStandIn) {
  TempDir tmp;
  auto pool = make_pool(timing_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("timing_cpu_faster"), load_sample("timing_cpu_slower"),
                           load_sample("timing_cpu_bad_reference")});
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(r[i].detail + "\n" + r[i].report.value("speed", Json()).dump());
    ASSERT_EQ(r[i].verdict, Verdict::passed);
    auto l = verify::speed_label(r[i].report);
    ASSERT_TRUE(l);
    ASSERT_TRUE(l->timed) << l->reason;
    ASSERT_TRUE(l->speedup && l->speedup_lo && l->speedup_hi);
    EXPECT_LE(*l->speedup_lo, *l->speedup);
    EXPECT_GE(*l->speedup_hi, *l->speedup);
    ASSERT_TRUE(l->kernel_us);
    EXPECT_GT(*l->kernel_us, 0);
    EXPECT_EQ(l->device, "cpu");
    EXPECT_FALSE(l->fraction_of_peak);  // no peak for a CPU
    EXPECT_EQ(r[i].report["speed"]["kernels"][0]["kernel"], "add_kernel");
    EXPECT_EQ(r[i].report["speed"]["reference"]["checks"]["failed"], 0);
  }
  auto fast = *verify::speed_label(r[0].report);
  auto slow = *verify::speed_label(r[1].report);
  // The reference spins 1 ms a call, the wrapper about 0.3 ms of Python (medians: robust to a
  // loaded machine; the intervals are not, so pass_perf is checked against its rule).
  EXPECT_GT(*fast.speedup, 1.5);
  EXPECT_EQ(fast.pass_perf, std::optional<bool>(*fast.speedup_lo > 1.0 && fast.flags.empty()));
  EXPECT_LT(*slow.speedup, 0.7);  // the wrapper spins
  EXPECT_EQ(slow.pass_perf, std::optional<bool>(false));
  // A reference that computes something else fails the sample, whatever its test says.
  EXPECT_EQ(r[2].verdict, Verdict::failed);
  EXPECT_NE(r[2].detail.find("reference: the wrapper's output differs"), std::string::npos)
      << r[2].detail;

  // A run that requires 1.5x: a sample whose interval lies above it is verified, the slow one
  // flagged with what it got.
  auto a = r[0], b = r[1];
  a.report["speed"]["reference"]["ci"] = Json::array({2.0, 3.0});
  EXPECT_FALSE(verify::require_speedup(a, 1.5));
  EXPECT_TRUE(a.verified());
  EXPECT_TRUE(verify::require_speedup(b, 1.5));
  EXPECT_EQ(b.flags, std::vector<std::string>{verify::kSlow});
  EXPECT_NE(b.detail.find("slow: speedup 0."), std::string::npos) << b.detail;
  EXPECT_NE(b.detail.find("required above 1.50x"), std::string::npos) << b.detail;

  // Stored with the verification.
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  auto id = verify::store_verification(**db, {std::nullopt, 1, 1, 1}, b, 1700000000000);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select = read_file(source_dir() / "tests" / "verify" / "select_speed.sql");
  ASSERT_TRUE(select.ok());
  auto s = (*db)->prepare(*select);
  ASSERT_TRUE(s.ok());
  s->bind(1, *id);
  ASSERT_TRUE(s->step().value_or(false));
  EXPECT_EQ(s->int64(0), 1);
  EXPECT_NEAR(s->real(3), *slow.speedup, 1e-9);
  EXPECT_NEAR(s->real(5), *slow.speedup_hi, 1e-9);
  EXPECT_EQ(s->int64(6), 0);
  // Its wrapper spins outside its kernel: on the stand-in that is time not in the kernel.
  EXPECT_EQ(s->text(7), "[\"library_work\"]");
  EXPECT_GT(s->int64(9), 0);
}

bool has_flag(const verify::SpeedLabel& l, verify::SpeedFlag f) {
  return std::find(l.flags.begin(), l.flags.end(), verify::to_string(f)) != l.flags.end();
}

// The kernels' share of the timed wrapper call (docs/VERIFIER.md): on the CPU stand-in the
// launches' perf_counter time over the call's. A wrapper whose heavy part is "library" work
// (it spins 5 ms outside the kernel, the reference 20 ms: a speedup that alone would pass) is
// flagged library_work; one that takes another path at the timed size is kernel_not_timed;
// an honest one (the kernel is nearly all of the call) is neither. Either flag keeps pass_perf
// false, and a run that requires a speedup gets the words as repair evidence.
TEST(VerifyTiming, TheKernelsShareOfTheTimedCall) {
  TempDir tmp;
  auto pool = make_pool(timing_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(
      *pool, {load_sample("timing_cpu_library_work"), load_sample("timing_cpu_kernel_not_timed"),
              load_sample("timing_cpu_honest")});
  std::vector<verify::SpeedLabel> l;
  for (const auto& x : r) {
    SCOPED_TRACE(x.key + ": " + x.detail + "\n" + x.report.value("speed", Json()).dump());
    ASSERT_EQ(x.verdict, Verdict::passed);
    auto got = verify::speed_label(x.report);
    ASSERT_TRUE(got && got->timed);
    l.push_back(*got);
  }
  using verify::SpeedFlag;
  // Library work: the kernel a small share, pass_perf false whatever the speedup.
  ASSERT_TRUE(l[0].kernel_share) << r[0].report["speed"].dump();
  EXPECT_LT(*l[0].kernel_share, 0.5);
  EXPECT_TRUE(has_flag(l[0], SpeedFlag::library_work)) << r[0].report["speed"].dump();
  EXPECT_GT(*l[0].speedup, 1.5);  // the speedup alone would have passed
  EXPECT_EQ(l[0].pass_perf, std::optional<bool>(false));
  // Half the configured 0.5 without CUDA: host time, the hooks' own work counted outside.
  EXPECT_EQ(l[0].min_kernel_share, std::optional<double>(0.25));
  auto lib = r[0];
  EXPECT_TRUE(verify::require_speedup(lib, 1.0));
  EXPECT_EQ(lib.flags, std::vector<std::string>{verify::kSlow});
  EXPECT_NE(lib.detail.find("library_work: the answer's Triton kernels took"), std::string::npos)
      << lib.detail;
  EXPECT_NE(lib.detail.find("ran outside them"), std::string::npos) << lib.detail;
  // The ghost branch: no launch of the sample's kernels in the timed call.
  EXPECT_EQ(l[1].launches_per_call, std::optional<std::int64_t>(0));
  EXPECT_TRUE(has_flag(l[1], SpeedFlag::kernel_not_timed)) << r[1].report["speed"].dump();
  EXPECT_FALSE(has_flag(l[1], SpeedFlag::library_work));
  EXPECT_EQ(l[1].pass_perf, std::optional<bool>(false));
  auto ghost = r[1];
  EXPECT_TRUE(verify::require_speedup(ghost, 1.0));
  EXPECT_NE(ghost.detail.find("kernel_not_timed: the wrapper called on the inputs of inputs() "
                              "launched none of the answer's Triton kernels"),
            std::string::npos)
      << ghost.detail;
  // The honest one: measured, above the bound, not flagged for it.
  ASSERT_TRUE(l[2].kernel_share) << r[2].report["speed"].dump();
  EXPECT_GE(*l[2].kernel_share, 0.5);
  EXPECT_LE(*l[2].kernel_share, 1.0);
  EXPECT_EQ(l[2].launches_per_call, std::optional<std::int64_t>(1));
  EXPECT_FALSE(has_flag(l[2], SpeedFlag::library_work));
  EXPECT_FALSE(has_flag(l[2], SpeedFlag::kernel_not_timed));
  EXPECT_EQ(l[2].pass_perf, std::optional<bool>(*l[2].speedup_lo > 1.0 && l[2].flags.empty()));
  // The timing's memory figure: the inputs' bytes (no GPU figure on the CPU stand-in).
  ASSERT_TRUE(l[2].input_bytes);
  EXPECT_GT(*l[2].input_bytes, 0);
  EXPECT_FALSE(l[2].memory_per_input_byte);
}

// A timing that fails (the wrapper raises in the timing's calls, as a real-size one runs out of
// device memory) leaves the sample passed with a label that says so: not timed, flagged
// not_timed with the reason, stored; a run that requires a speedup never verifies it.
TEST(VerifyTiming, ATimingThatFailsIsFlaggedNotTimed) {
  TempDir tmp;
  auto pool = make_pool(timing_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("timing_cpu_timing_fails")});
  ASSERT_EQ(r[0].verdict, Verdict::passed) << r[0].detail;
  auto l = verify::speed_label(r[0].report);
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->timed);
  EXPECT_EQ(l->flags, std::vector<std::string>{"not_timed"});
  EXPECT_NE(l->reason.find("timing failed: RuntimeError: CUDA out of memory"), std::string::npos)
      << l->reason;
  EXPECT_TRUE(r[0].verified());  // the label is lost, never the verdict
  auto req = r[0];
  EXPECT_TRUE(verify::require_speedup(req, 1.0));
  EXPECT_FALSE(req.verified());
  EXPECT_NE(req.detail.find("slow: not timed: timing failed: RuntimeError: CUDA out of memory"),
            std::string::npos)
      << req.detail;

  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  auto id = verify::store_verification(**db, {std::nullopt, 1, 1, 1}, r[0], 1700000000000);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select = read_file(source_dir() / "tests" / "verify" / "select_speed.sql");
  ASSERT_TRUE(select.ok());
  auto s = (*db)->prepare(*select);
  ASSERT_TRUE(s.ok());
  s->bind(1, *id);
  ASSERT_TRUE(s->step().value_or(false));
  EXPECT_EQ(s->int64(0), 0);
  EXPECT_NE(s->text(1).find("CUDA out of memory"), std::string::npos);
  EXPECT_EQ(s->text(7), "[\"not_timed\"]");
}

// The speed label's flags: C++'s table, the harness's file and SQL's table hold the same names
// in the same order, and a speed row with another flag is refused.
TEST(VerifyTiming, SpeedFlagsAreOneVocabulary) {
  TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  std::vector<std::string> cpp, sql;
  for (const auto& e : verify::kSpeedFlagNames) cpp.emplace_back(e.name);
  auto s = (*db)->prepare("SELECT name FROM speed_flag_names ORDER BY position");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->each([&](store::Stmt& row) { sql.push_back(row.text(0)); }).ok());
  EXPECT_EQ(cpp, store::vocabulary_lines("speed_flags.txt"));
  EXPECT_EQ(sql, cpp);
  auto fixtures = read_file(source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  ASSERT_TRUE((*db)
                  ->exec("INSERT INTO verifications (id, run_id, sample_id, verdict, flags_json, "
                         "created_ms) VALUES (77, 1, 1, 'passed', '[]', 0)")
                  .ok());
  auto bad = (*db)->exec(
      "INSERT INTO verification_speed (verification_id, timed, flags_json) VALUES (77, 0, "
      "'[\"slowish\"]')");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("not in speed_flag_names"), std::string::npos);
  EXPECT_TRUE((*db)
                  ->exec("INSERT INTO verification_speed (verification_id, timed, flags_json) "
                         "VALUES (77, 0, '[\"not_timed\"]')")
                  .ok());
}

// Intervals [t0, t1] of CLOCK_MONOTONIC seconds (one clock for every process of the machine).
std::vector<std::pair<double, double>> spans(const Json& list) {
  std::vector<std::pair<double, double>> out;
  if (!list.is_array()) return out;
  for (const auto& p : list) out.emplace_back(p[0].get<double>(), p[1].get<double>());
  return out;
}

TEST(VerifyTiming, NoSampleUsesTheDeviceWhileAnotherTimes) {
  TempDir tmp;
  auto cfg = timing_config(tmp);
  cfg.cpu_workers = 4;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  std::vector<verify::VerifyRequest> reqs;
  for (int i = 0; i < 3; ++i) {
    reqs.push_back(load_sample("timing_cpu_faster"));
    reqs.push_back(load_sample("timing_cpu_hold"));
    reqs.push_back(load_sample("timing_cpu_slower"));
    reqs.push_back(load_sample("timing_cpu_spin"));  // CPU work between launches: the watcher
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].key = "s" + std::to_string(i);
  auto r = run_all(*pool, reqs);
  int timed = 0, overlapping_runs = 0, stepped_out = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    SCOPED_TRACE(r[i].key + ": " + r[i].detail);
    ASSERT_EQ(r[i].verdict, Verdict::passed);
    ASSERT_TRUE(r[i].report.contains("gpu_lock")) << r[i].report.dump();
    // Every sample's watcher ran in the sandbox (a thread, the handler).
    EXPECT_EQ(r[i].report["gpu_lock"].value("watch", ""), "on") << r[i].report["gpu_lock"].dump();
    // Stepped out at the watcher's asking, or checked in at a stall's first step (the watcher
    // asks the main thread for either; with the first step a sample may then step out at its
    // own next launch, before the watcher needs to ask).
    stepped_out += r[i].report["gpu_lock"].value("watch_stepped_out", 0) +
                   r[i].report["gpu_lock"].value("checked_in", 0);
    auto l = verify::speed_label(r[i].report);
    ASSERT_TRUE(l);
    if (l->timed) ++timed;
    for (auto [x0, x1] : spans(r[i].report["gpu_lock"]["exclusive"])) {
      for (std::size_t j = 0; j < r.size(); ++j) {
        if (j == i) continue;
        for (auto [s0, s1] : spans(r[j].report["gpu_lock"]["shared"]))
          EXPECT_TRUE(s1 <= x0 || s0 >= x1)
              << r[j].key << " used the device [" << s0 << ", " << s1 << "] while " << r[i].key
              << " timed [" << x0 << ", " << x1 << "]";
        for (auto [y0, y1] : spans(r[j].report["gpu_lock"]["exclusive"]))
          EXPECT_TRUE(y1 <= x0 || y0 >= x1) << "two exclusive sections overlap";
      }
    }
    // The samples did run side by side (the processes overlapped), only not in those sections.
    for (std::size_t j = 0; j < r.size(); ++j) {
      if (j == i) continue;
      auto a = spans(r[i].report["gpu_lock"]["shared"]);
      auto b = spans(r[j].report["gpu_lock"]["shared"]);
      for (auto [a0, a1] : a)
        for (auto [b0, b1] : b)
          if (a0 < b1 && b0 < a1) ++overlapping_runs;
    }
  }
  EXPECT_EQ(timed, static_cast<int>(r.size()));
  EXPECT_GT(overlapping_runs, 0) << "the readers never overlapped: the test shows nothing";
  // The spinning samples' watchers stepped them out for the timing samples (the sections above
  // still never overlap an exclusive one).
  EXPECT_GT(stepped_out, 0);
}

// The timing samples of a device that come within a gathering window are timed in one burst:
// the other samples stop once for all of them (gpulock.py), and the run counts the stalls.
TEST(VerifyTiming, TimingSectionsRunInBurstsWithOneStallEach) {
  TempDir tmp;
  auto cfg = timing_config(tmp);
  cfg.cpu_workers = 4;
  cfg.timing.gather_s = 1.5;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  verify::RecordRunOptions opts;
  opts.slowest = 0;
  opts.full = true;  // verdict lines, the harness's report in each
  std::ostringstream lines;
  verify::RecordRun run(*pool, opts, &lines);
  std::vector<std::string> names;
  for (int i = 0; i < 3; ++i)
    for (const char* n :
         {"timing_cpu_faster", "timing_cpu_hold", "timing_cpu_spin", "timing_cpu_slower"})
      names.push_back(n);
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto req = load_sample(names[i]);
    req.key = "s" + std::to_string(i);
    ASSERT_TRUE(run.submit(static_cast<std::int64_t>(i), std::move(req)).ok());
  }
  run.finish();
  std::vector<verify::VerifyResult> r;
  std::istringstream in(lines.str());
  for (std::string line; std::getline(in, line);) {
    auto v = verify::verdict_line_from_json(line);
    ASSERT_TRUE(v.ok()) << line;
    r.push_back(std::move(v->result));
  }
  ASSERT_EQ(r.size(), names.size());
  // Every exclusive section, with how it began, in time order.
  struct Section {
    double x0, x1;
    std::string how;
  };
  std::vector<Section> sections;
  std::vector<std::pair<double, double>> shared;
  std::int64_t gathers = 0, gathers_alone = 0;
  for (const auto& res : r) {
    SCOPED_TRACE(res.key + ": " + res.detail);
    ASSERT_EQ(res.verdict, Verdict::passed);
    const auto& lk = res.report["gpu_lock"];
    gathers += lk.value("gathers", std::int64_t{0});
    gathers_alone += lk.value("gathers_alone", std::int64_t{0});
    for (const auto& x : lk["exclusive"])
      sections.push_back({x[0].get<double>(), x[1].get<double>(), x[2].get<std::string>()});
    for (auto sp : spans(lk["shared"])) shared.push_back(sp);
  }
  std::sort(sections.begin(), sections.end(),
            [](const Section& a, const Section& b) { return a.x0 < b.x0; });
  ASSERT_EQ(sections.size(), names.size());
  int stalls = 0, bursts = 0;
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const auto& x = sections[i];
    stalls += x.how == "stall";
    if (i > 0) {
      EXPECT_LE(sections[i - 1].x1, x.x0) << "two exclusive sections overlap";
    }
    if (x.how != "burst") continue;
    ++bursts;
    // Handed over within a burst: no sample used the device from the section before to this
    // one's end (its readers stayed out between the two).
    ASSERT_GT(i, 0u);
    for (auto [s0, s1] : shared)
      EXPECT_TRUE(s1 <= sections[i - 1].x0 || s0 >= x.x1)
          << "a sample used the device [" << s0 << ", " << s1 << "] inside a burst";
  }
  // A writer gathers only while another sample has announced a timing it has not asked for yet
  // (else it stalls at once): on a loaded host the samples' timings may never overlap, and then
  // no burst forms (CI's 2 cores: none of 12). BurstTest pins the gathering itself down with
  // processes of its own; here what holds whatever the overlap is checked.
  if (bursts == 0)
    std::cerr << "no burst formed (the timings did not overlap): " << gathers << " gathers, "
              << gathers_alone << " of them with nobody coming\n";
  // The run's counter is the sections that stopped the others: fewer than the sections when a
  // burst formed.
  EXPECT_EQ(run.tally().timed_sections, static_cast<std::int64_t>(sections.size()));
  EXPECT_EQ(run.tally().stalls, stalls);
  if (bursts > 0) {
    EXPECT_LT(stalls, static_cast<int>(sections.size()));
  }
  auto text = run.summary("samples.jsonl", 1.0);
  EXPECT_NE(text.find("speed label: 12 exclusive sections, " + std::to_string(stalls) + " stalls"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace kforge::test
