#include "sys.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kforge/core/fs.hpp"

namespace kforge::verify::sys {
namespace {

bool read_small(const std::string& path, std::string& out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out.clear();
  char buf[4096];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return true;
}

bool write_small(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = ::write(fd, text.data(), text.size());
  ::close(fd);
  return n == static_cast<ssize_t>(text.size());
}

}  // namespace

std::vector<ProcInfo> scan_procs() {
  std::vector<ProcInfo> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  std::string text;
  while (dirent* e = ::readdir(d)) {
    const char* n = e->d_name;
    if (*n < '0' || *n > '9') continue;
    std::string base = std::string("/proc/") + n;
    if (!read_small(base + "/status", text)) continue;
    ProcInfo p;
    p.pid = static_cast<pid_t>(std::atoi(n));
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("Uid:", 0) == 0) {
        std::istringstream ls(line.substr(4));
        unsigned long r = 0, ef = 0;
        ls >> r >> ef;
        p.ruid = static_cast<uid_t>(r);
        p.euid = static_cast<uid_t>(ef);
      } else if (line.rfind("VmRSS:", 0) == 0) {
        p.rss_kb = std::atoll(line.c_str() + 6);
      } else if (line.rfind("NSpgid:", 0) == 0) {
        p.pgid = static_cast<pid_t>(std::atoi(line.c_str() + 7));
      } else if (line.rfind("PPid:", 0) == 0) {
        p.ppid = static_cast<pid_t>(std::atoi(line.c_str() + 5));
      } else if (line.rfind("NSpid:", 0) == 0) {
        auto last = line.find_last_of(" \t");
        p.ns_pid = static_cast<pid_t>(std::atoi(line.c_str() + last + 1));
      } else if (line.rfind("State:", 0) == 0) {
        p.zombie = line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
      }
    }
    out.push_back(p);
  }
  ::closedir(d);
  return out;
}

int sweep_uid(Env& env, uid_t uid, int rounds) {
  int signalled = 0;
  for (int round = 0; round < rounds; ++round) {
    int live = 0;
    for (const auto& p : scan_procs()) {
      if (p.zombie || (p.ruid != uid && p.euid != uid)) continue;
      ++live;
      if (env.kill(p.pid, SIGKILL)) ++signalled;
    }
    if (live == 0) break;
  }
  return signalled;
}

Result<std::vector<UidClaim>> claim_uids(std::int64_t base, int count, int n,
                                         const std::string& lock_dir) {
  std::string dir = lock_dir;
  struct stat st;
  if (dir.empty() || ::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      ::access(dir.c_str(), W_OK) != 0)
    dir = "/tmp";
  std::vector<UidClaim> out;
  for (int i = 0; i < count && static_cast<int>(out.size()) < n; ++i) {
    auto uid = static_cast<uid_t>(base + i);
    std::string path = dir + "/kforge-verify-uid-" + std::to_string(uid) + ".lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    out.push_back({uid, fd});
  }
  if (static_cast<int>(out.size()) < n) {
    for (auto& c : out) ::close(c.lock_fd);
    return fail("io", "cannot claim " + std::to_string(n) + " sandbox uids in [" +
                          std::to_string(base) + ", " + std::to_string(base + count) +
                          "): others are held by running pools (lock files in " + dir + ")");
  }
  return out;
}

std::vector<gid_t> gpu_device_groups() {
  std::set<gid_t> gids;
  std::vector<std::string> paths = {"/dev/kfd"};
  for (const char* dir : {"/dev", "/dev/dri"}) {
    DIR* d = ::opendir(dir);
    if (d == nullptr) continue;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.rfind("nvidia", 0) == 0 || n.rfind("renderD", 0) == 0 || n.rfind("card", 0) == 0)
        paths.push_back(std::string(dir) + "/" + n);
    }
    ::closedir(d);
  }
  for (const auto& p : paths) {
    struct stat st;
    if (::stat(p.c_str(), &st) != 0) continue;
    if ((st.st_mode & 0006) != 0006 && st.st_gid != 0) gids.insert(st.st_gid);
  }
  return {gids.begin(), gids.end()};
}

