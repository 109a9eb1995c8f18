#pragma once
// VerifyBackend: what the daemon's verifier thread drives. A backend takes jobs from a
// VerifyQueue (queue.hpp), verifies them somewhere, and stores their verdicts through it: the
// local pool (local_backend.hpp) or Slurm array jobs (slurm_backend.hpp), chosen by
// verifier.backend.

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "kforge/core/result.hpp"
#include "kforge/verify/config.hpp"

namespace kforge::verify {

struct BackendStats {
  std::uint64_t leased = 0;
  std::uint64_t stored = 0;
  std::uint64_t requeued = 0;   // infrastructure failures, back to verify_queued
  std::uint64_t lost = 0;       // verdicts for jobs no longer ours (cancelled or reclaimed)
  std::uint64_t cancelled = 0;  // samples stopped in the pool: their jobs were no longer ours
  std::map<std::string, std::uint64_t> by_verdict;
  std::uint64_t verified = 0;   // passed with no flag
  std::uint64_t to_repair = 0;  // verdicts that sent their job to a repair round
};

class VerifyBackend {
 public:
  virtual ~VerifyBackend() = default;
  virtual Status step(std::chrono::milliseconds max_wait) = 0;
  virtual void drain() = 0;
  virtual bool idle() const = 0;
  virtual Status stop() = 0;
  virtual const BackendStats& stats() const = 0;
  virtual std::string describe() const = 0;  // for the log: slots, or the cluster it submits to
  // Any thread: a step() waiting returns now (the queue may have new jobs, or a stop is asked).
  // A backend that polls on its own intervals may ignore it.
  virtual void wake() {}
  // A reload (SIGHUP): takes what of `config` a running backend can (apply_reloadable() in
  // config.hpp); the rest waits for a restart.
  virtual void reconfigure(const VerifierConfig& config) = 0;
};

}  // namespace kforge::verify
