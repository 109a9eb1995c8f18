// The pool with real Python processes: ordinary verdicts in both modes, worker restarts,
// back-pressure and devices leaving the rotation.

#include <gtest/gtest.h>

#include <signal.h>
#include <algorithm>
#include <chrono>
#include <thread>

#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;

TEST(VerifyPool, OrdinaryVerdictsWarm) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  verify::VerifyRequest missing = load_sample("pass");
  missing.key = "missing";
  missing.unitest_code.reset();
  auto r = run_all(*pool, {load_sample("pass"), load_sample("assert_fail"), load_sample("raise"),
                           load_sample("syntax_error"), load_sample("no_test"), missing});
  EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail;
  EXPECT_EQ(r[0].detail, "2 tests passed");
  // Its code defines no Triton kernel: passed, but not verified.
  EXPECT_EQ(r[0].flags, std::vector<std::string>{verify::kNoKernelLaunch});
  EXPECT_EQ(r[0].report["no_kernel_launch"], "the code defines no @triton.jit kernel");
  EXPECT_FALSE(r[0].verified());
  EXPECT_NE(r[0].script.find("def run_add(a, b):"), std::string::npos);
  EXPECT_EQ(r[1].verdict, Verdict::failed);
  EXPECT_NE(r[1].detail.find("AssertionError: Contiguous copy failed!"), std::string::npos)
      << r[1].detail;
  EXPECT_NE(r[1].detail.find("unitest_code line 3"), std::string::npos) << r[1].detail;
  EXPECT_EQ(r[2].verdict, Verdict::error);
  EXPECT_NE(r[2].detail.find("ValueError: bad shape: expected 2 dimensions, got 3"),
            std::string::npos)
      << r[2].detail;
  EXPECT_EQ(r[3].verdict, Verdict::invalid);
  EXPECT_NE(r[3].detail.find("syntax error in code line 1"), std::string::npos) << r[3].detail;
  EXPECT_EQ(r[4].verdict, Verdict::invalid);
  EXPECT_NE(r[4].detail.find("no test function"), std::string::npos);
  EXPECT_EQ(r[5].verdict, Verdict::skipped);
  EXPECT_EQ(r[5].detail, "missing field(s): unitest_code");
  // The failing test's report names the test, the exception and the traceback tail.
  const auto& t = r[1].report["tests"][0];
  EXPECT_EQ(t["name"], "test_copy");
  EXPECT_EQ(t["exception"], "AssertionError");
  EXPECT_NE(t["traceback"].get<std::string>().find("assert run_copy(xs) == xs"), std::string::npos);
  // The repair prompt reads the stored report through the typed parse (pipeline/repair.cpp): a
  // field of these renamed on the Python side (report_fields.txt with it or not) fails here.
  auto stored = verify::parse_stored_report(r[1].report);
  ASSERT_TRUE(stored.ok() && *stored) << (stored.ok() ? "no report" : stored.error().message);
  ASSERT_TRUE((*stored)->tests && !(*stored)->tests->empty());
  const auto& ft = (*(*stored)->tests)[0];
  EXPECT_EQ(ft.status, "failed");
  EXPECT_EQ(ft.exception.value_or(""), "AssertionError");
  EXPECT_NE(ft.message.value_or("").find("Contiguous copy failed!"), std::string::npos);
  EXPECT_NE(ft.traceback.value_or("").find("assert run_copy(xs) == xs"), std::string::npos);
  EXPECT_EQ(ft.where_section.value_or(""), "unitest_code");
  EXPECT_EQ(ft.where_line.value_or(0), 3);
  bool test_section = false;
  for (const auto& [name, lines] : (*stored)->sections)
    test_section = test_section || (name == "unitest_code" && lines.size() == 2 && lines[0] > 1);
  EXPECT_TRUE(test_section);
  EXPECT_EQ(r[0].device, "cpu");
  // Every sample's directory is gone; while the pool lives only the workers' logs remain, the
  // device's two lock files (the speed label's exclusive section), and the directories of the
  // children prestarted for the next samples (one per slot at most).
  int waiting = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(tmp.path() / "work" / "runs"))
    if (e.is_regular_file()) {
      if (e.path().filename() == "prep.json") {
        ++waiting;
        continue;
      }
      if (e.path().filename() == "device-0.gate" || e.path().filename() == "device-0.rw" ||
          e.path().filename() == "device-0.queue")
        continue;
      EXPECT_EQ(e.path().extension(), ".log") << e.path();
    }
  EXPECT_LE(waiting, pool->slots());
  pool.reset();
  EXPECT_FALSE(std::filesystem::exists(tmp.path() / "work" / "runs") &&
               !std::filesystem::is_empty(tmp.path() / "work" / "runs"))
      << "the pool left files behind";
}

