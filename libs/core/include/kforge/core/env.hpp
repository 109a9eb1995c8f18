#pragma once
// Env: the one door to the operating system's processes and to time (after leveldb's Env).
//
// Everything in libs/ and apps/ that starts, waits for, kills or looks for a process, reads the
// clock or sleeps goes through an Env (the LLM client and the fake LLM server, a test tool, keep
// their own for now). Production code takes one Env& (or Env*, null meaning default_env()), gets
// its time from env.clock(), and never calls fork, exec, waitpid, kill or now() itself. Tests
// derive from EnvWrapper, which forwards every call to a target, and override just the one
// method they need: a spawn that fails for one device, a clock that moves only when told
// (ClockedEnv over a ManualClock), a child that never answers.
//
// Threads: default_env() is thread-safe. A wrapper is as thread-safe as what it overrides.
// Ownership: an Env outlives everything it was given to; nothing here takes ownership.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/clock.hpp"
#include "kforge/core/result.hpp"

namespace kforge {

// One process to start with exec (no shell).
struct SpawnOptions {
  // argv[0]: a path, or a name looked up on PATH (the PATH of `env` when given, else this
  // process's, else /usr/local/bin:/usr/bin:/bin).
  std::vector<std::string> argv;
  // The child's whole environment ("K=V"); nullopt: this process's.
  std::optional<std::vector<std::string>> env;
  // (fd in this process, fd number in the child). Of 0, 1 and 2, those not mapped are
  // /dev/null; every other descriptor is closed in the child.
  std::vector<std::pair<int, int>> fds;
  // The child gets a session (and process group) of its own, so its group can be killed.
  bool new_session = true;
  // The child's working directory; empty: this process's. One it cannot enter: exit code 126.
  std::string cwd;
};

// What run() collected from a command that ended.
struct CommandOutput {
  int exit_code = -1;    // -1: it did not exit normally (a signal)
  int wait_status = -1;  // the raw wait status
  std::string out, err;
};

struct RunOptions {
  std::chrono::milliseconds timeout{20'000};    // then the command is killed (error "timeout")
  std::optional<std::vector<std::string>> env;  // as SpawnOptions::env
  std::size_t output_cap = 0;                   // bytes kept of each stream; 0: all
  bool new_session = false;
};

// How a process ended (wait()).
struct ExitInfo {
  int status = 0;              // the raw wait status
  std::int64_t maxrss_kb = 0;  // its peak resident memory (its waited-for children included)
  std::int64_t cpu_ms = 0;     // user + system time
};

enum class WaitMode { block, no_hang };

class Env {
 public:
  virtual ~Env() = default;

  // --- time ---
  // The clock every deadline, lease, backoff and sleep is read from.
  virtual Clock& clock() = 0;

  // --- processes ---
  // fork + exec of opts.argv. The child gets a clear signal mask and default dispositions.
  // Returns its pid. Errors: "not_found" (argv[0], with the PATH searched), "io" (a failed fork
  // is transient).
  virtual Result<pid_t> spawn(const SpawnOptions& opts) = 0;
  // fork; the child runs `child` and _exits with what it returns. For the few callers that must
  // act inside the child before any exec (namespace probes). `child` runs in a fork of a
  // threaded process: only async-signal-safe calls, nothing that allocates. Errors: "io".
  virtual Result<pid_t> fork_call(const std::function<int()>& child) = 0;
  // Runs a command to its end, collecting its stdout and stderr; kills it (SIGKILL) at the
  // timeout, read from clock(). argv[0] not found: exit code 127 and the reason on err, as a
  // shell would say it. Errors: "io" (cannot start), "timeout" (transient).
  virtual Result<CommandOutput> run(const std::vector<std::string>& argv,
                                    const RunOptions& opts) = 0;
  // Reaps a child this process started. nullopt: still running (no_hang only). A pid that is
  // not a child of ours (ECHILD) gives status -1. Retries on EINTR.
  virtual std::optional<ExitInfo> wait(pid_t pid, WaitMode mode) = 0;
  // Sends a signal to a process (pid > 0) or a process group (pid < 0). False when it failed.
  virtual bool kill(pid_t pid, int sig) = 0;
  // Whether a process with this pid runs (one of another user counts; a zombie, which has
  // exited and waits to be reaped, does not). False for pid <= 0.
  virtual bool alive(pid_t pid) = 0;
};

// The real operating system and the system clock.
Env& default_env();

// Forwards every call to `target`: derive and override one method.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env& target) : target_(target) {}
  Env& target() const { return target_; }

  Clock& clock() override { return target_.clock(); }
  Result<pid_t> spawn(const SpawnOptions& opts) override { return target_.spawn(opts); }
  Result<pid_t> fork_call(const std::function<int()>& child) override {
    return target_.fork_call(child);
  }
  Result<CommandOutput> run(const std::vector<std::string>& argv, const RunOptions& opts) override {
    return target_.run(argv, opts);
  }
  std::optional<ExitInfo> wait(pid_t pid, WaitMode mode) override {
    return target_.wait(pid, mode);
  }
  bool kill(pid_t pid, int sig) override { return target_.kill(pid, sig); }
  bool alive(pid_t pid) override { return target_.alive(pid); }

 private:
  Env& target_;
};

// The processes of `target` on another clock: how a component that takes an Env runs on a
// test's ManualClock. run()'s deadline stays the target's (real time). Both must outlive it.
class ClockedEnv final : public EnvWrapper {
 public:
  explicit ClockedEnv(Clock& clock, Env& target = default_env())
      : EnvWrapper(target), clock_(clock) {}
  Clock& clock() override { return clock_; }

 private:
  Clock& clock_;
};

// Kills a process group with SIGKILL, and the process itself in case it has not made its group
// yet. Nothing for pgid <= 0.
void kill_group(Env& env, pid_t pgid);

}  // namespace kforge
