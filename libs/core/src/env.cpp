#include "kforge/core/env.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

extern "C" char** environ;

namespace kforge {
namespace {

std::string path_of(const std::optional<std::vector<std::string>>& env) {
  if (env) {
    for (const auto& e : *env)
      if (e.rfind("PATH=", 0) == 0) return e.substr(5);
    return "/usr/local/bin:/usr/bin:/bin";
  }
  const char* p = std::getenv("PATH");
  return p != nullptr && *p != '\0' ? p : "/usr/local/bin:/usr/bin:/bin";
}

// argv[0] as a path to execute, looked up on PATH when it has no slash.
Result<std::string> resolve_exe(const std::string& name, const std::string& path_env) {
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return fail("not_found", name + ": " + std::strerror(errno));
  }
  std::stringstream ps(path_env);
  std::string dir;
  while (std::getline(ps, dir, ':')) {
    if (dir.empty()) continue;
    std::string c = dir + "/" + name;
    if (::access(c.c_str(), X_OK) == 0) return c;
  }
  return fail("not_found", name + ": not found (PATH=" + path_env + ")");
}

ExitInfo exit_info(int status, const rusage& ru) {
  ExitInfo e;
  e.status = status;
  e.maxrss_kb = ru.ru_maxrss;
  e.cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
             (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
  return e;
}

class PosixEnv final : public Env {
 public:
  Clock& clock() override { return system_clock(); }

  Result<pid_t> spawn(const SpawnOptions& o) override {
    if (o.argv.empty()) return fail("io", "spawn: empty argv");
    KF_TRY(std::string exe, resolve_exe(o.argv[0], path_of(o.env)));
    // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
    std::vector<char*> argv;
    for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    if (o.env) {
      for (const auto& e : *o.env) envp.push_back(const_cast<char*>(e.c_str()));
      envp.push_back(nullptr);
    }
    char** child_env = o.env ? envp.data() : environ;
    int devnull = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    int max_target = 2;
    for (const auto& [from, to] : o.fds) max_target = std::max(max_target, to);
    pid_t pid = ::fork();
    if (pid < 0) {
      int e = errno;
      ::close(devnull);
      return fail("io", std::string("fork: ") + std::strerror(e), Transient::yes);
    }
    if (pid == 0) {
      if (o.new_session) ::setsid();
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      struct sigaction dfl;
      std::memset(&dfl, 0, sizeof dfl);
      dfl.sa_handler = SIG_DFL;
      for (int s = 1; s < 32; ++s)
        if (s != SIGKILL && s != SIGSTOP) ::sigaction(s, &dfl, nullptr);
      // Move sources above every target first, so a source is never overwritten by a target.
      // (At most a handful of descriptors: a fixed array, no allocation after fork.)
      int moved_from[16], moved_to[16];
      int moved = 0;
      for (const auto& [from, to] : o.fds) {
        if (moved == 16) break;
        moved_from[moved] = ::fcntl(from, F_DUPFD, max_target + 1);
        moved_to[moved++] = to;
      }
      bool has0 = false, has1 = false, has2 = false;
      for (int i = 0; i < moved; ++i) {
        ::dup2(moved_from[i], moved_to[i]);
        has0 = has0 || moved_to[i] == 0;
        has1 = has1 || moved_to[i] == 1;
        has2 = has2 || moved_to[i] == 2;
      }
      if (!has0) ::dup2(devnull, 0);
      if (!has1) ::dup2(devnull, 1);
      if (!has2) ::dup2(devnull, 2);
      if (::syscall(SYS_close_range, max_target + 1, ~0U, 0) != 0) {
        for (int fd = max_target + 1; fd < 65536; ++fd) ::close(fd);
      }
      if (!o.cwd.empty() && ::chdir(o.cwd.c_str()) != 0) ::_exit(126);
      ::execve(exe.c_str(), argv.data(), child_env);
      ::_exit(127);
    }
    ::close(devnull);
    return pid;
  }

  Result<pid_t> fork_call(const std::function<int()>& child) override {
    pid_t pid = ::fork();
    if (pid < 0) return fail("io", std::string("fork: ") + std::strerror(errno), Transient::yes);
    if (pid == 0) ::_exit(child());
    return pid;
  }

  Result<CommandOutput> run(const std::vector<std::string>& argv, const RunOptions& o) override {
    if (argv.empty()) return fail("config", "empty command");
    int out_pipe[2], err_pipe[2];
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
      return fail("io", std::string("pipe: ") + std::strerror(errno));
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
      int e = errno;
      ::close(out_pipe[0]);
      ::close(out_pipe[1]);
      return fail("io", std::string("pipe: ") + std::strerror(e));
    }
    SpawnOptions so;
    so.argv = argv;
    so.env = o.env;
    so.fds = {{out_pipe[1], 1}, {err_pipe[1], 2}};
    so.new_session = o.new_session;
    auto pid = spawn(so);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (!pid.ok()) {
      ::close(out_pipe[0]);
      ::close(err_pipe[0]);
      if (pid.error().kind != "not_found") return pid.error();
      CommandOutput r;
      r.exit_code = 127;
      r.wait_status = 127 << 8;
      r.err = pid.error().message + "\n";
      return r;
    }
    CommandOutput r;
    Clock& c = clock();
    auto until = c.steady_now() + o.timeout;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = 2;
    bool killed = false;
    while (open_fds > 0) {
      auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - c.steady_now()).count();
      if (left <= 0) {
        ::kill(*pid, SIGKILL);
        killed = true;
        break;
      }
      int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[8192];
        ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
        if (got > 0) {
          std::string& to = i == 0 ? r.out : r.err;
          if (o.output_cap == 0 || to.size() < o.output_cap)
            to.append(buf, static_cast<std::size_t>(got));
        } else if (got == 0 || errno != EINTR) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    for (auto& f : fds)
      if (f.fd >= 0) ::close(f.fd);
    auto ended = wait(*pid, WaitMode::block);
    if (killed)
      return fail("timeout",
                  argv[0] + " did not finish within " + std::to_string(o.timeout.count()) + " ms",
                  Transient::yes);
    r.wait_status = ended ? ended->status : -1;
    r.exit_code = r.wait_status != -1 && WIFEXITED(r.wait_status) ? WEXITSTATUS(r.wait_status) : -1;
    return r;
  }

  std::optional<ExitInfo> wait(pid_t pid, WaitMode mode) override {
    int st = 0;
    rusage ru{};
    while (true) {
      pid_t r = ::wait4(pid, &st, mode == WaitMode::no_hang ? WNOHANG : 0, &ru);
      if (r == pid) return exit_info(st, ru);
      if (r == 0) return std::nullopt;
      if (r < 0 && errno == EINTR) continue;
      ExitInfo unknown;
      unknown.status = -1;
      return unknown;
    }
  }

  bool kill(pid_t pid, int sig) override { return ::kill(pid, sig) == 0; }

  bool alive(pid_t pid) override {
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno != EPERM)) return false;
    // A zombie (exited, not yet reaped by its parent) answers kill(0) but runs no more.
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;  // no /proc: kill(0)'s word
    auto close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) return true;
    const char state = line[close + 2];
    return state != 'Z' && state != 'X';
  }
};

}  // namespace

Env& default_env() {
  static PosixEnv env;
  return env;
}

void kill_group(Env& env, pid_t pgid) {
  if (pgid <= 0) return;
  env.kill(-pgid, SIGKILL);
  env.kill(pgid, SIGKILL);
}

}  // namespace kforge
