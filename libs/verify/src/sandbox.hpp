#pragma once
// Internal: the verifier's sandbox, seen from the pool. The threat model is in docs/VERIFIER.md
// ("Threat model"); the confinement itself is applied by the harness (contain() in
// libs/verify/harness/kforge_harness/contain/) from the spec built here.
//
// Two modes, chosen by the pool's euid:
// - root: each slot's samples run as uids of their own (two per slot with prestarting), claimed
//   with lock files; the namespaces need no user namespace.
// - not root: samples keep the pool's uid, mapped to itself in a user namespace; they lose every
//   capability once their mounts are made. The pool refuses to start where the kernel forbids
//   the namespaces (verifier.pid_namespace on), rather than run samples unconfined.
// In both: a PID namespace per sample with its own /proc, network and mount namespaces, the
// daemon's files (verifier.hide) hidden, a passwd entry for the sample's uid, a clean
// environment, rlimits; cgroups are the pool's (sys::Cgroups).

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kforge/core/result.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/gpu.hpp"
#include "kforge/verify/pool.hpp"
#include "sys.hpp"

namespace kforge::verify {

// Where one run's sample is confined.
struct RunPlace {
  std::string dir;        // the sample's directory (a tmpfs of disk_cap_mb inside)
  std::string cache_dir;  // the Triton cache, writable
  std::string cgroup;     // empty: none
  int uid = -1;           // -1: the pool's uid
};

// The keys of the sandbox spec, in the order of harness/kforge_harness/contain/spec_keys.txt
// (embedded at build time), the one list both sides read.
std::vector<std::string> spec_keys();

class Sandbox {
 public:
  struct Options {
    VerifierConfig config;
    std::string python;      // the interpreter (absolute)
    std::string harness;     // the harness script
    std::string run_root;    // the pool's run directories
    std::string cache_root;  // the Triton cache
    int slots = 0;
    int uids_per_slot = 1;
    Env* env = nullptr;  // processes are started, reaped and killed through it; null: default
  };
  // Checks what the host allows (and, with verifier.pid_namespace, that the namespaces work),
  // claims the sandbox uids (as root) and opens the shared directories to them.
  // Errors: "config" (an unreachable interpreter, namespaces refused), "io".
  static Result<std::unique_ptr<Sandbox>> create(Options o);
  // Kills whatever still runs as the claimed uids and releases them.
  ~Sandbox();

  const SandboxCaps& caps() const { return caps_; }
  Env& env() const { return o_.env ? *o_.env : default_env(); }
  bool own_uids() const { return caps_.own_uids; }
  // The uids the slot's samples run as, used in turn (empty when they keep the pool's uid).
  std::vector<uid_t> slot_uids(int slot) const;

  // The environment of workers and samples: built from scratch (nothing else of the daemon's).
  std::vector<std::string> environment(const Device& device, const std::string& cache_dir,
                                       int omp_threads) const;
  // The spec the harness applies (request["sandbox"]): exactly the keys of spec_keys(), which
  // the harness's contain() checks before it applies anything.
  nlohmann::json spec(const RunPlace& place) const;
  // Makes a run directory reachable by the uid its sample runs as.
  void prepare_dir(const RunPlace& place) const;
  // A directory the samples of every slot write (the Triton cache).
  void share_dir(const std::string& dir) const;

  // Ends every process of a run: its process group (the keeper, the namespace's init and, unless
  // it left the group, the sample; the rest dies with the namespace) and, with own uids,
  // everything running as its uid.
  void kill_run(pid_t pid, int uid) const;
  // Whether a process counts towards the run's resident memory (RSS watch without a cgroup):
  // the sample's processes, not the keeper or the namespace's init.
  bool counts_for_run(const sys::ProcInfo& p, pid_t pid, int uid) const;

 private:
  Sandbox() = default;
  Options o_;
  SandboxCaps caps_;
  std::vector<sys::UidClaim> claims_;
  std::vector<gid_t> gpu_groups_;
  std::vector<std::string> hide_;
  std::string init_;  // the PID namespace's init program; empty: a fork of the worker
};

// The PID namespace's init program for verifier.sandbox_init (empty: kforge-sandbox-init next to
// the binary, in the install's libexec, or in the build tree; "fork": none). Errors: "config" (a
// path that is not an executable file).
Result<std::string> find_sandbox_init(const std::string& configured);

// Runs, in a child, what a sample's sandbox needs from the kernel: the namespaces (with a user
// namespace when `userns`), a PID namespace whose process mounts a fresh /proc. Returns an empty
// string when it works, else what failed.
std::string probe_namespaces(Env& env, bool userns);

}  // namespace kforge::verify
