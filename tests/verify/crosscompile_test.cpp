// Cross-compilation after a passing run (verifier.cross_compile): the harness's capture and
// compile with launches faked in Python (crosscompile/capture_test.py), then end to end through
// the pool on the CPU stand-in for Triton (tests/verify/fake_triton), whose AMD backend fails
// the way the real one does on inline PTX, on 32 warps of 64 threads and with an LLVM abort;
// and the per-target rows a stored verification gets (real SQLite).

#include <gtest/gtest.h>

#include "kforge/core/fs.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/store.hpp"
#include "kforge/verify/targets.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using Json = nlohmann::json;

TEST(VerifyCrossCompile, PythonCapture) {
  auto harness = source_dir() / "libs" / "verify" / "harness";
  TempDir tmp;
  auto r = run_process(
      {sandbox_python(), (source_dir() / "tests/verify/crosscompile/capture_test.py").string(),
       harness.string()},
      {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 12 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyCrossCompile, TargetsAreCheckedWithClearErrors) {
  EXPECT_FALSE(verify::target_error("hip:gfx942"));
  EXPECT_FALSE(verify::target_error("hip:gfx90a"));
  EXPECT_FALSE(verify::target_error("hip:gfx1100"));
  const std::string accepted =
      "accepted: hip:gfx908, hip:gfx90a, hip:gfx940, hip:gfx941, "
      "hip:gfx942, hip:gfx950, hip:gfx1030, hip:gfx1100";
  EXPECT_EQ(verify::target_error("gfx942")->rfind(
                "'gfx942' is not BACKEND:ARCH (e.g. hip:gfx942); " + accepted, 0),
            0u);
  EXPECT_NE(verify::target_error("cuda:sm90")->find("backend 'cuda' is not one of: hip"),
            std::string::npos);
  EXPECT_NE(verify::target_error("cuda:sm90")->find(accepted), std::string::npos);
  EXPECT_EQ(verify::target_error("hip:mi300")
                ->rfind("'hip:mi300': 'mi300' is not an AMD architecture Triton compiles for; " +
                            accepted,
                        0),
            0u);
  // Shaped like one, but no architecture Triton (LLVM's AMDGPU target) can name.
  EXPECT_EQ(
      verify::target_error("hip:gfx9999")
          ->rfind("'hip:gfx9999': 'gfx9999' is not an AMD architecture Triton compiles for; " +
                      accepted,
                  0),
      0u);
  std::vector<std::string> out;
  EXPECT_FALSE(verify::parse_targets({"hip:gfx942,hip:gfx90a", "hip:gfx942"}, "--x", out));
  EXPECT_EQ(out, (std::vector<std::string>{"hip:gfx942", "hip:gfx90a"}));
  EXPECT_EQ(*verify::parse_targets({"hip:gfx942,"}, "--x", out),
            "--x: an empty target in 'hip:gfx942,'");
}

TEST(VerifyCrossCompile, TheConfigurationDefaultsToNoTargetAndRefusesBadOnes) {
  verify::VerifierConfig c;
  EXPECT_TRUE(c.cross_compile.empty());
  EXPECT_EQ(c.cross_compile_timeout_s, 60);
  ASSERT_TRUE(read_verifier("verifier:\n  cross_compile: [hip:gfx942, hip:gfx90a]\n", c).ok());
  EXPECT_EQ(c.cross_compile, (std::vector<std::string>{"hip:gfx942", "hip:gfx90a"}));
  auto st = read_verifier("verifier:\n  cross_compile: [hip:gfx942, cuda:sm90]\n", c);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find(
                "k.yaml:2: verifier.cross_compile: a target: 'cuda:sm90': backend 'cuda'"),
            std::string::npos)
      << st.error().message;
}

verify::VerifierConfig cross_config(const TempDir& tmp) {
  auto cfg = test_config(tmp);
  cfg.cross_compile = {"hip:gfx942", "hip:gfx90a"};
  cfg.cross_compile_timeout_s = 20;
  return cfg;
}

TEST(VerifyCrossCompile, EachLaunchedSpecialisationIsCompiledForEachTarget) {
  TempDir tmp;
  auto pool = make_pool(cross_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("triton_vector_add"), load_sample("triton_autotune"),
                           load_sample("assert_fail")});
  // A portable kernel: both targets compile it; the verdict is the real run's.
  ASSERT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_TRUE(r[0].verified());
  const auto& cc = r[0].report["cross_compile"];
  EXPECT_EQ(verify::cross_compile_summary(verify::cross_compile_results(r[0].report)),
            Json({{"hip:gfx942", "ok"}, {"hip:gfx90a", "ok"}}));
  // Sizes 1, 63, 64 and 130: n is 1 (a constexpr, as Triton specialises it), 64 (divisible by
  // 16) or neither; four launches, three specialisations.
  EXPECT_EQ(cc["launches"], 4);
  ASSERT_EQ(cc["kernels"].size(), 3u) << cc.dump(1);
  EXPECT_EQ(cc["kernels"][0]["kernel"], "add_kernel");
  EXPECT_EQ(cc["kernels"][0]["signature"], Json({{"x_ptr", "*fp32"},
                                                 {"y_ptr", "*fp32"},
                                                 {"out_ptr", "*fp32"},
                                                 {"n_elements", "constexpr"},
                                                 {"BLOCK_SIZE", "constexpr"}}));
  EXPECT_EQ(cc["kernels"][0]["constexprs"], Json({{"n_elements", 1}, {"BLOCK_SIZE", 64}}));
  EXPECT_EQ(cc["kernels"][1]["signature"]["n_elements"], "i32");
  EXPECT_FALSE(cc["kernels"][1]["attrs"].contains("n_elements"));  // 63
  EXPECT_EQ(cc["kernels"][2]["attrs"]["n_elements"], Json::parse(R"([["tt.divisibility",16]])"));
  EXPECT_EQ(cc["targets"]["hip:gfx942"]["kernels"], 3);
  // An autotuned kernel: the config the run used, its meta-parameter and its options.
  ASSERT_EQ(r[1].verdict, Verdict::passed) << r[1].detail << r[1].stderr_tail;
  const auto& k = r[1].report["cross_compile"]["kernels"];
  ASSERT_EQ(k.size(), 1u) << k.dump(1);
  EXPECT_EQ(k[0]["constexprs"]["BLOCK_SIZE"], 64);
  EXPECT_EQ(k[0]["options"], Json({{"num_warps", 4}, {"num_stages", 3}}));
  EXPECT_EQ(k[0]["autotune_config"], "BLOCK_SIZE: 64, num_warps: 4, num_stages: 3");
  EXPECT_EQ(r[1].report["cross_compile"]["targets"]["hip:gfx90a"]["result"], "ok");
  // A failing sample is not cross-compiled.
  EXPECT_EQ(r[2].verdict, Verdict::failed);
  EXPECT_FALSE(r[2].report.contains("cross_compile"));
}

