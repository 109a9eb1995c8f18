#pragma once
// VerifierLoop: the daemon's verifier as an object that is stepped, like DaemonLoop. One step()
// steps the verify backend (the local pool or Slurm) for at most next_wait(), backs off a failed
// step and drains on a stop as LoopPolicy has it (shared with DaemonLoop), records the local
// pool's devices when they change (verifier_devices, for kforge status), and applies a reload
// (SIGHUP: the settings apply_reloadable() in verify/config.hpp names). Time is read from the
// Env's clock, so a test drives it with a ManualClock (ClockedEnv) and a real backend, without
// threads, signals or the binary; VerifierThread runs it on a thread of its own.
//
// Idle: with nothing to verify, the backend's step sleeps for up to kIdleWait; notice_db_change()
// (the daemon's FileWatch on the database), request_stop() and request_reload() wake it, so new
// samples are taken at once. Busy, it steps every kBusyWait at least.
//
// Threads: step(), run() and finish() on one thread; notice_db_change(), request_reload(),
// request_stop() and what Shared holds from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/backend.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/local_backend.hpp"
#include "kforge/verify/store.hpp"
#include "loop_policy.hpp"

namespace kforge::daemon {

class VerifierLoop {
 public:
  // What other threads read; written by the loop under mu.
  struct Shared {
    std::mutex mu;
    verify::BackendStats stats;
    std::string last_error;  // of the last failed step
  };
  // What the loop works with; all must outlive it.
  struct Parts {
    store::Db& db;  // the backend's connection: the devices' state is recorded there
    verify::VerifyBackend& backend;
    Env& env;  // its clock: the backoff, the drain's grace period, the devices' interval
    Shared& shared;
    // The local pool's backend, whose devices are recorded; null: none (Slurm).
    verify::LocalBackend* local = nullptr;
  };
  // config_path: what a reload loads (as given on the command line; empty: the default search);
  // cfg: the verifier section the backend was made with.
  VerifierLoop(Parts parts, std::string config_path, verify::VerifierConfig cfg);

  static constexpr std::chrono::milliseconds kIdleWait{5'000};
  static constexpr std::chrono::milliseconds kBusyWait{200};

  // Any thread: the database's files changed: an idle backend looks at the queue now.
  void notice_db_change();
  // Any thread: reload the verifier's reloadable settings at the next step (SIGHUP).
  void request_reload();
  // Any thread: stop leasing and give samples being verified up to `grace` (that of the first
  // request) to finish; a second request ends the grace period at once.
  void request_stop(std::chrono::milliseconds grace);

  // One turn: starts the drain when a stop was asked, steps the backend for at most
  // next_wait(), records the devices, reloads. Returns false once the loop is over (draining
  // and nothing in flight, the grace period spent, or a second stop); then call finish().
  bool step();
  // What the next step gives the backend: kIdleWait while it has nothing to do, else kBusyWait.
  std::chrono::milliseconds next_wait() const;
  // step() until it returns false.
  void run();
  // After the last step: stops the backend, which kills what still runs and gives those jobs
  // back to 'verify_queued'.
  Status finish();

  int consecutive_errors() const { return policy_.consecutive_errors(); }
  std::chrono::steady_clock::time_point drain_deadline() const { return policy_.drain_deadline(); }
  // The settings the backend runs with (reloads included).
  const verify::VerifierConfig& config() const { return cfg_; }

 private:
  void record_devices(bool force);
  void reload();
  void publish_stats();

  // Constant after construction.
  Parts p_;
  std::string config_path_;

  // Set from any thread.
  std::atomic<bool> reload_requested_{false};
  std::atomic<std::int64_t> grace_ms_{0};
  std::atomic<bool> idle_{false};  // in a step that waits for work: only then does a change wake it

  // The loop's thread only.
  LoopPolicy policy_;  // backoff and drain; its stop requests come from any thread
  verify::VerifierConfig cfg_;
  std::vector<verify::DeviceStatus> recorded_;
  std::chrono::steady_clock::time_point last_record_;
};

}  // namespace kforge::daemon
