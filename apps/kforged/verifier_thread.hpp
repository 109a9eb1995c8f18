#pragma once
// The daemon's verifier thread: owns a database connection, the jobs' VerifyQueue on it and the
// verify backend (the local pool, or Slurm) that takes jobs from 'verify_queued'.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kforge/app/config.hpp"
#include "kforge/core/env.hpp"
#include "kforge/verify/backend.hpp"

namespace kforge::daemon {

class VerifierThread {
 public:
  // Starts the thread; the pool starts on it. last_error() says why it could not start.
  // Processes and time go through env (which must outlive the thread).
  VerifierThread(const app::Config& cfg, std::string owner, std::string owner_glob,
                 Env& env = default_env());
  ~VerifierThread();  // stop(0)

  // Stops leasing and waits up to grace for samples being verified, then kills the rest and
  // gives their jobs back to 'verify_queued'.
  void stop(std::chrono::milliseconds grace);
  bool running() const { return running_.load(); }
  verify::BackendStats stats() const;
  std::string last_error() const;

 private:
  void run(app::Config cfg, std::string owner, std::string owner_glob);

  Env& env_;
  std::atomic<bool> running_{true};
  std::atomic<bool> draining_{false};
  std::atomic<std::int64_t> grace_ms_{0};
  mutable std::mutex mu_;
  verify::BackendStats stats_;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace kforge::daemon
