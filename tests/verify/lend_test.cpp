// Lent slots (docs/VERIFIER.md, "Lent slots"; verifier.timing.lend): while a sample waits for its
// timing section, the pool runs another sample on a lent slot of its device, at most `lend` at
// once; the verdicts do not depend on it, and a sample that says it waits when it does not
// gains at most the lent slots. Real Python processes on the CPU stand-in for Triton, where
// the timing holds the device's lock as it does on a GPU.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <sstream>

#include "kforge/core/config.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/verify/record_run.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

verify::VerifierConfig lend_config(const TempDir& tmp, int lend) {
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 2;
  cfg.timeout_s = 20;
  cfg.memory_cap_mb = 400;
  cfg.mutant_check = false;
  cfg.timing.enabled = verify::TimingOn::all;
  cfg.timing.budget_s = 1.0;
  cfg.timing.min_reps = 5;
  cfg.timing.max_reps = 40;
  cfg.timing.wait_s = 15;
  cfg.timing.lend = lend;
  // The timing samples gather (the default is 0): the first waits up to 0.5 s while the second
  // prepares, so a timing sample waits for the device in every run, however loaded the machine.
  cfg.timing.gather_s = 0.5;
  return cfg;
}

// Timing samples whose exclusive sections last (each timed call spins 30 ms), two at a time on
// two workers: one waits while the other times; quick samples fill the queue behind them.
std::vector<verify::VerifyRequest> waiting_samples() {
  std::vector<verify::VerifyRequest> reqs;
  for (int i = 0; i < 4; ++i) {
    reqs.push_back(load_sample("timing_cpu_long_section"));
    reqs.push_back(load_sample("timing_cpu_long_section"));
    reqs.push_back(load_sample("pass"));
    reqs.push_back(load_sample("pass"));
  }
  for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].key = "s" + std::to_string(i);
  return reqs;
}

// Each sample's verdict and flags (the speed label's own flags are in its label, not here).
std::map<std::string, std::string> verdicts_of(const std::vector<verify::VerifyResult>& r) {
  std::map<std::string, std::string> out;
  for (const auto& res : r) {
    std::string v = verify::to_string(res.verdict);
    for (const auto& f : res.flags) v += " " + f;
    out[res.key] = v;
  }
  return out;
}

bool lent(const verify::VerifyResult& r) {
  return r.report.contains("pool") && r.report["pool"].value("lent", false);
}

TEST(VerifyLend, TheSettingIsReadStrictly) {
  verify::VerifierConfig c;
  EXPECT_EQ(c.timing.lend, 0);  // off unless asked
  ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    lend: 3\n", c).ok());
  EXPECT_EQ(c.timing.lend, 3);
  ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    lend: 0\n", c).ok());
  EXPECT_EQ(c.timing.lend, 0);
  ASSERT_TRUE(read_verifier("verifier:\n  timing:\n    lend: auto\n", c).ok());
  EXPECT_EQ(c.timing.lend, verify::kAutoLend);
  for (const char* bad : {"-1", "many", "2.5"}) {
    verify::VerifierConfig d;
    auto st = read_verifier(std::string("verifier:\n  timing:\n    lend: ") + bad + "\n", d);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find("k.yaml:3: verifier.timing.lend: '" + std::string(bad) +
                                      "' is not auto or a number >= 0"),
              std::string::npos)
        << st.error().message;
  }
}

// The pool runs a sample on the lent slot while another waits for its section, never more than
// the setting allows, and the verdicts are those of a run without lent slots.
TEST(VerifyLend, AWaitingSampleLendsItsSlot) {
  std::map<std::string, std::string> without;
  {
    TempDir tmp;
    auto pool = make_pool(lend_config(tmp, 0));
    ASSERT_TRUE(pool);
    EXPECT_EQ(pool->slots(), 2);
    auto r = run_all(*pool, waiting_samples());
    without = verdicts_of(r);
    for (const auto& res : r) EXPECT_FALSE(lent(res)) << res.key;
    EXPECT_EQ(pool->stats().lent_runs, 0u);
  }
  TempDir tmp;
  auto pool = make_pool(lend_config(tmp, 1));
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->slots(), 2) << "a lent slot is not a worker";
  auto r = run_all(*pool, waiting_samples());
  EXPECT_EQ(verdicts_of(r), without);
  // The waits for the device: from the sample's wait to its exclusive section
  // (speed.waited_ms before the section's start, CLOCK_MONOTONIC as the lock's sections are).
  std::vector<std::pair<double, double>> waits;
  int timed = 0;
  for (const auto& res : r) {
    SCOPED_TRACE(res.key + ": " + res.detail);
    if (res.key.empty()) continue;
    EXPECT_EQ(res.verdict, Verdict::passed);
    const auto& sp = res.report.value("speed", Json::object());
    const auto& x = res.report["gpu_lock"].value("exclusive", Json::array());
    if (!sp.value("timed", false) || x.empty()) continue;
    ++timed;
    double x0 = x[0][0].get<double>();
    waits.emplace_back(x0 - sp.value("waited_ms", 0) / 1000.0, x0);
  }
  EXPECT_EQ(timed, 8);
  auto st = pool->stats();
  EXPECT_GE(st.lent_runs, 1u) << "no sample ran on the lent slot: the test shows nothing";
  EXPECT_EQ(st.lent_max, 1) << "more lent slots at once than verifier.timing.lend";
  EXPECT_GT(st.lent_ms, 0);
  // Each sample that ran on the lent slot entered the device (its first shared section) while a
  // timing sample waited for its section: it was lent the waiting sample's slot.
  std::size_t on_lent = 0;
  for (const auto& res : r) {
    if (!lent(res)) continue;
    ++on_lent;
    const auto& shared = res.report["gpu_lock"].value("shared", Json::array());
    ASSERT_FALSE(shared.empty()) << res.key;
    double t0 = shared[0][0].get<double>();
    bool during = std::any_of(waits.begin(), waits.end(), [t0](auto w) {
      return w.first - 0.05 <= t0;  // dispatched after a wait began (its start: 50 ms slack)
    });
    EXPECT_TRUE(during) << res.key << " ran on the lent slot with no sample waiting before it";
  }
  EXPECT_EQ(on_lent, st.lent_runs);
}

