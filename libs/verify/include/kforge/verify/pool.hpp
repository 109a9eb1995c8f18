#pragma once
// Pool: the sandboxed verifier. It runs generated samples (code + wrapper + test) through the
// Python harness, one sample per slot at a time, on the configured devices.
//
// Warm mode: each slot keeps a long-lived Python worker that imported torch and triton before
// any CUDA call; the worker forks a child per sample. Fresh mode: a new interpreter per sample.
// Either way the pool owns the deadline: it knows each sample's pid and process group, kills the
// group (and, when it runs as root, every process of the slot's own uid) at the deadline or past
// the memory cap, restarts workers that die or wedge, and takes a device out of rotation when its
// workers keep failing to start.
//
// Threads: not thread-safe. REQUIRES: one thread calls submit(), step() and the rest; callbacks
// run on that thread, inside step(). The pool starts processes through its Env; it never
// installs signal handlers and reaps only the processes it started (Env::wait on their pids).
//
// Back-pressure: at most `queue_capacity` samples wait (in-flight ones not counted). submit()
// then fails with kind "full" (transient): the caller should step() and try again, which is how
// the LLM side slows down when verification lags.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/clock.hpp"
#include "kforge/core/env.hpp"
#include "kforge/core/result.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/gpu.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

struct VerifyRequest {
  std::string key;  // names the sample in logs and results
  // A missing field makes the verdict `skipped` without running anything.
  std::optional<std::string> code;
  std::optional<std::string> kernel_wrapper;
  std::optional<std::string> unitest_code;
  double timeout_s = 0;  // 0: the configured timeout
  // Targets to compile this sample's kernels for after a passing run, besides those of
  // verifier.cross_compile (a run's --require-target); checked with verify/targets.hpp.
  std::vector<std::string> cross_compile;
  // A run's --require-speedup X: the sample's pass_perf asks for a speedup interval above
  // max(X, verifier.timing.min_speedup), and a passing sample without it is flagged `slow`
  // (not verified). 0: none asked.
  double require_speedup = 0;
};

using Callback = std::function<void(VerifyResult&&)>;

struct PoolOptions {
  VerifierConfig config;
  // The devices to use (resolve_devices()); empty: resolved from config.devices.
  std::vector<Device> devices;
  int total_workers = 0;  // > 0 overrides workers_per_device x devices (spread over devices)
  // Processes (workers, fresh samples, the namespace probe) start, end and are reaped through
  // it, and deadlines and back-off read its clock; default: default_env(). Tests wrap it to
  // inject faults (a device whose workers cannot start, a worker that dies) or a ManualClock.
  Env* env = nullptr;
  SystemProbe* probe = nullptr;  // the machine (devices, the interpreter's check); default: env's
};

struct DeviceStatus {
  std::string device;
  bool in_rotation = true;
  int workers = 0;
  int ready_workers = 0;
  int start_failures = 0;  // consecutive
  std::string reason;      // why it left the rotation
};

struct PoolStats {
  std::uint64_t submitted = 0;
  std::uint64_t completed = 0;
  std::uint64_t worker_starts = 0;
  std::uint64_t worker_restarts = 0;  // starts after a worker died, wedged or failed to start
  std::uint64_t gpu_probes = 0;  // ready workers that made a GPU probe (one per device at first)
  std::uint64_t mutant_runs = 0;
  std::uint64_t cancelled_waiting = 0;  // cancel()ed before they started: never run
  std::uint64_t cancelled_running = 0;  // cancel()ed while they ran: their process group killed
  // Lent slots (verifier.timing.lend): runs that took one, their wall time summed, and the most
  // lent slots that ran at once.
  std::uint64_t lent_runs = 0;
  std::int64_t lent_ms = 0;
  int lent_max = 0;
};

// What the sandbox could set up on this machine, found once when the pool starts.
struct SandboxCaps {
  bool root = false;
  bool own_uids = false;            // samples run as per-slot uids (root only)
  bool pid_namespace = false;       // a PID namespace (and /proc) per sample
  bool userns = false;              // not root: the namespaces go through a user namespace
  std::vector<std::string> hidden;  // the daemon's paths hidden from samples
  std::string memory;               // "cgroup" or "rss-watch"
  std::string cgroup_note;
};

class Pool {
 public:
  // Resolves devices, claims sandbox uids, prepares the work and Triton cache directories and
  // starts the workers (in warm mode). Errors: "config" (no harness, bad devices), "io".
  static Result<std::unique_ptr<Pool>> create(PoolOptions options);
  // The number of workers create() would start with `options` (its devices resolved the same
  // way), without starting any: what kforge verify --plan plans for. Errors as create()'s.
  static Result<int> planned_workers(const PoolOptions& options);
  // Kills every worker and running sample and removes the pool's directories.
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // Queues a sample. The callback runs exactly once, inside a later step() (or inside the
  // destructor, with kInfrastructure, if the pool is destroyed first). Returns the sample's id.
  // Error kind "full" (transient) when queue_capacity samples already wait.
  Result<std::uint64_t> submit(VerifyRequest request, Callback done);
  bool accepting() const;
  // Stops a sample submitted earlier (its id from submit()): waiting, it leaves the queue and
  // never starts; running (or its mutant run), its process group is killed as at a deadline and
  // its slot takes the next sample (a warm worker stays: it only loses its child). Its callback
  // still runs once, inside a later step(), with a result whose `cancelled` is set, `detail`
  // `why`, and no verdict to keep. False when the pool no longer holds it (its result is handed
  // over, or about to be, in this step) or it was cancelled already.
  bool cancel(std::uint64_t id, const std::string& why);

  // Does the pool's work: starts and restarts workers, dispatches queued samples, reads their
  // output, enforces deadlines and memory caps, and runs callbacks of finished samples. Waits at
  // most max_wait for something to happen (0: does what is ready and returns).
  void step(std::chrono::milliseconds max_wait);
  // step() until nothing is queued or running.
  void drain();
  // The one method any thread may call: a step() waiting returns at once (or the next one does
  // not wait).
  void wake();
  // verifier.order: early_long (verify/cost.hpp): a sample submitted from now on whose predicted
  // cost is above `seconds` is long; of the waiting samples a free slot takes the first long one
  // while fewer than long_at_once(slots()) long ones run and long_spacing(slots()) dispatches
  // passed since the last long one, else the first other one, else the first. 0 (the start):
  // none is long. kforge verify sets it from its whole batch (plan_dispatch's long_s).
  void set_long_cost(double seconds);
  // A reload: takes the settings of `config` that need no new workers (apply_reloadable()).
  void reconfigure(const VerifierConfig& config);
  const VerifierConfig& config() const;

  std::size_t queued() const;
  std::size_t in_flight() const;
  bool idle() const { return queued() == 0 && in_flight() == 0; }
  int slots() const;
  std::vector<DeviceStatus> devices() const;
  PoolStats stats() const;
  SandboxCaps sandbox() const;
  // How the number of workers was chosen, per device (e.g. "cuda:0: auto: 16 per GPU (...)").
  std::string sizing() const;

  // For tests: the pids of the live warm workers, in slot order (-1 where none runs).
  std::vector<int> TEST_worker_pids() const;
  // For tests: each slot's sandbox uid (-1 when samples keep the pool's uid).
  std::vector<int> TEST_slot_uids() const;

  struct Impl;

 private:
  explicit Pool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The harness script: config.harness if set, else the installed one
// (<data dir>/harness/kforge-harness.py), else the source tree's.
Result<std::string> find_harness(const VerifierConfig& config);

}  // namespace kforge::verify
