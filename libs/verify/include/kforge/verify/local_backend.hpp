#pragma once
// LocalBackend: the daemon's hand-off from the LLM stages to the verifier pool on its own host
// (verifier.backend: local).
//
// Jobs whose LLM stages are done wait in the VerifyQueue. The backend leases them one at a time
// (owner and expiry, like the LLM side) while the pool accepts work, so a backlog stays in the
// database, bounded by the pool's queue, and the LLM side slows down through
// PipelineConfig::verify_backlog. Each verdict and the job's move on are written in one
// transaction (VerifyQueue::store_verdict): done; the next repair round when not verified and the
// run has rounds left; back to the queue when flagged `infrastructure` (the verifier failed, not
// the sample). A dead daemon's jobs are reclaimed at start or when their lease expires.
//
// A job that stops being the backend's while the pool holds it (a scored item cancelled when its
// client went away or its deadline passed, a lease taken back) is looked for at every step (at
// most every kHeldCheckMs, VerifyQueue::not_held) and cancelled in the pool (Pool::cancel): not
// yet started, it never starts; running, its process group is killed; nothing of it is stored.
//
// Threads: not thread-safe. Everything, the pool included, lives on the thread that calls
// step(); that thread must outlive the backend (fresh-mode samples die with their thread).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "kforge/core/clock.hpp"
#include "kforge/verify/backend.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/queue.hpp"

namespace kforge::verify {

class LocalBackend : public VerifyBackend {
 public:
  // queue: on this thread's own connection; it must outlive the backend. owner: this daemon's
  // lease owner; owner_glob matches the owners of earlier processes of this daemon (their jobs
  // being verified are taken back). Time is options.env's clock.
  static Result<std::unique_ptr<LocalBackend>> create(VerifyQueue& queue, PoolOptions options,
                                                      std::string owner,
                                                      const std::string& owner_glob);
  ~LocalBackend() override;

  // Leases what the pool can take, runs the pool for at most max_wait, stores verdicts.
  Status step(std::chrono::milliseconds max_wait) override;
  // Stops leasing; step() then only finishes what is running.
  void drain() override { draining_ = true; }
  bool idle() const override;
  // Destroys the pool (killing what runs) and gives unfinished jobs back to the queue.
  Status stop() override;

  // Any thread: wakes the pool's wait.
  void wake() override;
  // The pool's per-sample limits and the lease's length, for samples leased from now on.
  void reconfigure(const VerifierConfig& config) override;
  const BackendStats& stats() const override { return stats_; }
  std::string describe() const override;
  Pool& pool() { return *pool_; }

  static constexpr std::int64_t kHeldCheckMs = 100;

 private:
  LocalBackend(VerifyQueue& queue, Clock& clock, std::string owner)
      : queue_(queue), clock_(clock), owner_(std::move(owner)) {}
  Result<bool> lease_one();
  // Cancels in the pool the samples whose jobs are no longer ours.
  Status stop_lost_work();
  void finish(std::uint64_t token, const VerifyJob& job, VerifyResult&& r);
  std::int64_t lease_ms() const;

  VerifyQueue& queue_;
  Clock& clock_;
  std::string owner_;
  std::unique_ptr<Pool> pool_;
  double timeout_s_ = 120;
  bool draining_ = false;
  std::int64_t last_renew_ms_ = 0;
  BackendStats stats_;
  Status deferred_error_;
  // The samples in the pool, by a token of ours (a job leased again while its earlier sample
  // still ends has two): the job and the pool's sample id.
  struct Held {
    std::int64_t job_id = 0;
    std::uint64_t sample = 0;
  };
  std::map<std::uint64_t, Held> held_;
  std::uint64_t next_token_ = 0;
  std::int64_t last_held_check_ms_ = 0;
};

}  // namespace kforge::verify