// A sample's own code can write the lend line (it runs in the harness's process): lying that
// it waits makes the pool run more samples at once, never more than the device's lent slots,
// and one lent slot per waiting sample at most.
TEST(VerifyLend, ASampleThatLiesAboutWaitingGainsAtMostTheLentSlots) {
  auto liars = [] {
    std::vector<verify::VerifyRequest> reqs = {load_sample("lend_liar"), load_sample("lend_liar")};
    for (int i = 0; i < 8; ++i) reqs.push_back(load_sample("pass"));
    for (std::size_t i = 0; i < reqs.size(); ++i) reqs[i].key = "l" + std::to_string(i);
    return reqs;
  };
  for (int lend : {1, 3}) {
    SCOPED_TRACE("lend " + std::to_string(lend));
    TempDir tmp;
    auto pool = make_pool(lend_config(tmp, lend));
    ASSERT_TRUE(pool);
    auto r = run_all(*pool, liars());
    for (const auto& res : r) EXPECT_EQ(res.verdict, Verdict::passed) << res.key << res.detail;
    auto st = pool->stats();
    EXPECT_GE(st.lent_runs, 1u);
    // Two liars wait at once: one lent slot each at most, and never more than the setting.
    EXPECT_EQ(st.lent_max, std::min(lend, 2));
  }
  {
    // Fresh mode (a process per sample, no workers): the same lent slot, the same bound.
    TempDir tmp;
    auto cfg = lend_config(tmp, 1);
    cfg.mode = verify::PoolMode::fresh;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto r = run_all(*pool, liars());
    for (const auto& res : r) EXPECT_EQ(res.verdict, Verdict::passed) << res.key << res.detail;
    EXPECT_GE(pool->stats().lent_runs, 1u);
    EXPECT_EQ(pool->stats().lent_max, 1);
  }
  // With the speed label off there are no lent slots: the lie gains nothing.
  TempDir tmp;
  auto cfg = lend_config(tmp, 3);
  cfg.timing.enabled = verify::TimingOn::none;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, liars());
  EXPECT_EQ(pool->stats().lent_runs, 0u);
  for (const auto& res : r) EXPECT_FALSE(lent(res)) << res.key;
}

// kforge verify's summary says how many runs took a lent slot, for how long, and how many at once.
TEST(VerifyLend, TheSummarySaysWhatRanOnLentSlots) {
  TempDir tmp;
  auto pool = make_pool(lend_config(tmp, 1));
  ASSERT_TRUE(pool);
  verify::RecordRunOptions opts;
  opts.slowest = 0;
  std::ostringstream lines;
  verify::RecordRun run(*pool, opts, &lines);
  std::vector<verify::VerifyRequest> reqs = {load_sample("lend_liar"),
                                             load_sample("timing_cpu_faster")};
  for (int i = 0; i < 4; ++i) reqs.push_back(load_sample("pass"));
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    reqs[i].key = "r" + std::to_string(i);
    ASSERT_TRUE(run.submit(static_cast<std::int64_t>(i), std::move(reqs[i])).ok());
  }
  run.finish();
  std::string text = run.summary("samples.jsonl", 1.0);
  EXPECT_TRUE(std::regex_search(
      text, std::regex("speed label: [0-9]+ exclusive sections, [0-9]+ stalls of the other "
                       "samples \\(one per burst\\); [1-9][0-9]* runs on lent slots "
                       "\\([0-9]+\\.[0-9] s, at most 1 at once\\)\n")))
      << text;
  EXPECT_NE(text.find("2 workers"), std::string::npos) << "a lent slot is not a worker: " << text;
  EXPECT_NE(text.find("cpu: 1 lent slot (verifier.timing.lend)"), std::string::npos) << text;
}

}  // namespace
}  // namespace kforge::test
