// Real Triton kernels on a real GPU, through the pool, in warm and fresh mode. Each sample is a
// directory tests/verify/gpu/NAME/ with code.py, wrapper.py, test.py and expect.json
// ({"verdict": ..., "flags": [...], "detail_contains": ...}). Skipped, saying why, where torch,
// triton or a GPU is missing. MutantCorpus runs the weak and strong tests of tests/verify/mutants
// (its README.md): every weak one must be flagged, every strong one verified. CrossCompileForAmd
// compiles the launched kernels of tests/verify/gpu_cross for hip:gfx942 with Triton's AMD
// backend: the portable one compiles, the one with inline PTX does not. TimingCorpus times the
// samples of tests/verify/timing/corpus (each expect.json says what must come out) in two pools
// one after the other: each classified as expected, and the speedups of the two runs within 5%.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "kforge/core/fs.hpp"
#include "kforge/verify/speed.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

std::string gpu_python() {
  const char* p = std::getenv("KFORGE_TEST_GPU_PYTHON");
  return p && *p ? p : "python3";
}

nlohmann::json probe() {
  std::string py = gpu_python();
  if (py.find('/') == std::string::npos) py = "/usr/bin/env";
  std::vector<std::string> argv = {py};
  if (py == "/usr/bin/env") argv.push_back(gpu_python());
  argv.push_back((source_dir() / "tests" / "verify" / "gpu" / "probe_cuda.py").string());
  auto r = run_process(argv, {}, 120);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  return j.is_object() ? j : nlohmann::json{{"error", r.err}};
}

