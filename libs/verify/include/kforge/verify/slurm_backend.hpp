#pragma once
// SlurmBackend: the verify stage on a Slurm cluster (verifier.backend: slurm).
//
// The database stays on the daemon's host; nodes never open it. The backend leases waiting jobs
// from its VerifyQueue in batches (like the local pool), writes each batch as
// JSON Lines shards (one per array task, one run per shard) into a directory of its own under
// verifier.slurm.shared_dir, and submits them with one `sbatch --array`. Each task runs
// `kforge verify SHARD --json RESULT --full` on its node, which writes a line per sample as it
// finishes. The backend reads those lines and `scontrol -o show job`, and stores each verdict
// through the queue, with its own record of it in one transaction, exactly as the local pool
// does.
//
// Faults: a task that ends without a verdict for every sample (failed, cancelled, timed out,
// node lost, unknown to Slurm) has its unfinished samples go back to the queue, to be
// leased into a later array; verdicts it wrote before are kept. Each (task, sample) row is
// settled once, and a task that has ended is never read again, so a late result of a lost task
// is never stored. Arrays, tasks and their jobs are checkpointed (migrations/0007_slurm.sql): a
// restarted kforged takes over the live tasks of its earlier process and goes on watching them.
// Stopping or draining the daemon leaves the tasks running on the cluster for the next start.
//
// Work nobody wants: a live task none of whose unfinished samples the backend still holds (a
// scored item whose client went away or whose deadline passed, a cancelled run's jobs: the queue
// no longer has them 'verifying' under its lease) is scancelled at the next poll, pending or
// running; what it wrote before is stored as usual, and nothing after. A task that still holds
// wanted samples runs on: the others' shard indices go into its skip file (skip-T.txt, which the
// node's `kforge verify --skip-file` reads while it runs), so they never start or the one running
// is killed, and no verdict of theirs is stored; once every unfinished sample of a task is
// listed, it ends by itself.
//
// Commands are run through the Env (exec, no shell); their paths are configurable.
//
// Threads: not thread-safe; one thread calls everything.

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/clock.hpp"
#include "kforge/core/env.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/backend.hpp"
#include "kforge/verify/config.hpp"
#include "kforge/verify/queue.hpp"

namespace kforge::verify {

struct SlurmBackendOptions {
  VerifierConfig verifier;  // .slurm says how to submit; the rest is for the nodes
  // The configuration file the nodes read when verifier.slurm.node_config is empty (the
  // daemon's own; it must be readable on the nodes). Empty: nodes get no -c.
  std::string config_file;
  // Variables left out of sbatch's environment (which the tasks inherit), e.g. the name in
  // llm.api_key_env: secrets stay on the daemon's host.
  std::vector<std::string> drop_env;
  // sbatch, scontrol and scancel run through it, and its clock is the backend's; null:
  // default_env(). Must outlive the backend.
  Env* env = nullptr;
};

class SlurmBackend : public VerifyBackend {
 public:
  // queue: on this thread's own connection, where the backend keeps its own tables too; it
  // must outlive the backend. owner, owner_glob: as LocalBackend's. Time is options.env's clock.
  static Result<std::unique_ptr<SlurmBackend>> create(VerifyQueue& queue,
                                                      SlurmBackendOptions options,
                                                      std::string owner,
                                                      const std::string& owner_glob);
  ~SlurmBackend() override = default;

  // Submits an array when enough jobs wait (or submit_interval_ms passed), reads results and
  // task states every poll_ms, renews leases; sleeps at most max_wait.
  Status step(std::chrono::milliseconds max_wait) override;
  void drain() override { draining_ = true; }
  // Draining: true at once (tasks go on on the cluster; the next start takes them over).
  bool idle() const override;
  Status stop() override { return {}; }
  const BackendStats& stats() const override { return stats_; }
  std::string describe() const override;
  // How arrays are submitted and watched (the `slurm` section but shared_dir), from now on.
  void reconfigure(const VerifierConfig& config) override {
    apply_reloadable(opt_.verifier, config);
  }

  // Reads results and task states now (tests).
  Status poll();