// A sample that imports torch where the verifier's Python has none ends in error flagged
// 'environment' (the machine, not the sample: the pipeline does not repair it); one importing a
// module of its own invention is the sample's error, unflagged.
TEST(VerifyPool, AMissingTorchIsTheEnvironmentNotTheSample) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  auto probe = run_process({cfg.python, "-c", "import torch"});
  if (probe.exit_code == 0) GTEST_SKIP() << "torch is installed for " << cfg.python;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  verify::VerifyRequest torch_sample = load_sample("pass");
  torch_sample.key = "torch";
  torch_sample.code = "import torch\n" + *torch_sample.code;
  verify::VerifyRequest own = load_sample("pass");
  own.key = "own";
  own.code = "import kforge_no_such_module_of_the_sample\n" + *own.code;
  auto r = run_all(*pool, {torch_sample, own});
  EXPECT_EQ(r[0].verdict, Verdict::error) << r[0].detail;
  EXPECT_EQ(r[0].flags, std::vector<std::string>{verify::kEnvironment});
  EXPECT_NE(r[0].detail.find("No module named 'torch'"), std::string::npos) << r[0].detail;
  EXPECT_NE(r[0].detail.find("the verifier's Python has no module 'torch'"), std::string::npos)
      << r[0].detail;
  EXPECT_EQ(r[1].verdict, Verdict::error) << r[1].detail;
  EXPECT_TRUE(r[1].flags.empty()) << r[1].detail;
}

TEST(VerifyPool, PrestartedChildrenTakeTheSamples) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto first = run_one(*pool, load_sample("pass"));
  ASSERT_EQ(first.verdict, Verdict::passed) << first.detail;
  // Between samples the next child is already forked and sandboxed; it waits for the request.
  step_for(*pool, std::chrono::milliseconds(300));
  auto r = run_all(*pool, {load_sample("pass"), load_sample("assert_fail"), load_sample("pass")});
  for (const auto& x : r) {
    EXPECT_TRUE(x.report["pool"]["prestarted"].get<bool>()) << x.report.dump();
    ASSERT_TRUE(x.report.contains("prestart")) << x.report.dump();
  }
  EXPECT_EQ(r[0].verdict, Verdict::passed);
  EXPECT_EQ(r[1].verdict, Verdict::failed);
  EXPECT_EQ(r[2].verdict, Verdict::passed);
  EXPECT_GE(r[0].report["prestart"]["waited_ms"].get<std::int64_t>(), 200);
  EXPECT_EQ(r[0].report["prestart"]["gpu"], "not asked");  // a cpu device
  EXPECT_EQ(pool->stats().worker_restarts, 0u);
}

TEST(VerifyPool, WithoutPrestartEachSampleIsForkedWhenItArrives) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.prestart = false;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("pass"), load_sample("assert_fail"), load_sample("raise")});
  EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail;
  EXPECT_EQ(r[1].verdict, Verdict::failed);
  EXPECT_EQ(r[2].verdict, Verdict::error);
  for (const auto& x : r) {
    EXPECT_FALSE(x.report["pool"]["prestarted"].get<bool>());
    EXPECT_FALSE(x.report.contains("prestart"));
  }
}

// verifier.cuda_sync reaches every sample's process, prestarted or forked when its sample
// comes, and its report says what was asked (sandbox.cuda_sync); on a CPU device nothing is set.
TEST(VerifyPool, TheCudaSyncSettingReachesEverySampleProcess) {
  for (bool prestart : {true, false}) {
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.cpu_workers = 1;
    cfg.prestart = prestart;
    cfg.cuda_sync = verify::CudaSync::blocking;
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    auto first = run_one(*pool, load_sample("pass"));
    step_for(*pool, std::chrono::milliseconds(300));  // the next child prestarted meanwhile
    auto r = run_all(*pool, {load_sample("pass"), load_sample("assert_fail")});
    r.push_back(first);
    for (const auto& x : r) {
      EXPECT_EQ(x.report["pool"]["prestarted"], prestart) << x.report.dump();
      EXPECT_EQ(x.report["sandbox"]["cuda_sync"],
                nlohmann::json({{"asked", "blocking"},
                                {"applied", false},
                                {"why", "the sample's device is cpu, not a GPU"}}))
          << x.report.dump();
    }
    EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail;
    EXPECT_EQ(r[1].verdict, Verdict::failed) << r[1].detail;
  }
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.prestart = false;  // each sample's process made when it comes: a reload reaches the next
  auto pool = make_pool(cfg);  // the default: auto, nothing touched
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("pass"));
  EXPECT_EQ(r.report["sandbox"]["cuda_sync"]["asked"], "auto") << r.report.dump();
  EXPECT_EQ(r.report["sandbox"]["cuda_sync"]["why"], "auto: left to the driver");
  cfg.cuda_sync = verify::CudaSync::yield;
  pool->reconfigure(cfg);
  r = run_one(*pool, load_sample("pass"));
  EXPECT_EQ(r.report["sandbox"]["cuda_sync"]["asked"], "yield") << r.report.dump();
}