std::vector<std::string> gpu_samples() {
  std::vector<std::string> names;
  for (const auto& e :
       std::filesystem::directory_iterator(source_dir() / "tests" / "verify" / "gpu"))
    if (e.is_directory() && std::filesystem::exists(e.path() / "expect.json"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

verify::VerifierConfig gpu_config(const TempDir& tmp, const std::string& mode) {
  auto cfg = test_config(tmp, mode);
  cfg.devices = {};  // detect
  cfg.python = gpu_python();
  cfg.python_path = {};
  cfg.preload = {"torch", "triton", "triton.language", "numpy"};
  cfg.timeout_s = 180;
  cfg.memory_cap_mb = 16384;
  cfg.address_space_cap_mb = 0;
  cfg.max_processes = 512;
  cfg.file_size_cap_mb = 1024;
  cfg.disk_cap_mb = 1024;
  cfg.workers_per_device = 4;
  cfg.worker_start_timeout_s = 300;
  if (const char* cache = std::getenv("KFORGE_TEST_TRITON_CACHE")) cfg.triton_cache_dir = cache;
  if (const char* base = std::getenv("KFORGE_TEST_SANDBOX_UID_BASE"))
    cfg.sandbox_uid_base = std::atoll(base);
  return cfg;
}

void run_gpu_samples(const std::string& mode) {
  auto p = probe();
  if (!p.value("cuda", false) || p["triton"].is_null())
    GTEST_SKIP() << "no GPU with torch and triton here (" << p.dump()
                 << "); scripts/gpu/check runs these on the GPU machine";
  TempDir tmp;
  auto cfg = gpu_config(tmp, mode);
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto names = gpu_samples();
  ASSERT_GE(names.size(), 8u);
  std::vector<verify::VerifyRequest> reqs;
  for (const auto& n : names) reqs.push_back(load_sample(n, {}, "gpu"));
  auto results = run_all(*pool, reqs);
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto expect = nlohmann::json::parse(
        read_text(source_dir() / "tests" / "verify" / "gpu" / names[i] / "expect.json"));
    const auto& r = results[i];
    SCOPED_TRACE(names[i] + ": " + verify::to_string(r.verdict) + ": " + r.detail + "\n" +
                 r.stderr_tail);
    std::string want = expect["verdict"];
    if (expect.contains("verdict_any")) {
      bool ok = false;
      for (const auto& v : expect["verdict_any"]) ok = ok || v == verify::to_string(r.verdict);
      EXPECT_TRUE(ok);
    } else {
      EXPECT_EQ(verify::to_string(r.verdict), want);
    }
    EXPECT_EQ(nlohmann::json(r.flags), expect.value("flags", nlohmann::json::array()));
    if (expect.contains("detail_contains")) {
      EXPECT_NE(r.detail.find(expect["detail_contains"].get<std::string>()), std::string::npos);
    }
    if (expect.value("autotuned", false)) {
      EXPECT_FALSE(r.report["triton"]["autotune_used"].empty()) << r.report["triton"].dump();
    }
    std::printf("gpu sample %-28s %-8s %6lld ms  %s %s\n", names[i].c_str(),
                verify::to_string(r.verdict), static_cast<long long>(r.duration_ms),
                nlohmann::json(r.flags).dump().c_str(), r.detail.c_str());
  }
}

TEST(VerifyGpu, RealTritonKernelsWarm) {
  run_gpu_samples("warm");
}

TEST(VerifyGpu, RealTritonKernelsFresh) {
  run_gpu_samples("fresh");
}

TEST(VerifyGpu, CrossCompileForAmd) {
  auto p = probe();
  if (!p.value("cuda", false) || p["triton"].is_null())
    GTEST_SKIP() << "no GPU with torch and triton here (" << p.dump()
                 << "); scripts/gpu/check runs these on the GPU machine";
  TempDir tmp;
  auto cfg = gpu_config(tmp, "warm");
  cfg.cross_compile = {"hip:gfx942"};
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("portable", {}, "gpu_cross"),
                           load_sample("inline_ptx", {}, "gpu_cross")});
  for (const auto& x : r) {
    SCOPED_TRACE(x.key + ": " + x.detail + "\n" +
                 x.report.value("cross_compile", nlohmann::json()).dump(1) + "\n" + x.stderr_tail);
    // Both run and pass on the NVIDIA GPU; the cross-compile never changes that.
    ASSERT_EQ(x.verdict, verify::Verdict::passed);
    EXPECT_TRUE(x.verified());
    // The test's sizes 1, 1000, 4096 and 98432 give Triton three specialisations of one kernel:
    // n_elements == 1 becomes a constexpr, 1000 is an i32 with no divisibility, and the two
    // multiples of 16 share one with tt.divisibility 16. Each is captured once.
    const auto& cc = x.report["cross_compile"];
    ASSERT_EQ(cc["kernels"].size(), 3u);
    std::set<std::string> shapes;
    for (const auto& k : cc["kernels"]) {
      EXPECT_EQ(k["kernel"], "add_kernel");
      EXPECT_EQ(k["constexprs"]["BLOCK_SIZE"], 1024);
      EXPECT_EQ(k["signature"]["x_ptr"], "*fp32");
      shapes.insert(k["signature"]["n_elements"].get<std::string>() + " " +
                    k["attrs"].value("n_elements", nlohmann::json::array()).dump());
    }
    EXPECT_EQ(shapes,
              (std::set<std::string>{"constexpr []", "i32 []", "i32 [[\"tt.divisibility\",16]]"}));
    EXPECT_EQ(cc["targets"]["hip:gfx942"].value("kernels", 0), 3);
  }
  auto t0 = r[0].report["cross_compile"]["targets"]["hip:gfx942"];
  auto t1 = r[1].report["cross_compile"]["targets"]["hip:gfx942"];
  EXPECT_EQ(t0["result"], "ok") << t0.dump();
  EXPECT_EQ(t1["result"], "error") << t1.dump();
  EXPECT_FALSE(t1.value("error", std::string()).empty());
  std::printf("cross-compile hip:gfx942: portable %s in %lld ms; inline_ptx %s: %s\n",
              t0.value("result", std::string("?")).c_str(),
              static_cast<long long>(t0.value("ms", std::int64_t{-1})),
              t1.value("result", std::string("?")).c_str(),
              t1.value("error", std::string()).c_str());
}