 private:
  struct Lease {
    std::int64_t job_id, run_id, sample_id;
    int attempt;
    nlohmann::ordered_json record;
    std::vector<std::string> targets;  // the run's required targets (`--require-target`)
  };
  SlurmBackend(VerifyQueue& queue, SlurmBackendOptions options, std::string owner)
      : queue_(queue),
        db_(queue.db()),
        clock_((options.env != nullptr ? *options.env : default_env()).clock()),
        opt_(std::move(options)),
        owner_(std::move(owner)) {}
  Status maybe_submit();
  Status submit(std::vector<Lease> leases);
  Status read_results(std::int64_t array_id, const std::string& dir, int task, int& stored);
  Status store_line(std::int64_t array_id, int task, const std::string& line, int& stored);
  // The unfinished samples of an array's live tasks, by task: their shard indices, and those
  // this backend no longer holds (VerifyQueue::not_held: their verdicts would be dropped).
  struct OpenTask {
    std::set<std::int64_t> open, unwanted;
  };
  Result<std::map<int, OpenTask>> open_tasks(std::int64_t array_id);
  // Writes the task's skip file (skip-T.txt in the array's directory, which its
  // `kforge verify --skip-file` reads): `unwanted`, one shard index a line. False when it could
  // not be written (logged).
  bool list_unwanted(const std::string& dir, std::int64_t array_id, int task,
                     const std::set<std::int64_t>& unwanted);
  // scancel of those tasks (ARRAY_TASK names); a failure is logged (they run to their end).
  void scancel_unwanted(const std::vector<std::string>& names);
  Status end_task(std::int64_t array_id, const std::string& slurm_id, int task,
                  const std::string& state, const std::string& slurm_state,
                  const std::string& exit_code);
  // A later array holds the job too (this row is stale), and marking such a row dropped.
  Result<bool> newer_open(std::int64_t job_id, std::int64_t array_id);
  Status settle_stale(std::int64_t array_id, int task, std::int64_t idx);
  Status alert(const std::string& kind, const std::string& message);
  Status clear_alert(const std::string& kind);
  std::int64_t lease_ms() const;
  Env& env() const { return opt_.env ? *opt_.env : default_env(); }

  VerifyQueue& queue_;
  store::Db& db_;  // queue_'s: the backend's own tables
  Clock& clock_;   // env()'s
  SlurmBackendOptions opt_;
  std::string owner_;
  bool draining_ = false;
  std::int64_t last_renew_ms_ = 0;
  std::int64_t last_poll_ms_ = 0;
  std::int64_t last_submit_ms_ = 0;
  std::int64_t queued_since_ms_ = 0;  // 0: nothing waited at the last look
  std::map<std::pair<std::int64_t, int>, std::int64_t> offsets_;  // result file bytes consumed
  std::map<std::string, bool> scancelled_;  // ARRAY_TASK scancelled (nothing wanted in it)
  // (array, task) -> the shard indices its skip file lists (list_unwanted)
  std::map<std::pair<std::int64_t, int>, std::set<std::int64_t>> listed_;
  BackendStats stats_;
};

// Env::run of argv with a deadline; `environment` (if given) is its whole environment. Exit code
// -1: killed by a signal; 127: not found. Errors: "timeout" (transient), "io".
Result<CommandOutput> run_command(Env& env, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout,
                                  const std::vector<std::string>* environment = nullptr);

// `kforge run cancel`: scancels the run's live tasks. Returns how many were named.
Result<int> scancel_run_tasks(store::Db& db, const SlurmConfig& cfg, std::int64_t run_id);

// `kforge status`: Slurm tasks per state, and the alerts (sbatch refused, scontrol failing).
struct SlurmAlert {
  std::string kind, message;
  std::int64_t count = 0, since_ms = 0, updated_ms = 0;
};
struct SlurmSummary {
  std::map<std::string, std::int64_t> tasks_by_state;
  std::vector<SlurmAlert> alerts;
};
Result<SlurmSummary> slurm_summary(store::Db& db);

}  // namespace kforge::verify