// On a GPU device without a driver (a fake NVIDIA device here, no libcuda.so.1): the setting is
// unavailable, said in the report, and the sample runs as before, in both modes.
TEST(VerifyPool, CudaSyncWithoutADriverIsUnavailableNotAFailure) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  auto probe = run_process({cfg.python, "-c", "import ctypes; ctypes.CDLL('libcuda.so.1')"});
  if (probe.exit_code == 0) GTEST_SKIP() << "libcuda.so.1 loads here: the setting would apply";
  for (const std::string mode : {"warm", "fresh"}) {
    TempDir dir;
    cfg = test_config(dir, mode);
    cfg.workers_per_device = 1;
    cfg.cuda_sync = verify::CudaSync::blocking;
    // No GPU probe: where torch is installed (and preloaded) the probe would find this fake GPU
    // has no CUDA and take it out of the rotation, as it should a real one.
    cfg.probe_gpu = false;
    // A fresh interpreter imports the harness (and torch, where installed: 1.5 s) for every
    // sample: more than the 2 s of the warm tests on a loaded 2-core machine.
    cfg.timeout_s = 8;
    verify::Device gpu{"cuda:0", verify::Vendor::nvidia, 0, "Fake GPU", "", 0};
    auto pool = make_pool(cfg, {gpu});
    ASSERT_TRUE(pool);
    auto first = run_one(*pool, load_sample("pass"));
    step_for(*pool, std::chrono::milliseconds(300));
    auto r = run_all(*pool, {load_sample("pass"), load_sample("assert_fail")});
    r.push_back(first);
    for (const auto& x : r) {
      const auto& cs = x.report["sandbox"]["cuda_sync"];
      EXPECT_EQ(cs["asked"], "blocking") << mode << ": " << x.report.dump();
      EXPECT_EQ(cs["applied"], false) << x.report.dump();
      EXPECT_EQ(cs.value("why", "").rfind("unavailable: libcuda.so.1", 0), 0u) << cs.dump();
      EXPECT_EQ(x.device, "cuda:0");
    }
    EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail;
    EXPECT_EQ(r[1].verdict, Verdict::failed) << r[1].detail;
    EXPECT_EQ(r[0].report["pool"]["prestarted"], mode == "warm") << r[0].report.dump();
  }
}

TEST(VerifyPool, ParametrizedTestsAndHelpersTakingArguments) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("parametrized"));
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_EQ(r.detail, "6 tests passed");
  const auto& tests = r.report["tests"];
  ASSERT_EQ(tests.size(), 7u) << tests.dump();
  EXPECT_EQ(tests[5]["name"], "test_scale[5]");
  EXPECT_EQ(tests[6]["name"], "test_helper_needs_args");
  EXPECT_EQ(tests[6]["status"], "skipped");
}

TEST(VerifyPool, CrashesAndDeadlinesWarm) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r =
      run_all(*pool, {load_sample("loop_forever"), load_sample("abort"), load_sample("segfault")});
  EXPECT_EQ(r[0].verdict, Verdict::timeout) << r[0].detail;
  EXPECT_NE(r[0].detail.find("2 s deadline"), std::string::npos) << r[0].detail;
  EXPECT_GE(r[0].duration_ms, 1900);
  EXPECT_LT(r[0].duration_ms, 15000);
  EXPECT_EQ(r[1].verdict, Verdict::crashed);
  EXPECT_EQ(r[1].detail.rfind("SIGABRT (signal 6)", 0), 0u) << r[1].detail;
  EXPECT_EQ(r[2].verdict, Verdict::crashed);
  EXPECT_EQ(r[2].detail.rfind("SIGSEGV (signal 11)", 0), 0u) << r[2].detail;
  EXPECT_NE(r[2].stderr_tail.find("Segmentation fault"), std::string::npos) << r[2].stderr_tail;
  // The workers themselves were untouched: no restart was needed.
  EXPECT_EQ(pool->stats().worker_restarts, 0u);
  auto again = run_one(*pool, load_sample("pass"));
  EXPECT_EQ(again.verdict, Verdict::passed);
}

