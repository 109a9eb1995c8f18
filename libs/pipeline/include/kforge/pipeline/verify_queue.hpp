#pragma once
// The verify stage's side of the jobs table: the VerifyQueue (verify/queue.hpp) every verify
// backend takes its jobs from and stores its verdicts through.
//
// Jobs whose LLM stages are done wait in 'verify_queued'. A backend leases them as 'verifying'
// (owner and expiry, like the LLM side); each verdict and the job's move to 'done' are written in
// one transaction. A verdict flagged `infrastructure` (the verifier failed, not the sample) puts
// the job back in 'verify_queued'. A verdict that is not verified (not passed, or passed with a
// quality flag) sends the job to stage 'repair' at its next round instead, in the same
// transaction, while the run has repair rounds left (runs.params_json "repair_rounds"); each
// verdict records the round whose code it judged. A dead daemon's 'verifying' jobs are
// reclaimed at start or when their lease expires.
//
// Threads: as its connection: one thread.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kforge/store/db.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/verify/queue.hpp"

namespace kforge::pipeline {

// How often a job goes back to the verifier's queue after an infrastructure failure (the
// verifier could not run it: a worker died, a sandbox could not be set up), and how long it
// waits each time: backoff_ms, doubled each time up to max_backoff_ms. Past max_requeues the job
// ends with an `error` verdict flagged `infrastructure` whose detail names the last failure
// (verifier.max_requeues, verifier.requeue_backoff_s).
struct RequeuePolicy {
  int max_requeues = 5;
  std::int64_t backoff_ms = 5'000;
  std::int64_t max_backoff_ms = 600'000;
};

// In the caller's transaction: stores the verdict (not an infrastructure one) and moves the job
// on: to 'done'; to stage 'repair' at the next round when it is not verified, the run has rounds
// left and the verdict is not flagged `environment`; or back to 'verify_queued' when flagged
// `infrastructure`. `lost`: the job is no longer OWNER's (cancelled, or reclaimed after its lease
// expired): nothing is written.
Result<verify::VerdictOutcome> store_job_verdict(store::Db& db, const std::string& owner,
                                                 const verify::VerifyJob& job,
                                                 const verify::VerifyResult& r, std::int64_t now);
// The same with the run's parameters given (as run_params reads them), for a caller that keeps
// them per run.
Result<verify::VerdictOutcome> store_job_verdict(store::Db& db, const std::string& owner,
                                                 const verify::VerifyJob& job,
                                                 const verify::VerifyResult& r, std::int64_t now,
                                                 const store::RunParams& params,
                                                 const RequeuePolicy& requeue = {});
// The run's parameters (fixed at its creation): its repair rounds, and the cross-compile targets
// it requires (its samples are compiled for them, and a passing one that does not compile for
// one is flagged cross_compile_failed by store_job_verdict: not verified; repaired with the
// compiler's error), and the speedup it requires (a passing sample without pass_perf is
// flagged `slow`: not verified; repaired with its speed label). Defaults for a run that is gone.
Result<store::RunParams> run_params(store::Db& db, std::int64_t run_id);

// The VerifyQueue over the jobs table ('verify_queued' and 'verifying' jobs). An idle backend
// asks lease() often; after a lease that found nothing, lease() answers "nothing" without a query
// until another connection commits (SQLite's data_version), this queue writes, or
// kRecheckEmptyMs pass (a lease of a dead owner expiring is time, not a commit).
class JobsVerifyQueue : public verify::VerifyQueue {
 public:
  static constexpr std::int64_t kRecheckEmptyMs = 30'000;

  explicit JobsVerifyQueue(store::Db& db, RequeuePolicy requeue = {})
      : db_(db), requeue_(requeue) {}

  // Scored items (score_jobs.hpp) go ahead of dataset runs' jobs: while both wait, at least this
  // share of the leases (0..1) take the oldest scored job first; the rest take the oldest job of
  // any run. 0 (the default): the oldest job of any run, scored or not.
  void set_score_share(double share) { score_share_ = share; }

  store::Db& db() override { return db_; }
  Result<std::optional<verify::LeasedSample>> lease(const std::string& owner,
                                                    std::int64_t expires_ms,
                                                    std::int64_t now) override;
  Result<std::int64_t> waiting() override;
  Status renew(const std::string& owner, std::int64_t expires_ms) override;
  Result<verify::VerdictOutcome> store_verdict(const std::string& owner,
                                               const verify::VerifyJob& job,
                                               const verify::VerifyResult& result,
                                               std::int64_t now) override;
  Result<bool> release(std::int64_t job_id, const std::string& owner, verify::Release how,
                       const std::optional<std::string>& why, std::int64_t now) override;
  Status release_all(const std::string& owner, std::int64_t now) override;
  Result<std::vector<std::int64_t>> not_held(const std::string& owner,
                                             const std::vector<std::int64_t>& job_ids) override;
  Result<std::int64_t> adopt(const std::vector<std::int64_t>& job_ids, const std::string& owner,
                             const std::string& owner_glob, std::int64_t expires_ms,
                             std::int64_t now) override;
  Result<std::int64_t> reclaim(const std::string& owner_glob, std::int64_t now,
                               const std::string& keep_owner) override;
  Result<std::optional<verify::QueuedJob>> job(std::int64_t job_id) override;
  Result<bool> run_cancelled(std::int64_t run_id) override;

 private:
  Result<const store::RunParams*> run_params_of(std::int64_t run_id);
  Result<bool> lease_job(std::string_view query, const std::string& owner, std::int64_t expires_ms,
                         std::int64_t now, verify::VerifyJob& job);

  store::Db& db_;
  std::int64_t empty_version_ = -1;  // data_version of the last lease that found nothing
  std::int64_t empty_at_ms_ = 0;
  std::int64_t empty_due_ms_ = 0;  // a job waiting out a requeue's back-off is due then (0: none)
  RequeuePolicy requeue_;
  std::map<std::int64_t, store::RunParams> run_params_;  // by run id
  double score_share_ = 0;
  std::uint64_t leases_ = 0, score_leases_ = 0;  // for score_share_
};

}  // namespace kforge::pipeline
