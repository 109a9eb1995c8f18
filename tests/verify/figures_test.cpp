// Per-sample figures: the harness times Triton's compile() calls (the fake Triton, like Triton 3.x,
// takes compile() from triton.compiler when a kernel first launches), the mutant run compiles
// nothing, and sample_figures() reads it all.

#include <gtest/gtest.h>

#include "kforge/verify/figures.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

TEST(VerifyFigures, PhasesCompileCountsAndAutotuneConfig) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("triton_vector_add"), load_sample("triton_autotune")});
  ASSERT_EQ(r[0].verdict, verify::Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_EQ(r[0].report["triton"]["compile"]["count"], 1);  // one kernel, compiled once
  EXPECT_EQ(r[0].report["mutant"]["compiles"], 0);          // launches skipped: no compile
  auto f = verify::sample_figures(r[0]);
  EXPECT_EQ(f["duration_ms"], r[0].duration_ms);
  EXPECT_EQ(f["device"], "cpu");
  EXPECT_GE(f["cpu_ms"].get<std::int64_t>(), 0);
  const auto& ph = f["phases"];
  for (const char* k :
       {"queue", "dispatched", "import", "tests", "compile", "compile_cpu", "compile_child_cpu",
        "compiles", "run", "mutant", "mutant_compiles", "context_waited"})
    EXPECT_TRUE(ph.contains(k)) << k << " missing: " << ph.dump();
  EXPECT_EQ(ph["compiles"], 1);
  EXPECT_EQ(ph["mutant_compiles"], 0);
  // From the pool's creation: the workers' start and the wait in the queue, at least.
  EXPECT_GE(ph["dispatched"].get<std::int64_t>(), ph["queue"].get<std::int64_t>());
  // The autotuned kernel: the config it ran with.
  ASSERT_EQ(r[1].verdict, verify::Verdict::passed) << r[1].detail << r[1].stderr_tail;
  auto a = verify::sample_figures(r[1])["autotune"];
  ASSERT_EQ(a.size(), 1u) << a.dump();
  EXPECT_EQ(a[0]["kernel"], "scale_kernel");
  EXPECT_NE(a[0]["config"].get<std::string>().find("BLOCK_SIZE"), std::string::npos) << a.dump();
}

// Triton hashes itself for its cache key once per process: the worker does it before forking, so
// a sample inherits the key instead of hashing again (0.4 s of CPU per sample on an H200 host).
TEST(VerifyFigures, TritonCacheKeyIsComputedInTheWorkerBeforeTheSample) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("triton_key_inherited"));
  EXPECT_EQ(r.verdict, verify::Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_EQ(r.report["triton"]["compile"]["count"], 1) << r.report.dump();
}

// The pool's facts (report["pool"], report["mutant"]) are read through the report's declaration:
// a field of them renamed is named in the figures (report_error), not a figure that goes missing.
TEST(VerifyFigures, ThePoolsFactsAreReadThroughTheDeclarationAndARenamedOneIsNamed) {
  verify::VerifyResult r;
  r.duration_ms = 500;
  set_report(r, {{"pool", {{"queue_ms", 3}, {"cpu_ms", 120}, {"dispatched_ms", 7400}}},
                 {"mutant",
                  {{"verdict", "failed"},
                   {"detail", "1 test failed"},
                   {"duration_ms", 80},
                   {"compiles", 0},
                   {"phase_times", {{"prepare", {{"wall_ms", 9}, {"cpu_ms", 7}}}}}}}});
  auto f = verify::sample_figures(r);
  EXPECT_EQ(f["cpu_ms"], 120);
  EXPECT_EQ(f["phases"]["queue"], 3);
  EXPECT_EQ(f["phases"]["dispatched"], 7400);
  EXPECT_EQ(f["phases"]["mutant"], 80);
  EXPECT_EQ(f["phases"]["mutant_compiles"], 0);
  EXPECT_EQ(f["phase_times"]["mutant_prepare"]["wall_ms"], 9);
  EXPECT_FALSE(f.contains("report_error"));
  r.report["mutant"]["duration"] = 80;
  r.report["mutant"].erase("duration_ms");
  f = verify::sample_figures(r);
  EXPECT_EQ(f.value("report_error", ""),
            "harness report: field \"mutant.duration\" is not a field of the report "
            "(report_fields.txt)");
  EXPECT_FALSE(f["phases"].contains("mutant")) << f.dump();
}

}  // namespace
}  // namespace kforge::test