TEST(VerifyPool, FreshInterpreterMode) {
  TempDir tmp;
  // A fresh interpreter imports the harness, arms the integrity guard and the sample's runner
  // thread for every sample: more than the 2 s of the warm tests on a loaded 2-core machine.
  auto cfg = test_config(tmp, "fresh");
  cfg.timeout_s = 8;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("pass"), load_sample("assert_fail"), load_sample("segfault"),
                           load_sample("loop_forever"), load_sample("syntax_error")});
  EXPECT_EQ(r[0].verdict, Verdict::passed) << r[0].detail << r[0].stderr_tail;
  EXPECT_EQ(r[0].report["pool"]["mode"], "fresh");
  EXPECT_EQ(r[1].verdict, Verdict::failed);
  EXPECT_EQ(r[2].verdict, Verdict::crashed);
  EXPECT_EQ(r[2].detail.rfind("SIGSEGV", 0), 0u) << r[2].detail;
  EXPECT_EQ(r[3].verdict, Verdict::timeout);
  EXPECT_EQ(r[4].verdict, Verdict::invalid);
}

TEST(VerifyPool, RestartsAWorkerThatDies) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  ASSERT_EQ(run_one(*pool, load_sample("pass")).verdict, Verdict::passed);
  int pid = pool->TEST_worker_pids().at(0);
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(default_env().kill(pid, SIGKILL));
  auto r = run_one(*pool, load_sample("pass"));
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_GE(pool->stats().worker_restarts, 1u);
  EXPECT_NE(pool->TEST_worker_pids().at(0), pid);
}

TEST(VerifyPool, BoundedQueueSaysFull) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.queue_capacity = 2;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  int done = 0;
  auto cb = [&](verify::VerifyResult&&) { ++done; };
  ASSERT_TRUE(pool->submit(load_sample("pass"), cb).ok());
  ASSERT_TRUE(pool->submit(load_sample("pass"), cb).ok());
  EXPECT_FALSE(pool->accepting());
  auto third = pool->submit(load_sample("pass"), cb);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.error().kind, "full");
  EXPECT_TRUE(third.error().is_transient());
  pool->drain();
  EXPECT_EQ(done, 2);
  EXPECT_TRUE(pool->accepting());
}

TEST(VerifyPool, DeviceWhoseWorkersKeepFailingLeavesTheRotation) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  // A fake GPU stack whose CUDA is never available: every worker's GPU probe fails.
  cfg.python_path = {(source_dir() / "tests" / "verify" / "fake_gpu_broken").string()};
  cfg.preload = {"torch"};
  cfg.workers_per_device = 1;
  cfg.max_start_failures = 2;
  verify::Device gpu{"cuda:0", verify::Vendor::nvidia, 0, "Fake GPU", "", 0};
  auto pool = make_pool(cfg, {gpu});
  ASSERT_TRUE(pool);
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (pool->devices().at(0).in_rotation && std::chrono::steady_clock::now() < give_up)
    pool->step(std::chrono::milliseconds(100));
  auto d = pool->devices().at(0);
  EXPECT_FALSE(d.in_rotation);
  EXPECT_EQ(d.start_failures, 2);
  EXPECT_NE(d.reason.find("GPU probe failed"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("is_available() is False"), std::string::npos) << d.reason;
  auto r = run_one(*pool, load_sample("pass"));
  EXPECT_EQ(r.verdict, Verdict::error);
  EXPECT_EQ(r.flags, std::vector<std::string>{verify::kInfrastructure});
}

