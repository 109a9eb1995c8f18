#pragma once
// The daemon's verifier thread: owns a database connection, the jobs' VerifyQueue on it and the
// verify backend (the local pool, or Slurm) that takes jobs from 'verify_queued'.
//
// With nothing to verify it sleeps in the backend's step for up to kIdleWait; notice_db_change()
// (the daemon's FileWatch on the database) and stop() wake it, so new samples are taken at once.

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
  // Any thread: the database's files changed: an idle backend looks at the queue now.
  void notice_db_change();
  static constexpr std::chrono::milliseconds kIdleWait{5'000};
  static constexpr std::chrono::milliseconds kBusyWait{200};
  bool running() const { return running_.load(); }
  verify::BackendStats stats() const;
  std::string last_error() const;

 private:
  void run(app::Config cfg, std::string owner, std::string owner_glob);

  Env& env_;
  std::atomic<bool> running_{true};
  std::atomic<bool> draining_{false};
  std::atomic<std::int64_t> grace_ms_{0};
  std::atomic<bool> idle_{false};             // the backend had nothing to do at its last step
  std::mutex backend_mu_;                     // guards backend_ against its destruction
  verify::VerifyBackend* backend_ = nullptr;  // while run() has one
  mutable std::mutex mu_;
  verify::BackendStats stats_;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace kforge::daemon
