// The real Env (default_env()) on real processes, and ClockedEnv over a ManualClock.

#include "kforge/core/env.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "testutil.hpp"

namespace kforge {
namespace {

TEST(Env, AliveAnswersForALivingProcessAndNotForAReapedOne) {
  Env& env = default_env();
  SpawnOptions o;
  o.argv = {"sleep", "30"};
  auto pid = env.spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  EXPECT_TRUE(env.alive(*pid));
  EXPECT_TRUE(env.alive(::getpid()));
  ASSERT_TRUE(env.kill(*pid, SIGKILL));
  auto end = env.wait(*pid, WaitMode::block);
  ASSERT_TRUE(end);
  EXPECT_TRUE(WIFSIGNALED(end->status));
  EXPECT_FALSE(env.alive(*pid)) << "reaped";
  EXPECT_FALSE(env.alive(0));
  EXPECT_FALSE(env.alive(-1));
}

TEST(Env, SpawnRunsTheChildInTheDirectoryItIsGiven) {
  test::TempDir dir;
  std::filesystem::create_directory(dir / "work");
  const auto out = dir / "pwd.txt";
  auto run_pwd = [&](const std::string& cwd) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    SpawnOptions o;
    o.argv = {"pwd"};
    o.cwd = cwd;
    o.fds = {{fd, 1}};
    auto pid = default_env().spawn(o);
    ::close(fd);
    EXPECT_TRUE(pid.ok());
    auto end = default_env().wait(*pid, WaitMode::block);
    return WEXITSTATUS(end->status);
  };
  EXPECT_EQ(run_pwd((dir / "work").string()), 0);
  EXPECT_EQ(test::read_text(out), std::filesystem::canonical(dir / "work").string() + "\n");
  EXPECT_EQ(run_pwd((dir / "missing").string()), 126) << "a directory it cannot enter";
}

TEST(ClockedEnv, ReadsTimeFromItsClockAndRunsProcessesThroughItsTarget) {
  ManualClock clock;
  ClockedEnv env(clock);
  EXPECT_EQ(&env.clock(), &clock);
  auto before = env.clock().steady_now();
  env.clock().sleep_for(std::chrono::seconds(5));
  EXPECT_EQ(env.clock().steady_now() - before, std::chrono::seconds(5));
  auto r = env.run({"echo", "hi"}, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->out, "hi\n");
  EXPECT_EQ(r->exit_code, 0);
}

}  // namespace
}  // namespace kforge