// One GPU probe per device (issue 54): the first worker of each device makes the probe context,
// the others none, and every worker takes samples once its device's probe said ok. The count is
// the workers' own: a ready event whose probe was made (not "not asked").
TEST(VerifyPool, OneGpuProbePerDevice) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  // A fake GPU stack whose CUDA works (on every device but the one numbered 1).
  cfg.python_path = {(source_dir() / "tests" / "verify" / "fake_gpu_second_broken").string()};
  cfg.preload = {"torch"};
  cfg.workers_per_device = 3;
  verify::Device gpu0{"cuda:0", verify::Vendor::nvidia, 0, "Fake GPU", "", 0};
  verify::Device gpu2{"cuda:2", verify::Vendor::nvidia, 2, "Fake GPU", "", 0};
  auto pool = make_pool(cfg, {gpu0, gpu2});
  ASSERT_TRUE(pool);
  std::vector<verify::VerifyRequest> batch(8, load_sample("pass"));
  auto r = run_all(*pool, batch);
  for (const auto& x : r) EXPECT_EQ(x.verdict, Verdict::passed) << x.detail;
  // Every slot ready and usable: the ones that made no probe of their own too.
  step_for(*pool, std::chrono::milliseconds(300));
  for (const auto& d : pool->devices()) {
    EXPECT_TRUE(d.in_rotation) << d.device;
    EXPECT_EQ(d.ready_workers, 3) << d.device;
  }
  EXPECT_EQ(pool->stats().worker_starts, 6u);
  EXPECT_EQ(pool->stats().gpu_probes, 2u);
  // As before when asked to probe nothing: no probe at all.
  TempDir tmp2;
  auto off = test_config(tmp2);
  off.python_path = cfg.python_path;
  off.preload = cfg.preload;
  off.workers_per_device = 2;
  off.probe_gpu = false;
  auto unprobed = make_pool(off, {gpu0});
  ASSERT_TRUE(unprobed);
  EXPECT_EQ(run_one(*unprobed, load_sample("pass")).verdict, Verdict::passed);
  EXPECT_EQ(unprobed->stats().gpu_probes, 0u);
}

// The device's one probe fails late (a fake GPU whose contexts come up but whose first
// computation faults after 4 s, tests/verify/fake_gpu_probe_fails): the device's other workers,
// ready long before, take no sample meanwhile, and the failure counts for every one of them, as
// when each made its own probe: with max_start_failures = the workers, the device leaves the
// rotation at once and every sample ends as the verifier's error. The same GPU without the
// probe runs the samples (they do not use torch): only the probe keeps them off it.
TEST(VerifyPool, AFailedProbeKeepsEveryWorkerOfItsDeviceFromSamples) {
  const auto fake = (source_dir() / "tests" / "verify" / "fake_gpu_probe_fails").string();
  verify::Device gpu{"cuda:0", verify::Vendor::nvidia, 0, "Fake GPU", "", 0};
  {
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.python_path = {fake};
    cfg.preload = {"torch"};
    cfg.workers_per_device = 3;
    cfg.probe_gpu = false;
    auto pool = make_pool(cfg, {gpu});
    ASSERT_TRUE(pool);
    auto r = run_all(*pool, {load_sample("pass"), load_sample("pass")});
    for (const auto& x : r) EXPECT_EQ(x.verdict, Verdict::passed) << x.detail;
  }
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.python_path = {fake};
  cfg.preload = {"torch"};
  cfg.workers_per_device = 3;
  cfg.max_start_failures = 3;
  auto pool = make_pool(cfg, {gpu});
  ASSERT_TRUE(pool);
  std::vector<verify::VerifyResult> got;
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(pool->submit(load_sample("pass"),
                             [&](verify::VerifyResult&& x) { got.push_back(std::move(x)); })
                    .ok());
  // Two workers ready (their pids known) while the device has none usable: held for the probe.
  bool held = false;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (pool->devices().at(0).in_rotation && std::chrono::steady_clock::now() < give_up) {
    pool->step(std::chrono::milliseconds(50));
    auto pids = pool->TEST_worker_pids();
    int ready =
        static_cast<int>(std::count_if(pids.begin(), pids.end(), [](int p) { return p > 0; }));
    if (ready >= 2 && pool->devices().at(0).ready_workers == 0) held = true;
    EXPECT_EQ(pool->in_flight(), 0u) << "a sample was dispatched before the device's probe";
  }
  EXPECT_TRUE(held) << "the workers without a probe were never ready before the probe failed";
  pool->drain();
  auto d = pool->devices().at(0);
  EXPECT_FALSE(d.in_rotation);
  EXPECT_EQ(d.start_failures, 3);
  EXPECT_NE(d.reason.find("GPU probe failed"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("illegal memory access"), std::string::npos) << d.reason;
  EXPECT_EQ(pool->stats().gpu_probes, 1u);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& x : got) {
    EXPECT_EQ(x.verdict, Verdict::error) << x.detail;
    EXPECT_EQ(x.flags, std::vector<std::string>{verify::kInfrastructure});
  }
}

