// Flags that repeat (issue 52): the same samples verified twice through the real pool, with the
// same warm workers and in opposite orders, give the same verdict and flags on every sample.
// The corpus holds a sample for each cause of flags that came and went between two runs of the
// renamed TritonBench-G copies on an H200 (tests/verify/repeat/README.md), with samples of the
// other corpora around them; repeat/repeat_test.py checks each cause in the harness alone, the
// lot fixed each way. On a GPU: scripts/gpu/flags-repeat (docs/BENCHMARKS.md).

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

TEST(VerifyRepeat, PythonEachCause) {
  TempDir tmp;
  auto r =
      run_process({sandbox_python(), (source_dir() / "tests/verify/repeat/repeat_test.py").string(),
                   (source_dir() / "libs/verify/harness").string(),
                   (source_dir() / "tests/verify/fake_triton").string()},
                  {"TMPDIR=" + tmp.path().string()}, 240);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 5 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

struct Named {
  const char* dir;
  const char* name;
  int copies;
};

// The lot-sensitive samples in several copies: each copy draws its own lots, so a flag that
// follows the lot differs between copies or between the two runs.
const Named kCorpus[] = {
    {"repeat", "drawn_threshold", 2},    {"repeat", "fault_after_first_import", 3},
    {"repeat", "foreign_read", 3},       {"samples", "seeded_draws", 1},
    {"samples", "mutant_weak_loose", 1}, {"samples", "mutant_reused_memory", 1},
    {"tamper", "count_calls", 1},        {"tamper", "honest_counting", 1},
    {"tamper", "patched_isclose", 1},    {"hacks", "honest_add", 1}};

std::vector<verify::VerifyRequest> corpus() {
  std::vector<verify::VerifyRequest> out;
  for (const auto& s : kCorpus)
    for (int i = 0; i < s.copies; ++i) {
      auto r = load_sample(s.name, {}, s.dir);
      r.key = std::string(s.name) + "@" + std::to_string(i);
      out.push_back(std::move(r));
    }
  return out;
}

std::map<std::string, std::pair<Verdict, std::vector<std::string>>> outcomes(
    const std::vector<verify::VerifyRequest>& reqs, const std::vector<verify::VerifyResult>& res) {
  std::map<std::string, std::pair<Verdict, std::vector<std::string>>> out;
  for (std::size_t i = 0; i < reqs.size() && i < res.size(); ++i) {
    if (res[i].verdict != Verdict::passed)
      ADD_FAILURE() << reqs[i].key << ": " << res[i].detail << "\n" << res[i].stderr_tail;
    auto flags = res[i].flags;
    std::sort(flags.begin(), flags.end());
    out[reqs[i].key] = {res[i].verdict, flags};
  }
  return out;
}

TEST(VerifyRepeat, TwoRunsInOppositeOrdersThroughWarmWorkersGiveTheSameFlags) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.timeout_s = 60;  // a run cut by a loaded machine is no flag that changed
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto forward = corpus();
  auto backward = forward;
  std::reverse(backward.begin(), backward.end());
  auto first = outcomes(forward, run_all(*pool, forward));
  auto second = outcomes(backward, run_all(*pool, backward));
  ASSERT_EQ(first.size(), forward.size());
  for (const auto& [key, got] : first) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(second.count(key));
    EXPECT_EQ(got.first, second[key].first);
    EXPECT_EQ(Json(got.second).dump(), Json(second[key].second).dump());
  }
  // What each lot-sensitive sample gets, in every copy and both runs.
  for (const auto* run : {&first, &second})
    for (const auto& [key, got] : *run) {
      SCOPED_TRACE(key + ": " + Json(got.second).dump());
      if (key.rfind("drawn_threshold@", 0) == 0) {
        EXPECT_EQ(got.first, Verdict::passed);
        EXPECT_TRUE(got.second.empty());
      }
      if (key.rfind("fault_after_first_import@", 0) == 0) {
        EXPECT_EQ(got.first, Verdict::passed);
        EXPECT_EQ(got.second, std::vector<std::string>{verify::kUnstableTest});
      }
      // Reads out of bounds, and its later runs fail or pass as a coin falls (what lies past
      // its buffers): out_of_bounds alone, never mutant_survived or unstable_test from them.
      if (key.rfind("foreign_read@", 0) == 0) {
        EXPECT_EQ(got.first, Verdict::passed);
        EXPECT_EQ(got.second, std::vector<std::string>{verify::kOutOfBounds});
      }
    }
}

