// Several GPUs in one pool, on a CPU machine: fake devices (the GPU is the outside world), real
// workers and samples. Workers are spread over the devices and each sees only its own; the
// automatic worker count; a GPU that goes bad mid-run (injected through the pool's Env) leaves
// the rotation.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <tuple>

#include "kforge/store/db.hpp"
#include "kforge/verify/gpu.hpp"
#include "kforge/verify/store.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;

// A GPU that goes bad (the GPU is the outside world, faked through the pool's door to processes):
// once fail_now() is called, the workers started for the device whose CUDA_VISIBLE_DEVICES is
// `visible` are killed, and every later start on it fails.
class FailingGpuEnv final : public EnvWrapper {
 public:
  explicit FailingGpuEnv(const std::string& visible)
      : EnvWrapper(default_env()), visible_("CUDA_VISIBLE_DEVICES=" + visible) {}

  Result<pid_t> spawn(const SpawnOptions& o) override {
    bool on_device = o.env && std::find(o.env->begin(), o.env->end(), visible_) != o.env->end();
    if (on_device && failed_) {
      ++refused_;
      return fail("io", "test fault: the GPU of " + visible_ + " is gone");
    }
    auto pid = EnvWrapper::spawn(o);
    if (on_device && pid.ok()) started_.push_back(*pid);
    return pid;
  }

  void fail_now() {
    if (failed_) return;
    failed_ = true;
    for (pid_t p : started_) kill_group(target(), p);
  }
  int refused() const { return refused_; }

 private:
  std::string visible_;
  bool failed_ = false;
  int refused_ = 0;
  std::vector<pid_t> started_;
};

std::vector<verify::Device> two_fake_gpus(std::int64_t memory_mb = 0) {
  return {{"cuda:0", verify::Vendor::nvidia, 0, "Fake GPU", "GPU-aaaa", memory_mb},
          {"cuda:1", verify::Vendor::nvidia, 1, "Fake GPU", "GPU-bbbb", memory_mb}};
}

verify::VerifierConfig gpu_config(const TempDir& tmp) {
  auto cfg = test_config(tmp);
  cfg.devices = {};
  cfg.preload = {};  // no torch: the workers' GPU check has nothing to touch
  cfg.timeout_s = 10;
  return cfg;
}

TEST(VerifyDevices, AutoWorkerRule) {
  // One worker for every core of the GPU's share, at least 2.
  EXPECT_EQ(verify::auto_workers_per_device(16, 1, 0), 16);
  EXPECT_EQ(verify::auto_workers_per_device(32, 2, 143771), 16);
  EXPECT_EQ(verify::auto_workers_per_device(2, 1, 0), 2);
  EXPECT_EQ(verify::auto_workers_per_device(3, 2, 0), 2);
  EXPECT_EQ(verify::auto_workers_per_device(128, 8, 143771), 16);
  // At most one per 4 GiB of the GPU's memory.
  EXPECT_EQ(verify::auto_workers_per_device(64, 1, 16384), 4);
  EXPECT_EQ(verify::auto_workers_per_device(64, 1, 81559), 19);
  EXPECT_EQ(verify::auto_workers_per_device(512, 1, 0), 64);
  std::string why;
  verify::auto_workers_per_device(16, 1, 81559, &why);
  EXPECT_NE(why.find("16 cores / 1 GPU(s)"), std::string::npos) << why;
  EXPECT_EQ(why.find("speed label"), std::string::npos) << why;
  // With the speed label on (verifier.timing.workers_factor): the cores' count times the factor,
  // rounded down, still at most one per 4 GiB and at most 64; a factor of 1 changes nothing.
  EXPECT_EQ(verify::auto_workers_per_device(16, 1, 143771, nullptr, 1.5), 24);
  EXPECT_EQ(verify::auto_workers_per_device(16, 1, 143771, nullptr, 1.0), 16);
  EXPECT_EQ(verify::auto_workers_per_device(32, 2, 143771, nullptr, 1.5), 24);
  EXPECT_EQ(verify::auto_workers_per_device(3, 1, 0, nullptr, 1.5), 4);
  EXPECT_EQ(verify::auto_workers_per_device(16, 1, 81559, nullptr, 1.5), 19);
  EXPECT_EQ(verify::auto_workers_per_device(64, 1, 0, nullptr, 4.0), 64);
  verify::auto_workers_per_device(16, 1, 143771, &why, 1.5);
  EXPECT_NE(why.find("16 cores / 1 GPU(s) x 1.5 (speed label on) = 24"), std::string::npos) << why;
  // nvidia-smi's memory column.
  auto devs =
      verify::parse_nvidia_smi("0, GPU-aaaa, NVIDIA H200, 143771\n1, GPU-bbbb, X, 81559 MiB\n");
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].memory_mb, 143771);
  EXPECT_EQ(devs[1].memory_mb, 81559);
}

TEST(VerifyDevices, WorkersAreSpreadAndEachSeesOnlyItsGpu) {
  TempDir tmp;
  auto cfg = gpu_config(tmp);
  cfg.workers_per_device = verify::kAutoWorkers;
  // 4 GiB of memory per fake GPU: auto gives one worker each, whatever the cores.
  auto pool = make_pool(cfg, two_fake_gpus(4096));
  ASSERT_TRUE(pool);
  EXPECT_EQ(pool->slots(), 2);
  auto devs = pool->devices();
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_EQ(devs[0].workers, 1);
  EXPECT_EQ(devs[1].workers, 1);
  EXPECT_NE(pool->sizing().find("cuda:1: auto: 1 per GPU"), std::string::npos) << pool->sizing();
  EXPECT_EQ(pool->sizing().find("speed label"), std::string::npos) << pool->sizing();
  std::vector<verify::VerifyRequest> reqs;
  for (int i = 0; i < 6; ++i) reqs.push_back(load_sample("print_device"));
  auto r = run_all(*pool, reqs);
  std::map<std::string, int> by_device;
  for (const auto& x : r) {
    ASSERT_EQ(x.verdict, Verdict::passed) << x.detail << x.stderr_tail;
    ++by_device[x.device];
    std::string uuid = x.device == "cuda:0" ? "GPU-aaaa" : "GPU-bbbb";
    // One hardware queue per context (verifier.gpu_hw_queues' default).
    EXPECT_NE(x.stdout_text.find("VISIBLE=" + uuid + " DEVICE=" + x.device + " QUEUES=1"),
              std::string::npos)
        << x.stdout_text;
  }
  EXPECT_GT(by_device["cuda:0"], 0);
  EXPECT_GT(by_device["cuda:1"], 0);
}