// An idle pool waits the whole max_wait unless woken: wake() from another thread (the daemon's
// change watch) ends the wait at once, and a wake that comes first is not lost.
TEST(VerifyPool, AWakeFromAnotherThreadEndsAnIdleWait) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  ASSERT_EQ(run_one(*pool, load_sample("pass")).verdict, Verdict::passed);
  // Let the worker and its spare settle, so nothing of the pool's own wakes the wait.
  step_for(*pool, std::chrono::milliseconds(500), std::chrono::milliseconds(50));
  auto t0 = std::chrono::steady_clock::now();
  pool->step(std::chrono::milliseconds(300));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(250)) << "unwoken";

  std::thread waker([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pool->wake();
  });
  t0 = std::chrono::steady_clock::now();
  pool->step(std::chrono::seconds(20));
  auto waited = std::chrono::steady_clock::now() - t0;
  waker.join();
  EXPECT_LT(waited, std::chrono::seconds(5)) << "the wake ended the wait";

  pool->wake();  // before the step: the step does not wait
  t0 = std::chrono::steady_clock::now();
  pool->step(std::chrono::seconds(20));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// Cancelling what the pool holds: a waiting sample leaves the queue and never runs; a running
// one loses its process group long before its deadline, and its slot (the same warm worker)
// takes the next sample. Each callback runs once, with `cancelled` and no verdict to keep.
TEST(VerifyPool, CancelDropsWaitingSamplesAndStopsARunningOne) {
  for (const std::string mode : {"warm", "fresh"}) {
    SCOPED_TRACE(mode);
    TempDir tmp;
    auto cfg = test_config(tmp, mode);
    cfg.cpu_workers = 1;
    cfg.timeout_s = 120;  // only the cancel ends the endless sample in time
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    std::vector<verify::VerifyResult> got(3);
    std::vector<int> calls(3, 0);
    std::vector<std::uint64_t> ids;
    for (int i = 0; i < 3; ++i) {
      auto id = pool->submit(load_sample(i == 0 ? "loop_forever" : "pass"),
                             [&, i](verify::VerifyResult&& r) {
                               ++calls[i];
                               got[i] = std::move(r);
                             });
      ASSERT_TRUE(id.ok());
      ids.push_back(*id);
    }
    // The endless one runs; the others wait behind it on the one slot.
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (pool->in_flight() == 0 && std::chrono::steady_clock::now() < until)
      pool->step(std::chrono::milliseconds(50));
    step_for(*pool, std::chrono::milliseconds(1500));  // well into its loop
    ASSERT_EQ(pool->in_flight(), 1u);
    ASSERT_EQ(pool->queued(), 2u);
    const int worker = pool->TEST_worker_pids().at(0);

    EXPECT_TRUE(pool->cancel(ids[1], "the client went away"));
    EXPECT_FALSE(pool->cancel(ids[1], "again"));  // no longer held
    EXPECT_EQ(pool->queued(), 1u);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(pool->cancel(ids[0], "the deadline passed"));
    EXPECT_FALSE(pool->cancel(ids[0], "again"));  // already being stopped
    pool->drain();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));

    EXPECT_EQ(calls, (std::vector<int>{1, 1, 1}));
    EXPECT_TRUE(got[0].cancelled);
    EXPECT_EQ(got[0].detail, "the deadline passed");
    EXPECT_FALSE(got[0].harness.has_value());
    EXPECT_TRUE(got[1].cancelled);
    EXPECT_EQ(got[1].detail, "the client went away");
    EXPECT_FALSE(got[2].cancelled);
    EXPECT_EQ(got[2].verdict, Verdict::passed) << got[2].detail << got[2].stderr_tail;
    auto st = pool->stats();
    EXPECT_EQ(st.cancelled_waiting, 1u);
    EXPECT_EQ(st.cancelled_running, 1u);
    EXPECT_EQ(st.completed, 1u);  // only the third ran to a verdict
    EXPECT_EQ(st.worker_restarts, 0u);
    if (mode == "warm") {
      EXPECT_EQ(pool->TEST_worker_pids().at(0), worker);  // the same worker
    }
    EXPECT_FALSE(pool->cancel(ids[2], "after its end"));
  }
}

}  // namespace
}  // namespace kforge::test
