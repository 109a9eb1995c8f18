// The speed label without a GPU (docs/VERIFIER.md, "The speed label"): the statistics and the
// per-device lock in real Python processes (timing/stats_test.py, its watcher in
// timing/lock_watch_test.py); end to end through the pool
// on the CPU stand-in for Triton, where the figures are perf_counter times of Python calls: a
// wrapper slower or faster than its reference gets the speedup it should, a reference that
// disagrees with the wrapper fails the sample, no sample's GPU section overlaps another's
// exclusive one, a run that requires a speedup flags a slow sample, and the label is stored.

#include <gtest/gtest.h>

#include <algorithm>

#include "kforge/core/config.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/store.hpp"
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
  cfg.timing.enabled = true;
  cfg.timing.budget_s = 1.0;
  cfg.timing.min_reps = 5;
  cfg.timing.max_reps = 40;
  cfg.timing.wait_s = 15;
  return cfg;
}

TEST(VerifyTiming, TheConfigurationSectionIsReadStrictly) {
  auto read = [](const std::string& yaml, verify::VerifierConfig& c) -> Status {
    auto r =
        ConfigReader::load_string(yaml, "k.yaml", [](const std::string&) { return std::nullopt; });
    if (!r.ok()) return r.error();
    verify::read_config((*r)->root().child("verifier"), c);
    return (*r)->finish();
  };
  verify::VerifierConfig c;
  EXPECT_FALSE(c.timing.enabled);
  EXPECT_DOUBLE_EQ(c.timing.budget_s, 0.3);
  ASSERT_TRUE(read("verifier:\n  timing:\n    enabled: true\n    budget_s: 0.5\n"
                   "    min_reps: 5\n    max_reps: 50\n    min_speedup: 1.2\n",
                   c)
                  .ok());
  EXPECT_TRUE(c.timing.enabled);
  EXPECT_DOUBLE_EQ(c.timing.budget_s, 0.5);
  EXPECT_EQ(c.timing.max_reps, 50);
  EXPECT_DOUBLE_EQ(c.timing.min_speedup, 1.2);
  auto st = read("verifier:\n  timing:\n    budget_s: 0\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("k.yaml:3: verifier.timing.budget_s: must be > 0"),
            std::string::npos)
      << st.error().message;
  verify::VerifierConfig c2, c3;  // fresh: a refused value stays in the struct it was read into
  st = read("verifier:\n  timing:\n    min_reps: 20\n    max_reps: 10\n", c2);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("verifier.timing.max_reps: must be at least min_reps"),
            std::string::npos)
      << st.error().message;
  st = read("verifier:\n  timing:\n    reps: 10\n", c3);
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
  EXPECT_NE(r.err.find("Ran 19 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyTiming, LockWatcherInRealProcesses) {
  TempDir tmp;
  auto r = run_process(
      {sandbox_python(), (source_dir() / "tests/verify/timing/lock_watch_test.py").string(),
       (source_dir() / "libs/verify/harness").string()},
      {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 8 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyTiming, TheWatcherRunsWhereATimingSampleMayCome) {
  TempDir tmp;
  auto cfg = timing_config(tmp);
  cfg.timing.enabled = false;
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
  EXPECT_EQ(s->text(7), "[]");
  EXPECT_GT(s->int64(9), 0);
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
    stepped_out += r[i].report["gpu_lock"].value("watch_stepped_out", 0);
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

}  // namespace
}  // namespace kforge::test
