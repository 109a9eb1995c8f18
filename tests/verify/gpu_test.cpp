// Real Triton kernels on a real GPU, through the pool, in warm and fresh mode. Each sample is a
// directory tests/verify/gpu/NAME/ with code.py, wrapper.py, test.py and expect.json
// ({"verdict": ..., "flags": [...], "detail_contains": ...}). Skipped, saying why, where torch,
// triton or a GPU is missing.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

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

void run_gpu_samples(const std::string& mode) {
  auto p = probe();
  if (!p.value("cuda", false) || p["triton"].is_null())
    GTEST_SKIP() << "no GPU with torch and triton here (" << p.dump()
                 << "); scripts/gpu-check runs these on the GPU machine";
  TempDir tmp;
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

}  // namespace
}  // namespace kforge::test