// The worker freezes its heap (torch, triton, the harness) before it forks a sample's process
// (worker.freeze_heap): a full collection there (the poisoning's before each run of the tests
// after the real run) walks the sample's objects only, and copies none of the worker's pages.
// bench/verify/gc_freeze_cost.py measures what that saves. A fresh-mode process freezes its own
// the same way before the sample's code runs, so the freeze count is alike in every run and in
// both modes: a sample cannot tell a worker's fork from a process of its own by it (issue 52;
// the tampering corpus's gc_freeze_count). Before, fresh mode showed 0.
TEST(VerifyRepeat, EveryProcessThatRunsASampleFindsItsHeapFrozen) {
  for (const char* mode : {"warm", "fresh"}) {
    SCOPED_TRACE(mode);
    TempDir tmp;
    auto cfg = test_config(tmp, mode);
    cfg.timeout_s = 30;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto r = run_one(*pool, load_sample("frozen_heap", {}, "repeat"));
    ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
    // Printed by the real run and by the runs after it in the same process.
    std::vector<long> counts;
    for (auto at = r.stdout_text.find("frozen objects: "); at != std::string::npos;
         at = r.stdout_text.find("frozen objects: ", at + 1))
      counts.push_back(std::stol(r.stdout_text.substr(at + 16)));
    ASSERT_GE(counts.size(), 2u) << r.stdout_text;
    for (long n : counts) {
      EXPECT_GT(n, 1000) << r.stdout_text;
      EXPECT_EQ(n, counts.front()) << r.stdout_text;
    }
  }
}

// A run after the real one that died because the GPU ran out of memory (on an H200 with 24
// workers at 5.2 GiB each, a control run of the scoring benchmark did) says nothing of the test:
// every mutant result is void as the verifier's failure, the sample is flagged infrastructure
// (kforged verifies it again, up to verifier.max_requeues), never unstable_test. The sample's
// control runs (the kernel launched, the answer right) raise torch's OutOfMemoryError by name
// and message; its mutant runs fail the comparison first. In both mutant-run modes.
TEST(VerifyRepeat, AControlRunOutOfGpuMemoryIsTheVerifiersFailureNotUnstableTest) {
  for (auto mode : {verify::MutantRun::same_process, verify::MutantRun::new_process}) {
    SCOPED_TRACE(std::string(verify::to_string(mode)));
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.timeout_s = 30;
    cfg.mutant_run = mode;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto r = run_one(*pool, load_sample("control_out_of_memory", {}, "repeat"));
    EXPECT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
    EXPECT_EQ(r.flags, std::vector<std::string>{verify::kInfrastructure}) << r.detail;
    EXPECT_FALSE(r.verified());
    EXPECT_NE(r.detail.find("; infrastructure: the "), std::string::npos) << r.detail;
    EXPECT_NE(r.detail.find("control run"), std::string::npos) << r.detail;
    EXPECT_NE(r.detail.find("ran out of GPU memory (test_add: OutOfMemoryError: CUDA out of"),
              std::string::npos)
        << r.detail;
    const auto& controls = r.report["mutant"]["controls"];
    EXPECT_EQ(controls.value("infrastructure", false), true) << controls.dump();
    EXPECT_EQ(controls.value("failed", true), false) << controls.dump();
    // Nothing counted: no kill, no survivor; the score says why it stopped.
    EXPECT_EQ(r.report["mutation"]["killed"], 0) << r.report["mutation"].dump();
    EXPECT_EQ(r.report["mutation"]["applicable"], 0) << r.report["mutation"].dump();
    EXPECT_NE(r.report["mutation"].value("stopped", "").find("ran out of GPU memory"),
              std::string::npos)
        << r.report["mutation"].dump();
  }
}

}  // namespace
}  // namespace kforge::test
