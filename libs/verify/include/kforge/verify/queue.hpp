#pragma once
// VerifyQueue: what a verification backend needs from the jobs waiting for it.
//
// The pipeline keeps the jobs; a backend (backend.hpp) leases the ones waiting for verification
// ('verify_queued') under an owner and a lease expiry, verifies them somewhere, and hands back a
// verdict, or the job itself, through this interface. The pipeline implements it over its jobs
// table (pipeline/verify_queue.hpp); verify never reads or writes that table itself.
//
// Every method works on db(): a backend keeps its own tables on the same connection, and a method
// called inside a transaction the backend opened there is part of it (a verdict and the
// backend's record of it land together). Owners are the daemon's lease owners; `owner_glob`
// matches those of earlier processes of the same daemon.
//
// Threads: as db(): one thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/result.hpp"
#include "kforge/store/db.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

// A job leased for verification, for the code of one repair round: whose verdict it is.
struct VerifyJob {
  std::int64_t job_id = 0;
  std::int64_t run_id = 0;
  std::int64_t sample_id = 0;
  int attempt = 1;  // this verification's attempt (the job's stored verdicts + 1)
  int round = 0;    // the repair round whose code is verified
};

// What lease() hands out: the job, and the sample with its round's generated code as a request
// (cross_compile: the targets the job's run requires). A field the queue does not have is left
// empty (nullopt), so the verdict is `skipped`.
struct LeasedSample {
  VerifyJob job;
  VerifyRequest request;
};

// A job as the queue holds it now (read back by a backend that keeps its own record of the
// jobs it sent away, e.g. after a restart): everything but the attempt, which is the backend's.
struct QueuedJob {
  VerifyJob job;    // attempt: 1
  std::string key;  // the sample's key
};

// What store_verdict() did with the job.
enum class VerdictOutcome {
  stored,     // the verdict is stored and the job is done
  to_repair,  // stored, and the job goes to its next repair round
  requeued,   // flagged `infrastructure`: nothing stored, the job waits for verification again
  lost,       // the job is no longer the owner's (cancelled, or reclaimed): nothing written
};

// How release() gives a leased job back.
enum class Release {
  requeue,  // back to the queue, to be verified again
  fail,     // ended as failed (a backend that gave up on it)
  cancel,   // ended as cancelled (its run was cancelled)
};

class VerifyQueue {
 public:
  virtual ~VerifyQueue() = default;

  // The connection every method below works on.
  virtual store::Db& db() = 0;

  // Leases the job that has waited longest (of an active run) to OWNER until expires_ms, with
  // its sample and code; nullopt when none waits.
  virtual Result<std::optional<LeasedSample>> lease(const std::string& owner,
                                                    std::int64_t expires_ms, std::int64_t now) = 0;
  // How many jobs of active runs wait for verification.
  virtual Result<std::int64_t> waiting() = 0;
  // Extends every lease OWNER holds to expires_ms.
  virtual Status renew(const std::string& owner, std::int64_t expires_ms) = 0;

  // Stores the verdict of a job OWNER leased and moves the job on: done, to its next repair
  // round (not verified, rounds left, not flagged `environment`), or back to the queue (flagged
  // `infrastructure`, nothing stored). The run's required targets are applied to the verdict
  // first (a passing sample that does not compile for one is not verified).
  virtual Result<VerdictOutcome> store_verdict(const std::string& owner, const VerifyJob& job,
                                               const VerifyResult& result, std::int64_t now) = 0;
  // Gives one job OWNER leased back as `how` says, with `why` kept on the job (nullopt: no
  // reason, for a job that was never sent anywhere). False when the job is no longer OWNER's.
  virtual Result<bool> release(std::int64_t job_id, const std::string& owner, Release how,
                               const std::optional<std::string>& why, std::int64_t now) = 0;
  // Gives every job OWNER leased back to the queue (a backend stopping).
  virtual Status release_all(const std::string& owner, std::int64_t now) = 0;
  // Those of job_ids that OWNER no longer holds (not being verified under its lease: a scored
  // item cancelled, or taken back after the lease expired): their verdicts
  // would be dropped, so a backend stops the work (LocalBackend: Pool::cancel).
  virtual Result<std::vector<std::int64_t>> not_held(const std::string& owner,
                                                     const std::vector<std::int64_t>& job_ids) = 0;

  // Crash recovery. Makes those of job_ids that are being verified under an owner matching
  // owner_glob (or under an expired lease) OWNER's, until expires_ms: a backend taking over the
  // work an earlier process of its daemon left running. Returns how many.
  virtual Result<std::int64_t> adopt(const std::vector<std::int64_t>& job_ids,
                                     const std::string& owner, const std::string& owner_glob,
                                     std::int64_t expires_ms, std::int64_t now) = 0;
  // Puts back in the queue the jobs being verified under an owner matching owner_glob or under
  // an expired lease, but those of keep_owner ("": none). Returns how many.
  virtual Result<std::int64_t> reclaim(const std::string& owner_glob, std::int64_t now,
                                       const std::string& keep_owner) = 0;

  // The job as the queue holds it now; nullopt if it has none.
  virtual Result<std::optional<QueuedJob>> job(std::int64_t job_id) = 0;
  // Whether the run was cancelled (its jobs end with whatever verifies them).
  virtual Result<bool> run_cancelled(std::int64_t run_id) = 0;
};

}  // namespace kforge::verify
