#pragma once
// Internal: what the pool needs of the machine besides processes (/proc, cgroups, uid locks).
// Processes are started, reaped and signalled through kforge::Env (kforge/core/env.hpp).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/core/result.hpp"

namespace kforge::verify::sys {

struct ProcInfo {
  pid_t pid = 0;
  uid_t ruid = 0;
  uid_t euid = 0;
  pid_t pgid = 0;
  pid_t ppid = 0;
  pid_t ns_pid = 0;  // its pid in its own (innermost) PID namespace
  std::int64_t rss_kb = 0;
  bool zombie = false;
};

// Every process visible in /proc (those that vanish while reading are skipped).
std::vector<ProcInfo> scan_procs();

// Kills (SIGKILL) every process whose real or effective uid is `uid`, scanning again until none
// is left (at most `rounds` scans). Returns how many it signalled. Never use a uid that anything
// but the pool's samples runs as.
int sweep_uid(Env& env, uid_t uid, int rounds = 50);

// A claimed uid: held (flock) until the fd is closed, so two pools never share one.
struct UidClaim {
  uid_t uid = 0;
  int lock_fd = -1;
};
// Claims `n` uids from [base, base+count) using lock files in lock_dir (falling back to /tmp).
Result<std::vector<UidClaim>> claim_uids(std::int64_t base, int count, int n,
                                         const std::string& lock_dir);

// Group ids owning the GPU device files that are not world-accessible (so a sample that runs
// as its own uid keeps access through its supplementary groups).
std::vector<gid_t> gpu_device_groups();

void set_nonblocking(int fd);
void close_fd(int& fd);

// cgroup v2 support for per-sample memory and pid limits.
class Cgroups {
 public:
  // setting: "auto" | "off" | a directory. On failure available() is false and note() says why.
  Cgroups(Env& env, const std::string& setting);
  ~Cgroups();
  bool available() const { return !base_.empty(); }
  const std::string& note() const { return note_; }
  // Creates a cgroup for one run; returns its directory.
  Result<std::string> create(const std::string& name, std::int64_t memory_max_bytes, int pids_max);
  // The number of OOM kills recorded in the cgroup.
  std::int64_t oom_kills(const std::string& dir) const;
  // Kills everything in it and removes it.
  void destroy(const std::string& dir);

 private:
  Env& env_;
  std::string base_;
  std::string note_;
  bool pids_ = false;
};

}  // namespace kforge::verify::sys