TEST(VerifyGpu, MutantCorpus) {
  auto p = probe();
  if (!p.value("cuda", false) || p["triton"].is_null())
    GTEST_SKIP() << "no GPU with torch and triton here (" << p.dump()
                 << "); scripts/gpu/check runs these on the GPU machine";
  TempDir tmp;
  auto pool = make_pool(gpu_config(tmp, "warm"));
  ASSERT_TRUE(pool);
  namespace fs = std::filesystem;
  const fs::path root = source_dir() / "tests" / "verify" / "mutants";
  std::vector<std::string> names;  // kernel/test
  std::vector<verify::VerifyRequest> reqs;
  std::set<std::string> kernels;
  for (const auto& k : fs::directory_iterator(root)) {
    if (!k.is_directory()) continue;
    for (const auto& t : fs::directory_iterator(k.path())) {
      std::string f = t.path().filename().string();
      if (f.rfind("weak_", 0) != 0 && f.rfind("strong_", 0) != 0) continue;
      verify::VerifyRequest r;
      r.key = k.path().filename().string() + "/" + t.path().stem().string();
      r.code = read_text(k.path() / "code.py");
      r.kernel_wrapper = read_text(k.path() / "wrapper.py");
      r.unitest_code = read_text(t.path());
      names.push_back(r.key);
      reqs.push_back(std::move(r));
      kernels.insert(k.path().filename().string());
    }
  }
  ASSERT_GE(kernels.size(), 8u);
  auto results = run_all(*pool, reqs);
  int weak = 0, strong = 0, caught = 0, verified = 0;
  int kernel_killed = 0, kernel_applicable = 0, kernel_equivalent = 0;
  std::map<std::string, int> by_mutant, by_flag;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto& r = results[i];
    bool is_weak = names[i].find("/weak_") != std::string::npos;
    SCOPED_TRACE(names[i] + ": " + verify::to_string(r.verdict) + ": " + r.detail + "\n" +
                 r.report.value("mutation", nlohmann::json()).dump() + "\n" + r.stderr_tail);
    // Each test passes on its correct kernel: what tells weak from strong is the mutants.
    EXPECT_EQ(r.verdict, verify::Verdict::passed);
    auto mutation = r.report.value("mutation", nlohmann::json::object());
    if (is_weak) {
      ++weak;
      bool flagged = false;
      for (const char* f : {verify::kWeakTest, verify::kMutantSurvived, verify::kWeakInputs,
                            verify::kConstantOutput})
        if (std::find(r.flags.begin(), r.flags.end(), f) != r.flags.end()) {
          flagged = true;
          ++by_flag[f];
        }
      EXPECT_TRUE(flagged);
      EXPECT_FALSE(r.verified());
      caught += flagged;
      for (const auto& m : mutation.value("survived", nlohmann::json::array())) ++by_mutant[m];
      auto kernel = mutation.value("kernel", nlohmann::json::object());
      for (const auto& s : kernel.value("survived", nlohmann::json::array()))
        ++by_mutant["kernel:" + s.value("op", std::string("?"))];
    } else {
      ++strong;
      EXPECT_TRUE(r.verified());
      EXPECT_EQ(mutation.value("killed", -1), mutation.value("applicable", -2));
      EXPECT_GE(mutation.value("applicable", 0), 3);
      // The kernel battery ran on every strong test and none of its mutants survived.
      auto kernel = mutation.value("kernel", nlohmann::json::object());
      EXPECT_EQ(kernel.value("killed", -1), kernel.value("applicable", -2));
      EXPECT_GE(kernel.value("applicable", 0), 1);
      kernel_killed += kernel.value("killed", 0);
      kernel_applicable += kernel.value("applicable", 0);
      kernel_equivalent += kernel.value("equivalent", 0);
      verified += r.verified();
    }
    auto km = mutation.value("kernel", nlohmann::json::object());
    std::printf("mutant corpus %-32s %-8s killed %d/%d kernel %d/%d (%d equivalent) %s %s %s\n",
                names[i].c_str(), verify::to_string(r.verdict), mutation.value("killed", -1),
                mutation.value("applicable", -1), km.value("killed", -1),
                km.value("applicable", -1), km.value("equivalent", -1),
                nlohmann::json(r.flags).dump().c_str(),
                mutation.value("survived", nlohmann::json::array()).dump().c_str(),
                km.value("survived", nlohmann::json::array()).dump().c_str());
  }
  EXPECT_GE(weak, 40);
  EXPECT_GE(strong, 12);
  std::printf("mutant corpus: %d/%d weak tests flagged, %d/%d strong tests verified; survivors:",
              caught, weak, verified, strong);
  for (const auto& [m, n] : by_mutant) std::printf(" %s %d", m.c_str(), n);
  std::printf("; flags:");
  for (const auto& [f, n] : by_flag) std::printf(" %s %d", f.c_str(), n);
  std::printf("; strong tests' kernel mutants killed %d/%d, %d equivalent\n", kernel_killed,
              kernel_applicable, kernel_equivalent);
}