TEST(VerifyDevices, TheSpeedLabelWidensTheAutomaticCountOnly) {
  // The pool passes verifier.timing.workers_factor to the automatic count when the label is on
  // (the sizing says so), and never to an explicit workers_per_device.
  TempDir tmp;
  auto cfg = gpu_config(tmp);
  cfg.workers_per_device = verify::kAutoWorkers;
  cfg.timing.enabled = verify::TimingOn::all;
  cfg.timing.workers_factor = 1.5;  // the default is 1 until the GPU shows the gain
  auto pool = make_pool(cfg, two_fake_gpus(4096));
  ASSERT_TRUE(pool);
  EXPECT_NE(pool->sizing().find("cuda:0: auto: 1 per GPU"), std::string::npos) << pool->sizing();
  EXPECT_NE(pool->sizing().find("x 1.5 (speed label on)"), std::string::npos) << pool->sizing();
  TempDir tmp2;
  auto fixed = gpu_config(tmp2);
  fixed.workers_per_device = 1;
  fixed.timing.enabled = verify::TimingOn::all;
  auto pool2 = make_pool(fixed, two_fake_gpus(4096));
  ASSERT_TRUE(pool2);
  EXPECT_EQ(pool2->sizing().find("speed label"), std::string::npos) << pool2->sizing();
  EXPECT_EQ(pool2->slots(), 2);
}

TEST(VerifyDevices, HardwareQueuesFollowTheSettingAndVerifierEnvWins) {
  verify::Device amd{"rocm:1", verify::Vendor::amd, 1, "Fake GPU", "", 0};
  EXPECT_EQ(amd.hw_queue_env(2).at("GPU_MAX_HW_QUEUES"), "2");
  EXPECT_TRUE(amd.hw_queue_env(0).empty());
  EXPECT_TRUE(verify::Device{}.hw_queue_env(1).empty());  // the CPU has none
  for (auto [queues, env, want] :
       {std::tuple<int, const char*, const char*>{0, "", "<unset>"}, {3, "", "3"}, {1, "8", "8"}}) {
    TempDir tmp;
    auto cfg = gpu_config(tmp);
    cfg.workers_per_device = 1;
    cfg.gpu_hw_queues = queues;
    if (*env) cfg.env["CUDA_DEVICE_MAX_CONNECTIONS"] = env;
    auto pool = make_pool(cfg, two_fake_gpus());
    ASSERT_TRUE(pool);
    auto r = run_one(*pool, load_sample("print_device"));
    ASSERT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
    EXPECT_NE(r.stdout_text.find(std::string("QUEUES=") + want), std::string::npos)
        << queues << " " << env << ": " << r.stdout_text;
  }
}

TEST(VerifyDevices, AGpuThatFailsMidRunLeavesTheRotationAndTheRunFinishesOnTheOther) {
  TempDir tmp;
  auto cfg = gpu_config(tmp);
  cfg.workers_per_device = 1;
  cfg.max_start_failures = 2;
  FailingGpuEnv env("GPU-bbbb");  // cuda:1; outlives the pool
  auto pool = make_pool(cfg, two_fake_gpus(), &env);
  ASSERT_TRUE(pool);
  std::vector<verify::VerifyRequest> reqs;
  for (int i = 0; i < 8; ++i) reqs.push_back(load_sample("pass"));
  // The GPU goes bad once two samples are done.
  auto r = run_all(*pool, reqs, [&env](std::size_t done) {
    if (done == 2) env.fail_now();
  });
  for (const auto& x : r) {
    EXPECT_EQ(x.verdict, Verdict::passed) << x.detail;
    // "pass" defines no Triton kernel, so it is flagged; the point here is that it ran to a
    // verdict.
    EXPECT_EQ(x.flags, std::vector<std::string>{"no_kernel_launch"}) << x.detail;
  }
  for (std::size_t i = 4; i < r.size(); ++i) EXPECT_EQ(r[i].device, "cuda:0") << i;
  // Its worker's restarts fail (with back-off) until the device leaves the rotation.
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (pool->devices().at(1).in_rotation && std::chrono::steady_clock::now() < give_up)
    pool->step(std::chrono::milliseconds(100));
  auto devs = pool->devices();
  EXPECT_TRUE(devs[0].in_rotation);
  EXPECT_FALSE(devs[1].in_rotation);
  EXPECT_NE(devs[1].reason.find("test fault: the GPU of CUDA_VISIBLE_DEVICES=GPU-bbbb is gone"),
            std::string::npos)
      << devs[1].reason;
  EXPECT_EQ(env.refused(), 2);  // max_start_failures starts were tried, then no more
  // What `kforge status` reads.
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  ASSERT_TRUE(verify::store_device_status(**db, devs, 7).ok());
  auto alerts = verify::device_alerts(**db);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].device, "cuda:1");
}

}  // namespace
}  // namespace kforge::test
