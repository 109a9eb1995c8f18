#include "sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string_view>

#include "kforge/core/embedded.hpp"

namespace kforge::verify {

namespace fs = std::filesystem;

extern "C" char** environ;

namespace {

bool matches(const std::string& pattern, const std::string& name) {
  if (!pattern.empty() && pattern.back() == '*')
    return name.rfind(pattern.substr(0, pattern.size() - 1), 0) == 0;
  return pattern == name;
}

// The first directory from `start` up that other users cannot enter, or "".
std::string closed_ancestor(const fs::path& start) {
  for (fs::path p = start; !p.empty() && p != p.root_path(); p = p.parent_path()) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0 && !(st.st_mode & S_IXOTH)) return p.string();
  }
  return "";
}

bool within(const std::string& path, const std::string& dir) {
  if (path.empty() || dir.empty()) return false;
  std::error_code ec;
  auto p = fs::weakly_canonical(fs::absolute(path), ec).string();
  auto d = fs::weakly_canonical(fs::absolute(dir), ec).string();
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return p == d || p.rfind(d + "/", 0) == 0;
}

void child_fail(int fd, const char* what) {
  int e = errno;
  char buf[160];
  std::size_t n = std::strlen(what);
  if (n > 100) n = 100;
  std::memcpy(buf, what, n);
  buf[n++] = ':';
  // errno in decimal (async-signal-safe)
  char digits[16];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + e % 10);
    e /= 10;
  } while (e > 0 && k < 15);
  while (k > 0) buf[n++] = digits[--k];
  ssize_t ignored = ::write(fd, buf, n);
  (void)ignored;
  ::_exit(1);
}

bool child_write(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  return n == static_cast<ssize_t>(text.size());
}

}  // namespace

