#pragma once
// VerifyStage: the daemon's hand-off from the LLM stages to the verifier pool.
//
// Jobs whose LLM stages are done wait in 'verify_queued'. The stage leases them one at a time
// as 'verifying' (owner and expiry, like the LLM side) while the pool accepts work, so a backlog
// stays in the database, bounded by the pool's queue, and the LLM side slows down through
// PipelineConfig::verify_backlog. Each verdict and the job's move to 'done' are written in one
// transaction. A verdict flagged `infrastructure` (the verifier failed, not the sample) puts the
// job back in 'verify_queued'. A verdict that is not verified (not passed, or passed with a
// quality flag) sends the job to stage 'repair' at its next round instead, in the same
// transaction, while the run has repair rounds left (runs.params_json "repair_rounds"); each
// verdict records the round whose code it judged. A dead daemon's 'verifying' jobs are
// reclaimed at start or when their lease expires.
//
// Threads: not thread-safe. Everything, the pool included, lives on the thread that calls
// step(); that thread must outlive the stage (fresh-mode samples die with their thread).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kforge/core/clock.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/pool.hpp"

namespace kforge::pipeline {

// A verdict's job: leased as 'verifying' for the code of one repair round.
struct VerdictFor {
  std::int64_t job_id = 0;
  std::int64_t run_id = 0;
  std::int64_t sample_id = 0;
  int attempt = 1;
  int round = 0;   // the repair round whose code was verified
  int rounds = 0;  // the run's repair rounds
};
enum class VerdictOutcome { stored, to_repair, requeued, lost };

// In the caller's transaction, for both backends (the local pool and Slurm): stores the verdict
// (not an infrastructure one) and moves the job on: to 'done'; to stage 'repair' at the next
// round when it is not verified, the run has rounds left and the verdict is not flagged
// `environment`; or back to 'verify_queued' when flagged `infrastructure`. `lost`: the job is no
// longer OWNER's (cancelled, or reclaimed after its lease expired): nothing is written.
Result<VerdictOutcome> store_job_verdict(store::Db& db, const std::string& owner,
                                         const VerdictFor& job, const verify::VerifyResult& r,
                                         std::int64_t now);
// The run's repair rounds (runs.params_json "repair_rounds", fixed at its creation; 0 if unset).
Result<int> run_repair_rounds(store::Db& db, std::int64_t run_id);
// The cross-compile targets the run requires (runs.params_json "require_targets"): its samples
// are compiled for them, and a passing one that does not compile for one is flagged
// cross_compile_failed by store_job_verdict (not verified; repaired with the compiler's error).
Result<std::vector<std::string>> run_required_targets(store::Db& db, std::int64_t run_id);

struct VerifyStageStats {
  std::uint64_t leased = 0;
  std::uint64_t stored = 0;
  std::uint64_t requeued = 0;  // infrastructure failures, back to verify_queued
  std::uint64_t lost = 0;      // verdicts for jobs no longer ours (cancelled or reclaimed)
  std::map<std::string, std::uint64_t> by_verdict;
  std::uint64_t verified = 0;   // passed with no flag
  std::uint64_t to_repair = 0;  // verdicts that sent their job to a repair round
};

// What the daemon's verifier thread drives: the local pool (VerifyStage, below) or the Slurm
// backend (slurm_backend.hpp), chosen by verifier.backend.
class VerifyBackend {
 public:
  virtual ~VerifyBackend() = default;
  virtual Status step(std::chrono::milliseconds max_wait) = 0;
  virtual void drain() = 0;
  virtual bool idle() const = 0;
  virtual Status stop() = 0;
  virtual const VerifyStageStats& stats() const = 0;
  virtual std::string describe() const = 0;  // for the log: slots, or the cluster it submits to
};

class VerifyStage : public VerifyBackend {
 public:
  // db: this thread's own connection. owner: this daemon's lease owner; owner_glob matches the
  // owners of earlier processes of this daemon (their 'verifying' jobs are taken back).
  static Result<std::unique_ptr<VerifyStage>> create(store::Db& db, Clock& clock,
                                                     verify::PoolOptions options, std::string owner,
                                                     const std::string& owner_glob);
  ~VerifyStage() override;

  // Leases what the pool can take, runs the pool for at most max_wait, stores verdicts.
  Status step(std::chrono::milliseconds max_wait) override;
  // Stops leasing; step() then only finishes what is running.
  void drain() override { draining_ = true; }
  bool idle() const override;
  // Destroys the pool (killing what runs) and gives unfinished jobs back to 'verify_queued'.
  Status stop() override;

  const VerifyStageStats& stats() const override { return stats_; }
  std::string describe() const override;
  verify::Pool& pool() { return *pool_; }

 private:
  VerifyStage(store::Db& db, Clock& clock, std::string owner)
      : db_(db), clock_(clock), owner_(std::move(owner)) {}
  using Leased = VerdictFor;
  Result<bool> lease_one();
  Result<int> repair_rounds(std::int64_t run_id);
  void finish(const Leased& job, verify::VerifyResult&& r);
  std::int64_t lease_ms() const;

  store::Db& db_;
  Clock& clock_;
  std::string owner_;
  std::unique_ptr<verify::Pool> pool_;
  double timeout_s_ = 120;
  bool draining_ = false;
  std::int64_t last_renew_ms_ = 0;
  std::map<std::int64_t, int> repair_rounds_;                          // by run id
  std::map<std::int64_t, std::vector<std::string>> required_targets_;  // by run id
  VerifyStageStats stats_;
  Status deferred_error_;
};

}  // namespace kforge::pipeline