void set_nonblocking(int fd) {
  int fl = ::fcntl(fd, F_GETFL);
  if (fl >= 0) ::fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// --- cgroups -------------------------------------------------------------------------------

Cgroups::Cgroups(Env& env, const std::string& setting) : env_(env) {
  if (setting == "off") {
    note_ = "off in the configuration";
    return;
  }
  std::string parent;
  if (setting == "auto") {
    std::string self;
    if (!read_small("/proc/self/cgroup", self)) {
      note_ = "cannot read /proc/self/cgroup";
      return;
    }
    std::istringstream in(self);
    std::string line, rel;
    while (std::getline(in, line))
      if (line.rfind("0::", 0) == 0) rel = line.substr(3);
    if (rel.empty()) {
      note_ = "no cgroup v2 hierarchy for this process";
      return;
    }
    parent = "/sys/fs/cgroup" + (rel == "/" ? std::string() : rel);
  } else {
    parent = setting;
  }
  std::string controllers;
  if (!read_small(parent + "/cgroup.controllers", controllers)) {
    note_ = parent + ": not a cgroup v2 directory";
    return;
  }
  if (controllers.find("memory") == std::string::npos) {
    note_ = parent + ": the memory controller is not available there";
    return;
  }
  std::string mine = parent + "/kforge-verify-" + std::to_string(::getpid());
  if (::mkdir(mine.c_str(), 0755) != 0 && errno != EEXIST) {
    note_ = mine + ": " + std::strerror(errno);
    return;
  }
  std::string sub;
  read_small(parent + "/cgroup.subtree_control", sub);
  if (sub.find("memory") == std::string::npos &&
      !write_small(parent + "/cgroup.subtree_control", "+memory")) {
    note_ = parent + ": cannot enable the memory controller for children (" + std::strerror(errno) +
            "; a cgroup holding processes cannot; delegate one)";
    ::rmdir(mine.c_str());
    return;
  }
  if (!write_small(mine + "/cgroup.subtree_control", "+memory")) {
    note_ =
        mine + ": cannot enable the memory controller (" + std::string(std::strerror(errno)) + ")";
    ::rmdir(mine.c_str());
    return;
  }
  if (controllers.find("pids") != std::string::npos) {
    if (sub.find("pids") == std::string::npos)
      write_small(parent + "/cgroup.subtree_control", "+pids");
    pids_ = write_small(mine + "/cgroup.subtree_control", "+pids");
  }
  base_ = mine;
  note_ = "cgroup v2 at " + mine;
}

Cgroups::~Cgroups() {
  if (!base_.empty()) ::rmdir(base_.c_str());
}

Result<std::string> Cgroups::create(const std::string& name, std::int64_t memory_max_bytes,
                                    int pids_max) {
  std::string dir = base_ + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return fail("io", dir + ": " + std::strerror(errno));
  if (memory_max_bytes > 0) {
    if (!write_small(dir + "/memory.max", std::to_string(memory_max_bytes)))
      return fail("io", dir + "/memory.max: " + std::strerror(errno));
    write_small(dir + "/memory.swap.max", "0");
  }
  if (pids_ && pids_max > 0) write_small(dir + "/pids.max", std::to_string(pids_max));
  return dir;
}

std::int64_t Cgroups::oom_kills(const std::string& dir) const {
  std::string text;
  if (!read_small(dir + "/memory.events", text)) return 0;
  auto p = text.find("oom_kill ");
  return p == std::string::npos ? 0 : std::atoll(text.c_str() + p + 9);
}

void Cgroups::destroy(const std::string& dir) {
  if (dir.empty()) return;
  if (!write_small(dir + "/cgroup.kill", "1")) {
    std::string procs;
    if (read_small(dir + "/cgroup.procs", procs)) {
      std::istringstream in(procs);
      pid_t p;
      while (in >> p) env_.kill(p, SIGKILL);
    }
  }
  for (int i = 0; i < 200 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i)
    env_.clock().sleep_for(std::chrono::milliseconds(5));
}

}  // namespace kforge::verify::sys