std::string probe_namespaces(Env& env, bool userns) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  // Prepared before fork: after it, only async-signal-safe calls.
  std::string uid_map = std::to_string(::getuid()) + " " + std::to_string(::getuid()) + " 1";
  std::string gid_map = std::to_string(::getgid()) + " " + std::to_string(::getgid()) + " 1";
  // The PID namespace's first process: mounts a fresh /proc, as a sample's sandbox does.
  const int report = p[1];
  std::function<int()> in_namespace = [report]() -> int {
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
      child_fail(report, "mount --make-rprivate /");
    if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      child_fail(report, "mount a new /proc");
    return 0;
  };
  std::function<int()> unshared = [&env, &in_namespace, &uid_map, &gid_map, report,
                                   userns]() -> int {
    int flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | (userns ? CLONE_NEWUSER : 0);
    if (::unshare(flags) != 0)
      child_fail(report, userns ? "unshare(user, pid, mount, net)" : "unshare(pid, mount, net)");
    if (userns) {
      if (!child_write("/proc/self/setgroups", "deny")) child_fail(report, "/proc/self/setgroups");
      if (!child_write("/proc/self/uid_map", uid_map)) child_fail(report, "/proc/self/uid_map");
      if (!child_write("/proc/self/gid_map", gid_map)) child_fail(report, "/proc/self/gid_map");
    }
    auto c = env.fork_call(in_namespace);
    if (!c.ok()) child_fail(report, "fork into the PID namespace");
    auto st = env.wait(*c, WaitMode::block);
    return st && WIFEXITED(st->status) ? WEXITSTATUS(st->status) : 1;
  };
  auto pid = env.fork_call(unshared);
  if (!pid.ok()) {
    ::close(p[0]);
    ::close(p[1]);
    return pid.error().message;
  }
  ::close(p[1]);
  std::string msg;
  char buf[256];
  while (true) {
    ssize_t n = ::read(p[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    msg.append(buf, static_cast<std::size_t>(n));
  }
  ::close(p[0]);
  auto ended = env.wait(*pid, WaitMode::block);
  int st = ended ? ended->status : -1;
  if (ended && WIFEXITED(st) && WEXITSTATUS(st) == 0 && msg.empty()) return "";
  auto colon = msg.rfind(':');
  if (colon != std::string::npos) {
    int e = std::atoi(msg.c_str() + colon + 1);
    return msg.substr(0, colon) + ": " + std::strerror(e);
  }
  return msg.empty() ? "the probe process failed (status " + std::to_string(st) + ")" : msg;
}

Result<std::unique_ptr<Sandbox>> Sandbox::create(Options o) {
  std::unique_ptr<Sandbox> sb(new Sandbox());
  Sandbox& S = *sb;
  S.o_ = std::move(o);
  VerifierConfig& cfg = S.o_.config;
  S.caps_.root = ::geteuid() == 0;
  S.caps_.userns = !S.caps_.root;
  if (cfg.pid_namespace) {
    std::string why = probe_namespaces(S.env(), !S.caps_.root);
    if (!why.empty() && S.caps_.root) {
      // As root the per-slot uids still keep samples away from the daemon: run without the
      // namespace, and say so (each report's "sandbox" says what did not hold).
      spdlog::warn(
          "verifier: this host refuses PID namespaces ({}); samples run without one, confined "
          "by their own uids",
          why);
      cfg.pid_namespace = false;
    } else if (!why.empty()) {
      return fail("config",
                  "the verifier sandbox needs unprivileged user namespaces when kforge does not "
                  "run as root, and this host refuses them (" +
                      why +
                      "). Samples will not run unconfined: allow them (sysctl "
                      "user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1, "
                      "kernel.apparmor_restrict_unprivileged_userns=0; under systemd no "
                      "RestrictNamespaces=, ProtectKernelTunables= or ProtectKernelLogs=), or "
                      "run kforge as root");
    }
  }
  S.caps_.pid_namespace = cfg.pid_namespace;
  if (cfg.pid_namespace) {
    KF_TRY(S.init_, find_sandbox_init(cfg.sandbox_init));
    if (S.init_.empty() && cfg.sandbox_init != "fork")
      spdlog::warn(
          "verifier: kforge-sandbox-init not found (set verifier.sandbox_init); each sample's "
          "PID namespace gets a fork of its worker as init, which costs more");
  }
  if (S.caps_.root && cfg.sandbox_uid_base > 0) {
    KF_TRY(S.claims_, sys::claim_uids(cfg.sandbox_uid_base, cfg.sandbox_uid_count,
                                      S.o_.slots * S.o_.uids_per_slot, cfg.uid_lock_dir));
    S.caps_.own_uids = true;
    for (const auto& c : S.claims_)
      sys::sweep_uid(S.env(), c.uid);  // leftovers of a pool that died
  }
  if (S.caps_.own_uids) {
    // Samples run as other uids: the interpreter and their directories must be reachable.
    std::string closed = closed_ancestor(fs::path(S.o_.python).parent_path());
    if (!closed.empty())
      return fail("config", "verifier.python: " + S.o_.python +
                                " is not reachable by the sandbox uids (" + closed +
                                " is closed to other users); use a Python readable by all users, "
                                "or set verifier.sandbox_uid_base: 0 to run samples as root");
    closed = closed_ancestor(fs::absolute(S.o_.run_root));
    if (!closed.empty())
      return fail("config", "verifier.work_dir: " + cfg.work_dir +
                                " is not reachable by the sandbox uids (" + closed +
                                " is closed to other users)");
  }
  S.share_dir(S.o_.cache_root);
  if (S.caps_.own_uids) {
    // Entries an earlier pool wrote as root (sandbox_uid_base 0) must stay writable by the
    // samples' group, or Triton could not add to them.
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(S.o_.cache_root, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      struct stat st;
      if (::lstat(it->path().c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;
      if (st.st_gid == static_cast<gid_t>(cfg.sandbox_gid) && (st.st_mode & S_IWGRP)) continue;
      if (::chown(it->path().c_str(), st.st_uid, static_cast<gid_t>(cfg.sandbox_gid)) == 0)
        ::chmod(it->path().c_str(), S_ISDIR(st.st_mode) ? 02775 : (st.st_mode & 0777) | 0660);
    }
  }
  S.gpu_groups_ = sys::gpu_device_groups();
  // The daemon's files. A directory that holds what samples need (the interpreter, the harness,
  // the work or cache directory, python_path) is not hidden as a whole; its files listed
  // alongside (the database, its -wal and -shm) still are.
  std::vector<std::string> needed = {S.o_.python, S.o_.harness, S.o_.run_root, S.o_.cache_root,
                                     cfg.work_dir};
  for (const auto& p : cfg.python_path) needed.push_back(p);
  for (const auto& h : cfg.hide) {
    if (h.empty()) continue;
    std::error_code ec;
    if (fs::is_directory(h, ec)) {
      auto clash = std::find_if(needed.begin(), needed.end(),
                                [&](const std::string& n) { return within(n, h); });
      if (clash != needed.end()) {
        spdlog::warn("verifier: not hiding {} from samples: it holds {}, which they need", h,
                     *clash);
        continue;
      }
    }
    S.hide_.push_back(fs::absolute(h).lexically_normal().string());
  }
  S.caps_.hidden = S.hide_;
  return sb;
}

Sandbox::~Sandbox() {
  for (auto& c : claims_) {
    sys::sweep_uid(env(), c.uid);
    sys::close_fd(c.lock_fd);
  }
}

std::vector<uid_t> Sandbox::slot_uids(int slot) const {
  std::vector<uid_t> out;
  if (!caps_.own_uids) return out;
  for (int k = 0; k < o_.uids_per_slot; ++k)
    out.push_back(claims_[static_cast<std::size_t>(slot * o_.uids_per_slot + k)].uid);
  return out;
}

std::vector<std::string> Sandbox::environment(const Device& device, const std::string& cache_dir,
                                              int omp_threads) const {
  const VerifierConfig& cfg = o_.config;
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    for (const auto& p : cfg.env_passthrough)
      if (matches(p, k)) env[k] = kv.substr(eq + 1);
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  if (o_.python.find('/') != std::string::npos)
    path = fs::path(o_.python).parent_path().string() + ":" + path;
  env["PATH"] = path;
  env["LANG"] = "C.UTF-8";
  env["LC_ALL"] = "C.UTF-8";
  env["HOME"] = o_.run_root;
  env["TMPDIR"] = o_.run_root;
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  env["PYTHONNOUSERSITE"] = "1";
  env["PYTHONUNBUFFERED"] = "1";
  env["TRITON_CACHE_DIR"] = cache_dir;
  env["OMP_NUM_THREADS"] = std::to_string(omp_threads);
  env["KFORGE_VERIFY_DEVICE"] = device.id;
  for (const auto& [k, v] : device.visibility_env()) env[k] = v;
  for (const auto& [k, v] : device.hw_queue_env(cfg.gpu_hw_queues)) env[k] = v;
  for (const auto& [k, v] : cfg.env) env[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

Result<std::string> find_sandbox_init(const std::string& configured) {
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (configured == "fork") return std::string();
  if (!configured.empty()) {
    if (!runnable(configured))
      return fail("config", "verifier.sandbox_init: " + configured + ": not an executable file");
    return configured;
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    candidates.push_back(exe.parent_path().parent_path() / "libexec" / "kforge" /
                         "kforge-sandbox-init");
  candidates.emplace_back(KFORGE_SANDBOX_INIT_INSTALLED);
  candidates.emplace_back(KFORGE_SANDBOX_INIT_BUILT);
  for (const auto& c : candidates)
    if (runnable(c)) return c.string();
  return std::string();
}

std::span<const EmbeddedFile> harness_spec_keys();

std::vector<std::string> spec_keys() {
  return listed_lines(harness_spec_keys());
}

nlohmann::json Sandbox::spec(const RunPlace& place) const {
  const VerifierConfig& cfg = o_.config;
  nlohmann::json s = {{"dir", place.dir},
                      {"max_processes", cfg.max_processes},
                      {"max_open_files", cfg.max_open_files},
                      {"file_size_cap_mb", cfg.file_size_cap_mb},
                      {"address_space_cap_mb", cfg.address_space_cap_mb},
                      {"disk_cap_mb", cfg.disk_cap_mb},
                      {"writable", nlohmann::json::array({place.cache_dir})},
                      {"pid_namespace", cfg.pid_namespace},
                      {"init", init_.empty() ? nlohmann::json() : nlohmann::json(init_)},
                      {"hide", hide_},
                      {"user", "kforge-sample"},
                      {"uid", nullptr},
                      {"gid", nullptr},
                      {"groups", gpu_groups_},
                      {"cgroup", nullptr}};
  if (caps_.own_uids && place.uid >= 0) {
    s["uid"] = place.uid;
    s["gid"] = cfg.sandbox_gid;
    s["user"] = "kforge-sample-" + std::to_string(place.uid);
  }
  if (!place.cgroup.empty()) s["cgroup"] = place.cgroup;
  return s;
}

void Sandbox::prepare_dir(const RunPlace& place) const {
  ::chmod(place.dir.c_str(), 0755);
  if (caps_.own_uids && place.uid >= 0 &&
      ::chown(place.dir.c_str(), static_cast<uid_t>(place.uid),
              static_cast<gid_t>(o_.config.sandbox_gid)) != 0)
    spdlog::warn("verifier: chown {}: {}", place.dir, std::strerror(errno));
}

void Sandbox::share_dir(const std::string& dir) const {
  if (!caps_.own_uids) return;
  if (::chown(dir.c_str(), 0, static_cast<gid_t>(o_.config.sandbox_gid)) != 0)
    spdlog::warn("verifier: chown {}: {}", dir, std::strerror(errno));
  ::chmod(dir.c_str(), 02775);
}

void Sandbox::kill_run(pid_t pid, int uid) const {
  if (pid > 0) kill_group(env(), pid);
  if (caps_.own_uids && uid >= 0) sys::sweep_uid(env(), static_cast<uid_t>(uid));
}

bool Sandbox::counts_for_run(const sys::ProcInfo& p, pid_t pid, int uid) const {
  if (p.zombie) return false;
  if (o_.config.pid_namespace) {
    // The keeper (the run's pid) and the namespace's init are forks of the worker that only
    // wait: their resident pages are the worker's, not the sample's.
    if (p.pid == pid || (p.ppid == pid && p.ns_pid == 1)) return false;
  }
  if (caps_.own_uids && uid >= 0)
    return p.ruid == static_cast<uid_t>(uid) || p.euid == static_cast<uid_t>(uid) || p.pid == pid;
  return p.pgid == pid;
}

}  // namespace kforge::verify
