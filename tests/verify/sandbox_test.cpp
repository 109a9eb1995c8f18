// Hostile samples, each hard-capped (see test_config): the right verdict, and nothing outside
// the sample harmed. Runs on the CI machine as root, where samples get their own uids.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;

bool own_uids(const verify::Pool& pool) {
  return pool.sandbox().own_uids;
}

TEST(VerifySandbox, ForkBombIsBoundedAndCleanedUp) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  cfg.timeout_s = 3;
  // Resident memory is summed over the sample's processes (shared pages counted in each, torch's
  // too where installed), so the cap is raised here: this test is about the process limit.
  cfg.memory_cap_mb = 1024 + (cfg.max_processes + 1) * preamble_rss_mb();
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  if (!own_uids(*pool))
    GTEST_SKIP() << "needs root (samples on their own uid) to bound a fork bomb safely here";
  int uid = pool->TEST_slot_uids().at(0);
  ASSERT_GT(uid, 0);
  bool done = false;
  verify::VerifyResult res;
  ASSERT_TRUE(pool->submit(load_sample("fork_bomb"),
                           [&](verify::VerifyResult&& r) {
                             res = std::move(r);
                             done = true;
                           })
                  .ok());
  int peak = 0;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!done && std::chrono::steady_clock::now() < give_up) {
    pool->step(std::chrono::milliseconds(20));
    peak = std::max(peak, count_uid_processes(uid));
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(res.verdict, Verdict::timeout) << res.detail;
  EXPECT_GT(peak, 4) << "the bomb never forked";
  EXPECT_LE(peak, cfg.max_processes + 1);
  EXPECT_EQ(count_uid_processes(uid), 0) << "processes of the sample outlived it";
}

TEST(VerifySandbox, MemoryHogIsKilledAtTheCap) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.timeout_s = 10;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("memory_hog"));
  EXPECT_EQ(r.verdict, Verdict::crashed) << r.detail;
  const std::string cap = std::to_string(cfg.memory_cap_mb) + " MiB";  // 200 without torch
  EXPECT_NE(r.detail.find(cap), std::string::npos) << r.detail;
  EXPECT_LT(r.report["pool"]["peak_rss_kb"].get<std::int64_t>(), 1024 * 1024);
  if (pool->sandbox().memory == "rss-watch") {
    EXPECT_NE(r.detail.find(cap + " cap (RSS watch"), std::string::npos) << r.detail;
  }
}

TEST(VerifySandbox, CgroupMemoryLimitWhereAvailable) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.timeout_s = 10;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  if (pool->sandbox().memory != "cgroup")
    GTEST_SKIP() << "no delegable cgroup v2 memory controller here: "
                 << pool->sandbox().cgroup_note;
  auto r = run_all(*pool, {load_sample("memory_hog"), load_sample("fork_bomb")});
  EXPECT_EQ(r[0].verdict, Verdict::crashed) << r[0].detail;
  EXPECT_EQ(r[0].detail, "killed by the cgroup memory limit (" + std::to_string(cfg.memory_cap_mb) +
                             " MiB)");  // 200 without torch
  EXPECT_EQ(r[1].verdict, Verdict::timeout) << r[1].detail;
  EXPECT_EQ(r[0].report["pool"]["memory_watch"], "cgroup");
}

TEST(VerifySandbox, FillingTheDiskStopsAtTheFileSizeCap) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("fill_disk"));
  EXPECT_EQ(r.verdict, Verdict::error) << r.detail;
  EXPECT_NE(r.detail.find("File too large"), std::string::npos) << r.detail;
  // The sample's directory is gone.
  auto runs = tmp.path() / "work" / "runs";
  for (const auto& e : std::filesystem::recursive_directory_iterator(runs))
    EXPECT_NE(e.path().filename(), "big.bin");
}

TEST(VerifySandbox, FloodedOutputIsCappedAndTheSamplePasses) {
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("flood_stdout"));
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_GE(r.report["pool"]["stdout_bytes"].get<std::int64_t>(), 24 * 1024 * 1024);
  EXPECT_TRUE(r.report["pool"]["output_truncated"].get<bool>());
  EXPECT_LE(r.stdout_text.size(), 2u * 64 * 1024 + 100);
  EXPECT_NE(r.stdout_text.find("bytes not kept"), std::string::npos);
}

