// Hostile samples against the sandbox's PID namespace, private /proc, hidden daemon files and
// named uid, in the mode this process runs in (root: per-slot uids; not root: a user namespace).
// As root (CI), VerifyHostile.AsUnprivilegedUser runs this suite and VerifySandbox again as an
// unprivileged user made for the purpose, so both modes run on every CI machine.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "../../libs/verify/src/sandbox.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::Verdict;
using namespace std::string_literals;

constexpr const char* kFakeKey = "sk-kforge-test-key-must-not-leak-4242";

// Where the host forbids the namespaces a non-root pool needs, the pool must refuse to start
// (no sample runs unconfined); the test then says so and stops.
#define SKIP_UNLESS_NAMESPACES(cfg)                                                            \
  do {                                                                                         \
    std::string why = verify::probe_namespaces(default_env(), ::geteuid() != 0);               \
    if (!why.empty() && ::geteuid() == 0)                                                      \
      GTEST_SKIP() << "this host refuses PID namespaces even to root (" << why                 \
                   << "); samples are confined by their own uids only";                        \
    if (!why.empty()) {                                                                        \
      verify::PoolOptions o;                                                                   \
      o.config = cfg;                                                                          \
      auto p = verify::Pool::create(o);                                                        \
      ASSERT_FALSE(p.ok()) << "the pool started without the namespaces it needs";              \
      EXPECT_NE(p.error().message.find("namespaces"), std::string::npos) << p.error().message; \
      GTEST_SKIP() << "this host refuses the sandbox's namespaces (" << why                    \
                   << "); the pool refused to start, as it must: " << p.error().message;       \
    }                                                                                          \
  } while (0)

std::string file_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(VerifyHostile, SamplesReachNothingOutsideTheirNamespace) {
  ::setenv("KFORGE_LLM_API_KEY", kFakeKey, 1);
  TempDir tmp;
  TempDir state;  // stands for the daemon's state directory
  auto db = state.path() / "kforge.db";
  std::string original = "SQLite format 3\0 kforge test database"s;
  write_text(db, original);
  write_text(state.path() / "kforge.db-wal", "wal");
  // Held open here, as the daemon holds its database: /proc/<pid>/fd/N points at it.
  int held = ::open(db.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(held, 0);
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  cfg.timeout_s = 10;
  cfg.hide = {state.path().string()};
  SKIP_UNLESS_NAMESPACES(cfg);
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  EXPECT_TRUE(pool->sandbox().pid_namespace);
  EXPECT_EQ(pool->sandbox().userns, ::geteuid() != 0);
  ASSERT_EQ(run_one(*pool, load_sample("pass")).verdict, Verdict::passed);
  int worker = pool->TEST_worker_pids().at(0);
  ASSERT_GT(worker, 0);
  std::vector<std::string> names = {"kill_all",      "kill_kforge",  "kill_siblings",
                                    "open_database", "read_environ", "ptrace_parent",
                                    "named_uid"};
  std::vector<verify::VerifyRequest> reqs;
  for (const auto& n : names)
    reqs.push_back(load_sample(n, {{"DB", db.string()}, {"KEY", kFakeKey}}));
  reqs.push_back(load_sample("pass"));
  auto r = run_all(*pool, reqs);
  ::unsetenv("KFORGE_LLM_API_KEY");
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(r[i].verdict, Verdict::passed) << names[i] << ": " << r[i].detail << "\n"
                                             << r[i].stdout_text << r[i].stderr_tail;
    EXPECT_EQ(r[i].report["sandbox"].value("proc", ""), "private") << names[i];
    EXPECT_EQ(r[i].report["sandbox"].value("pid", 0), 2) << names[i];
    EXPECT_EQ(r[i].report["sandbox"].value("init", ""), "spawn") << names[i];
    EXPECT_EQ(r[i].stdout_text.find(kFakeKey), std::string::npos) << names[i];
    EXPECT_EQ(r[i].stderr_tail.find(kFakeKey), std::string::npos) << names[i];
  }
  EXPECT_EQ(r.back().verdict, Verdict::passed) << r.back().detail;
  // The only kforge process a sample saw was its namespace's init.
  EXPECT_NE(r[1].stdout_text.find("kforge processes seen: ['1 "), std::string::npos)
      << r[1].stdout_text;
  EXPECT_EQ(r[1].stdout_text.find("kforge_verify_tests"), std::string::npos) << r[1].stdout_text;
  // The worker, this process and the database are untouched.
  EXPECT_EQ(pool->TEST_worker_pids().at(0), worker);
  EXPECT_EQ(pool->stats().worker_restarts, 0u);
  EXPECT_EQ(file_bytes(db), original);
  EXPECT_EQ(file_bytes(state.path() / "kforge.db-wal"), "wal");
  ::close(held);
}