// The speed label on a real GPU. KFORGE_TIMING_OUT names a file for both runs' labels
// (scripts/gpu/timing-corpus writes docs/BENCHMARKS.md's figures from it).
TEST(VerifyGpu, TimingCorpus) {
  auto p = probe();
  if (!p.value("cuda", false) || p["triton"].is_null())
    GTEST_SKIP() << "no GPU with torch and triton here (" << p.dump()
                 << "); scripts/gpu/check runs these on the GPU machine";
  namespace fs = std::filesystem;
  const fs::path root = source_dir() / "tests" / "verify" / "timing" / "corpus";
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory() && fs::exists(e.path() / "expect.json"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 8u);
  std::vector<verify::VerifyRequest> reqs;
  for (const auto& n : names) {
    verify::VerifyRequest r;
    r.key = n;
    r.code = read_text(root / n / "code.py");
    r.kernel_wrapper = read_text(root / n / "wrapper.py");
    r.unitest_code = read_text(root / n / "test.py");
    reqs.push_back(std::move(r));
  }
  nlohmann::json out = nlohmann::json::array();
  std::vector<std::vector<verify::VerifyResult>> runs;
  for (int run = 0; run < 2; ++run) {
    TempDir tmp;
    auto cfg = gpu_config(tmp, "warm");
    cfg.timing.enabled = verify::TimingOn::all;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    runs.push_back(run_all(*pool, reqs));
    nlohmann::json labels = nlohmann::json::object();
    for (std::size_t i = 0; i < names.size(); ++i)
      labels[names[i]] = runs.back()[i].report.value("speed", nlohmann::json());
    out.push_back(labels);
  }
  if (const char* path = std::getenv("KFORGE_TIMING_OUT"))
    (void)write_file_atomic(path, out.dump(1));
  std::vector<double> diffs;
  for (std::size_t i = 0; i < names.size(); ++i) {
    auto expect = nlohmann::json::parse(read_text(root / names[i] / "expect.json"));
    const auto& r = runs[0][i];
    SCOPED_TRACE(names[i] + ": " + verify::to_string(r.verdict) + ": " + r.detail + "\n" +
                 r.report.value("speed", nlohmann::json()).dump() + "\n" + r.stderr_tail);
    // A sample its expect.json says fails (the cached result: the differential check's
    // transformed inputs get the cached answer) still carries the label the speed phase gave.
    ASSERT_EQ(verify::to_string(r.verdict), expect.value("verdict", std::string("passed")));
    if (expect.contains("detail")) {
      EXPECT_NE(r.detail.find(expect["detail"].get<std::string>()), std::string::npos);
    }
    auto l = verify::speed_label(r.report);
    ASSERT_TRUE(l && l->timed);
    for (const auto& f : expect.value("flags", nlohmann::json::array()))
      EXPECT_NE(std::find(l->flags.begin(), l->flags.end(), f.get<std::string>()), l->flags.end())
          << "flag " << f;
    if (expect.contains("flags") && expect["flags"].empty()) {
      EXPECT_TRUE(l->flags.empty());
    }
    if (expect.contains("speedup")) {
      ASSERT_TRUE(l->speedup);
      EXPECT_GE(*l->speedup, expect["speedup"][0].get<double>());
      EXPECT_LE(*l->speedup, expect["speedup"][1].get<double>());
    }
    if (expect.contains("pass_perf")) {
      EXPECT_EQ(l->pass_perf, std::optional<bool>(expect["pass_perf"].get<bool>()));
    }
    if (expect.value("cuda_graph", false)) {
      EXPECT_TRUE(r.report["speed"]["reference"].contains("cuda_graph"));
    }
    if (expect.contains("kernel_us_max")) {
      ASSERT_TRUE(l->kernel_us);
      EXPECT_LE(*l->kernel_us, expect["kernel_us_max"].get<double>());
    }
    auto l2 = verify::speed_label(runs[1][i].report);
    const auto& ref = r.report["speed"]["reference"];
    if (l->speedup && l2 && l2->speedup && l->flags.empty() && ref.is_object() &&
        ref.value("time_us", 0.0) >= 20 && ref.value("reference_us", 0.0) >= 20)
      diffs.push_back(std::abs(*l2->speedup / *l->speedup - 1));
  }
  ASSERT_GE(diffs.size(), 3u);
  for (double d : diffs) EXPECT_LE(d, 0.05) << "a speedup moved by more than 5% between runs";
}

}  // namespace
}  // namespace kforge::test