TEST(VerifyCrossCompile, WhatDoesNotPortIsAnErrorOfItsTargetAndTheVerdictStands) {
  TempDir tmp;
  auto pool = make_pool(cross_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("cross_inline_ptx"), load_sample("cross_wide_warps"),
                           load_sample("cross_llvm_abort")});
  for (const auto& x : r) {
    SCOPED_TRACE(x.key + ": " + x.report.dump(1));
    EXPECT_EQ(x.verdict, Verdict::passed) << x.detail << x.stderr_tail;
    EXPECT_TRUE(x.verified());  // no run asked for a target: nothing is flagged
  }
  auto t = [&](int i, const char* target) {
    return r[i].report["cross_compile"]["targets"][target];
  };
  EXPECT_EQ(t(0, "hip:gfx942")["result"], "error");
  EXPECT_EQ(t(0, "hip:gfx942")["stage"], "amdgcn");
  EXPECT_EQ(t(0, "hip:gfx942")["kernel"], "add_kernel");
  EXPECT_EQ(t(0, "hip:gfx942")["error"],
            "amdgcn: RuntimeError: <inline asm>:1:2: error: invalid instruction | mov.b32 $0, $1; "
            "| ^");
  EXPECT_EQ(t(0, "hip:gfx90a")["result"], "error");
  // The launch's num_warps reached the compiler: 32 x 64 threads.
  EXPECT_EQ(t(1, "hip:gfx942")["stage"], "ttgir");
  EXPECT_NE(t(1, "hip:gfx942")["error"].get<std::string>().find("2048 threads per block"),
            std::string::npos);
  // The compiler aborted in its child: the target records it, the sample is unharmed.
  EXPECT_EQ(t(2, "hip:gfx942")["stage"], "llir");
  EXPECT_NE(t(2, "hip:gfx942")["error"].get<std::string>().find(
                "the compiler crashed (SIGABRT): LLVM ERROR: Cannot select"),
            std::string::npos);
  EXPECT_EQ(verify::cross_compile_summary(verify::cross_compile_results(r[2].report)),
            Json({{"hip:gfx942", "error"}, {"hip:gfx90a", "error"}}));
}