TEST(VerifySandbox, CannotKillItsParent) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  ASSERT_EQ(run_one(*pool, load_sample("pass")).verdict, Verdict::passed);
  int worker = pool->TEST_worker_pids().at(0);
  auto r = run_one(*pool, load_sample("kill_parent"));
  if (own_uids(*pool)) {
    // Its own uid may not signal the root-owned init of its namespace.
    EXPECT_EQ(r.verdict, Verdict::error) << r.detail;
    EXPECT_NE(r.detail.find("PermissionError"), std::string::npos) << r.detail;
  } else {
    // Same uid: the kernel accepts the signal and drops it (the namespace's init has no handler).
    EXPECT_EQ(r.verdict, Verdict::passed) << r.detail;
  }
  EXPECT_EQ(pool->TEST_worker_pids().at(0), worker);
  EXPECT_EQ(pool->stats().worker_restarts, 0u);
  EXPECT_EQ(run_one(*pool, load_sample("pass")).verdict, Verdict::passed);
}

TEST(VerifySandbox, CannotKillTheChildPrestartedForTheNextSample) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  ASSERT_EQ(run_one(*pool, load_sample("pass")).verdict, Verdict::passed);
  // While it runs, the child for the next sample waits beside it, in a PID namespace of its own
  // (and as root on the slot's other uid).
  auto r = run_one(*pool, load_sample("kill_siblings"));
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_TRUE(r.report["pool"]["prestarted"].get<bool>()) << r.report.dump();
  auto next = run_one(*pool, load_sample("pass"));
  EXPECT_EQ(next.verdict, Verdict::passed) << next.detail;
  EXPECT_TRUE(next.report["pool"]["prestarted"].get<bool>());
  if (own_uids(*pool)) {
    EXPECT_NE(next.report["pool"]["uid"], r.report["pool"]["uid"]);
  }
  EXPECT_EQ(pool->stats().worker_restarts, 0u);
}

TEST(VerifySandbox, CannotReachTheNetwork) {
  int srv = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(srv, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(srv, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(srv, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("network", {{"PORT", std::to_string(port)}}));
  std::string net = r.report["sandbox"].value("network", "");
  if (net != "isolated") {
    // Where the kernel refuses a network namespace the result must say so.
    EXPECT_EQ(net.rfind("not isolated", 0), 0u) << net;
    ::close(srv);
    GTEST_SKIP() << "no network namespace on this machine: " << net;
  }
  EXPECT_EQ(r.verdict, Verdict::error) << r.detail;
  EXPECT_NE(r.detail.find("OSError"), std::string::npos) << r.detail;
  int c = ::accept(srv, nullptr, nullptr);
  EXPECT_LT(c, 0) << "the sample reached a server on the host";
  if (c >= 0) ::close(c);
  ::close(srv);
}

TEST(VerifySandbox, CannotWriteOutsideItsDirectory) {
  TempDir tmp;
  TempDir outside;
  std::string nonce = std::to_string(::getpid()) + "-" + std::to_string(std::rand());
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  auto r = run_one(*pool, load_sample("write_outside",
                                      {{"OUTSIDE", outside.path().string()}, {"NONCE", nonce}}));
  EXPECT_EQ(r.verdict, Verdict::error) << r.detail;
  EXPECT_NE(r.detail.find("PermissionError"), std::string::npos) << r.detail;
  EXPECT_FALSE(std::filesystem::exists(outside.path() / "escaped.txt"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/kforge-escape-" + nonce + ".txt"));
  EXPECT_NE(r.report["sandbox"].value("filesystem", "").find("read-only"), std::string::npos)
      << r.report["sandbox"].dump();
}

TEST(VerifySandbox, SamplesSeeACleanedEnvironment) {
  ::setenv("KFORGE_LLM_API_KEY", "sk-secret-must-not-leak", 1);
  TempDir tmp;
  auto pool = make_pool(test_config(tmp));
  ASSERT_TRUE(pool);
  verify::VerifyRequest req = load_sample("pass");
  req.unitest_code = *req.unitest_code + "\nimport os\nprint(sorted(os.environ.items()))\n";
  auto r = run_one(*pool, req);
  ::unsetenv("KFORGE_LLM_API_KEY");
  EXPECT_EQ(r.verdict, Verdict::passed) << r.detail;
  EXPECT_EQ(r.stdout_text.find("sk-secret"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("'CUDA_VISIBLE_DEVICES', ''"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("TRITON_CACHE_DIR"), std::string::npos);
}

}  // namespace
}  // namespace kforge::test