// SQLite removes its -wal and -shm when the last connection closes and makes them again on the
// next open (the daemon, the CLI, a monitoring script): a hidden path that comes and goes while
// samples set up their sandboxes must fail none of them (it once failed one in a Slurm task with
// "sandbox setup failed: mount ...kforge.db-wal: No such file or directory", as infrastructure).
TEST(VerifyHostile, AHiddenFileThatComesAndGoesFailsNoSetUp) {
  TempDir tmp;
  TempDir state;
  const auto wal = state.path() / "kforge.db-wal";
  write_text(wal, "wal");
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 2;
  cfg.timeout_s = 20;
  cfg.hide = {wal.string()};
  SKIP_UNLESS_NAMESPACES(cfg);
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  std::atomic<bool> stop{false};
  std::atomic<long> cycles{0};
  std::thread flicker([&] {
    while (!stop) {
      ::unlink(wal.c_str());
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      int fd = ::open(wal.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      if (fd >= 0) ::close(fd);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      ++cycles;
    }
  });
  std::vector<verify::VerifyRequest> reqs;
  for (int i = 0; i < 30; ++i) reqs.push_back(load_sample("pass"));
  auto r = run_all(*pool, reqs);
  stop = true;
  flicker.join();
  for (std::size_t i = 0; i < r.size(); ++i)
    EXPECT_EQ(r[i].verdict, Verdict::passed) << i << ": " << r[i].detail;
  EXPECT_GT(cycles.load(), 100) << "the file did not come and go while the samples ran";
}

// With either init: kforge-sandbox-init (the default) or a fork of the worker.
TEST(VerifyHostile, TheSamplesProcessesEndWithIt) {
  for (std::string init : {"", "fork"}) {
    SCOPED_TRACE("verifier.sandbox_init: '" + init + "'");
    TempDir tmp;
    auto cfg = test_config(tmp);
    cfg.cpu_workers = 1;
    cfg.timeout_s = 10;
    cfg.sandbox_init = init;
    SKIP_UNLESS_NAMESPACES(cfg);
    auto pool = make_pool(cfg);
    ASSERT_TRUE(pool);
    // A daemonised grandchild (new session, parent gone) that would sleep for a minute.
    verify::VerifyRequest req = load_sample("pass");
    std::string marker = "kforge-orphan-" + std::to_string(::getpid());
    req.unitest_code = *req.unitest_code +
                       "\nimport subprocess\n"
                       "def test_leave_an_orphan():\n"
                       "    subprocess.Popen(['/bin/sh', '-c', 'sleep 60; : " +
                       marker + "'], start_new_session=True)\n";
    auto r = run_one(*pool, req);
    EXPECT_EQ(r.verdict, Verdict::passed) << r.detail << r.stderr_tail;
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    bool alive = true;
    while (alive && std::chrono::steady_clock::now() < give_up) {
      alive = false;
      for (const auto& p : verify::sys::scan_procs()) {
        if (p.zombie) continue;
        std::string cmd = read_text("/proc/" + std::to_string(p.pid) + "/cmdline");
        if (cmd.find(marker) != std::string::npos) alive = true;
      }
      if (alive) ::usleep(50000);
    }
    EXPECT_FALSE(alive) << "a process the sample started outlived it";
    EXPECT_EQ(r.report["sandbox"].value("init", ""), init.empty() ? "spawn" : "fork");
  }
}

TEST(VerifyHostile, AsUnprivilegedUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "not root: this run already is the unprivileged one";
  if (std::getenv("KFORGE_TEST_NO_USERADD"))
    GTEST_SKIP() << "KFORGE_TEST_NO_USERADD is set: no test user may be created here";
  const char* user = "kforge-sandbox-test";
  if (::getpwnam(user) == nullptr) {
    auto add = run_process({"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                            "/usr/sbin/nologin", user});
    ASSERT_EQ(add.exit_code, 0) << "useradd: " << add.err;
  }
  passwd* pw = ::getpwnam(user);
  ASSERT_NE(pw, nullptr);
  auto self = std::filesystem::read_symlink("/proc/self/exe");
  // The binary and the source tree (samples, harness) must be reachable by that user.
  for (auto p = self.parent_path(); p != p.root_path(); p = p.parent_path())
    if (::access(p.c_str(), X_OK) != 0) GTEST_SKIP() << p << " is closed to other users";
  auto r = run_process({"/usr/bin/setpriv", "--reuid=" + std::to_string(pw->pw_uid),
                        "--regid=" + std::to_string(pw->pw_gid), "--clear-groups", self.string(),
                        "--gtest_filter=VerifyHostile.*:VerifySandbox.*:-VerifyHostile."
                        "AsUnprivilegedUser",
                        "--gtest_brief=1"},
                       {"HOME=/tmp", "KFORGE_TEST_NO_USERADD=1"}, 300);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("PASSED"), std::string::npos) << r.out << r.err;
  // Say what ran and what was skipped, in the parent's log; an inner test that skipped (a cgroup
  // the machine does not delegate) is named without gtest's skip marker, which would make ctest
  // report this whole test as skipped.
  std::string out = r.out;
  for (std::size_t at; (at = out.find("[  SKIPPED ]")) != std::string::npos;)
    out.replace(at, 12, "[ inner skip ]");
  std::cout << "[ as " << user << " ]\n" << out;
}

}  // namespace
}  // namespace kforge::test
