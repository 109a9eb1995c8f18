#pragma once
// DaemonLoop: kforged's main loop as an object that is stepped (after watchman's stepped I/O
// loop). One step() steps the scheduler and then does what is due: the systemd watchdog (fed
// only while steps succeed, so a wedged or failing loop gets restarted), the /metrics and
// /healthz snapshot, the STATUS line, a configuration reload and the drain on a stop (backoff and
// drain as LoopPolicy has them, shared with the VerifierLoop). Time is
// read from the Clock it is given, so a test drives it with a ManualClock, without threads,
// signals or the binary; run() is the thin loop main() calls.
//
// An idle loop sleeps: with a change watch attached (set_change_watch(), a FileWatch on the
// database calling notice_db_change()), a loop with nothing in flight does not look for work
// until another connection has committed (SQLite's data_version moved), a timer of its own is
// due (a job's backoff, the heartbeat, the watchdog) or kIdleLook has passed; in between its steps
// only beat the heartbeat and feed the watchdog. Without a watch it polls every
// pipeline.idle_poll_ms, as a busy loop does.
//
// The viewer's search index of answers (migration 0052) is kept here, in batches outside the
// checkpoints: what was stored and not yet indexed is indexed about once every kIndexEvery while
// the loop works, and as soon as it goes idle (main() indexes everything at start and at stop).
//
// Threads: step() and run() on one thread. request_reload(), request_stop() and
// notice_db_change() from any thread (the signal thread, the watch); they wake the scheduler's
// wait.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kforge/app/config.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/pipeline/gateway.hpp"
#include "kforge/pipeline/heartbeat.hpp"
#include "kforge/pipeline/notify.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/pipeline/scheduler.hpp"
#include "kforge/store/db.hpp"
#include "loop_policy.hpp"

namespace kforge::daemon {

// What the HTTP thread serves; written by the loop under mu.
struct Shared {
  std::mutex mu;
  std::string metrics = "kforge_up 1\n";
  std::int64_t last_step_wall_ms = 0;
  int in_flight = 0;
  bool draining = false;
  std::string last_error;
};

// The daemon's one-line state, for systemd's STATUS= and the log.
std::string status_line(store::Db& db, const pipeline::Scheduler& s, Clock& clock);

class DaemonLoop {
 public:
  // What the loop works with; all must outlive it.
  struct Parts {
    store::Db& db;
    pipeline::Scheduler& sched;
    pipeline::LlmGateway& gateway;
    pipeline::Notifier& notifier;
    Clock& clock;
    Shared& shared;
    // Beaten after each successful step (the daemon's liveness row); null: none.
    pipeline::Heartbeat* heartbeat = nullptr;
  };
  // config_path: what a reload loads (as given on the command line; empty: the default
  // search); cfg: the configuration the daemon started with; prompts_dir: where a reload loads the
  // prompts from; prompts: the library the scheduler was built with (kept alive, as every library
  // after a reload is: calls in flight point into them).
  DaemonLoop(Parts parts, std::string config_path, app::Config cfg,
             std::filesystem::path prompts_dir, std::unique_ptr<pipeline::PromptLibrary> prompts);

  // Before run(): the liveness row beaten after each successful step.
  void attach_heartbeat(pipeline::Heartbeat* hb) { p_.heartbeat = hb; }

  // An idle loop with a change watch looks for work at least this often, whatever it is told.
  static constexpr std::chrono::seconds kIdleLook{30};
  // How often a working loop indexes the answers stored since its last batch, and how many answer
  // ids one batch (one transaction) takes at most.
  static constexpr std::chrono::seconds kIndexEvery{1};
  static constexpr std::int64_t kIndexBatchIds = 4096;

  // Before run(): whether notice_db_change() is called when the database's files change.
  void set_change_watch(bool on) { watched_ = on; }
  // Any thread: the database's files were written (by anyone): an idle loop checks whether
  // another connection committed and, if so, looks for work at once.
  void notice_db_change();

  // Any thread: reload the configuration and the prompts at the next step (SIGHUP).
  void request_reload();
  // Any thread: stop leasing and let calls in flight finish within daemon.shutdown_grace_ms
  // (SIGTERM/SIGINT); a second request ends the grace period at once.
  void request_stop();

  // One turn of the loop. Returns false once the loop is over: draining and nothing in
  // flight, the grace period spent, or a second stop request. A failed scheduler step is
  // logged, kept for /healthz and backed off (LoopPolicy: 100 ms per failure in a row, at most
  // 5 s, slept on the clock).
  bool step();
  // How long run() waits for a completion before the next step.
  std::chrono::milliseconds next_wait() const;
  // Steps that only beat the heartbeat and fed the watchdog, because an idle loop had no reason
  // to look for work (for tests and the log).
  std::uint64_t quiet_steps() const { return quiet_steps_; }
  // step() and the scheduler's wait(next_wait()) until step() returns false.
  void run();

  // When the grace period of a stop ends (the epoch of the clock before any stop).
  std::chrono::steady_clock::time_point drain_deadline() const { return policy_.drain_deadline(); }
  int consecutive_errors() const { return policy_.consecutive_errors(); }
  const app::Config& config() const { return cfg_; }

 private:
  bool idle() const;
  // Idle, watched, and nothing changed or fell due: the step need not look for work.
  bool may_sleep();
  void feed_watchdog(bool step_ok);
  void refresh_metrics();
  void report_status();
  void index_search();
  void reload();
  void start_drain();
  void notify(const std::string& msg);

  // Constant after construction.
  Parts p_;
  std::string config_path_;
  std::filesystem::path prompts_dir_;
  std::chrono::milliseconds watchdog_;
  std::chrono::steady_clock::time_point started_;

  // Set from any thread.
  std::atomic<bool> reload_requested_{false};
  std::atomic<bool> db_changed_{true};
  std::atomic<bool> idle_now_{false};  // as of the last step: only then does a change wake it

  // The loop's thread only.
  app::Config cfg_;
  std::vector<std::unique_ptr<pipeline::PromptLibrary>> libraries_;
  std::chrono::steady_clock::time_point last_watchdog_, last_metrics_, last_status_, last_log_;
  std::chrono::steady_clock::time_point last_index_;
  std::uint64_t checkpoints_at_index_ = 0;  // the scheduler's checkpoints at the last index
  LoopPolicy policy_;  // backoff and drain; its stop requests come from any thread
  bool watched_ = false;
  std::int64_t data_version_ = -1;  // p_.db's, when the loop last looked for work
  std::chrono::steady_clock::time_point next_look_{};
  std::uint64_t quiet_steps_ = 0;
};

}  // namespace kforge::daemon