TEST(VerifyCrossCompile, ATritonWithoutTheBackendRecordsUnavailableAndFailsNothing) {
  TempDir tmp;
  auto cfg = cross_config(tmp);
  cfg.cross_compile = {"hip:gfx942"};
  cfg.env["KFORGE_FAKE_TRITON_BACKENDS"] = "nvidia";
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("cross_inline_ptx"));
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
  EXPECT_TRUE(r.verified());
  auto res = verify::cross_compile_results(r.report);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].result, store::TargetResultKind::unavailable);
  EXPECT_EQ(res[0].error, "this Triton has no backend for hip:gfx942");
}

TEST(VerifyCrossCompile, ARequestAddsTargetsAndTheStoreKeepsOneRowPerTarget) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto req = load_sample("cross_inline_ptx");
  req.cross_compile = {"hip:gfx942"};
  auto r = run_all(*pool, {req, load_sample("cross_inline_ptx")});
  ASSERT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_EQ(r[0].report["cross_compile"]["targets"].size(), 1u);
  EXPECT_FALSE(r[1].report.contains("cross_compile"));  // no target: nothing compiled

  auto db = store::Db::open({(tmp / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  auto id = verify::store_verification(**db, {std::nullopt, 1, 1, 1, 0}, r[0], 5);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select = read_file(source_dir() / "tests" / "verify" / "select_targets.sql");
  ASSERT_TRUE(select.ok());
  auto q = (*db)->prepare(*select);
  ASSERT_TRUE(q.ok()) << q.error().message;
  q->bind(1, *id);
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->text(0), "hip:gfx942");
  EXPECT_EQ(q->text(1), "error");
  EXPECT_EQ(q->text(2).rfind("amdgcn: RuntimeError: <inline asm>", 0), 0u) << q->text(2);
  EXPECT_EQ(q->text(3), "add_kernel");
  EXPECT_FALSE(*q->step());
}

TEST(VerifyCrossCompile, ARequiredTargetThatFailsMakesAPassingSampleNotVerified) {
  verify::VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  set_report(r, {{"cross_compile",
                  {{"targets",
                    {{"hip:gfx942",
                      {{"result", "error"}, {"kernel", "k"}, {"error", "amdgcn: RuntimeError: x"}}},
                     {"hip:gfx90a", {{"result", "unavailable"}, {"reason", "no backend"}}}}}}}});
  auto other = r;
  // Unavailable is not held against the sample; a target that is not required neither.
  EXPECT_FALSE(verify::require_targets(other, {"hip:gfx90a"}));
  EXPECT_TRUE(other.verified());
  EXPECT_EQ(other.report["cross_compile"]["required"], Json({"hip:gfx90a"}));
  EXPECT_TRUE(verify::require_targets(r, {"hip:gfx942", "hip:gfx90a"}));
  EXPECT_FALSE(r.verified());
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kCrossCompileFailed});
  EXPECT_EQ(r.detail,
            "1 test passed; does not compile for a required target: hip:gfx942: amdgcn: "
            "RuntimeError: x");
  // A sample that did not pass keeps its verdict and flags.
  verify::VerifyResult failed;
  failed.verdict = Verdict::failed;
  failed.report = r.report;
  failed.harness = r.harness;
  EXPECT_FALSE(verify::require_targets(failed, {"hip:gfx942"}));
  EXPECT_TRUE(failed.flags.empty());
}

}  // namespace
}  // namespace kforge::test
