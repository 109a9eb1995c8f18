#pragma once
// The daemon's verifier thread: owns a database connection, the jobs' VerifyQueue on it, the
// verify backend (the local pool, or Slurm) that takes jobs from 'verify_queued', and the
// VerifierLoop (verifier_loop.hpp) that steps it; everything but the thread itself is the loop's.
//
// A backend that cannot start is an alert for `kforge status` (device "verifier" in
// verifier_devices) and last_error() says why; generated samples then wait in the queue.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kforge/app/config.hpp"
#include "kforge/core/env.hpp"
#include "kforge/verify/backend.hpp"
#include "verifier_loop.hpp"

namespace kforge::daemon {

// The backend verifier.backend names, on `queue` (and its connection), its processes and time
// through env.
Result<std::unique_ptr<verify::VerifyBackend>> make_verify_backend(const app::Config& cfg,
                                                                   verify::VerifyQueue& queue,
                                                                   Env& env, std::string owner,
                                                                   const std::string& owner_glob);

class VerifierThread {
 public:
  // Starts the thread; the backend starts on it. config_path: what a reload loads (as
  // DaemonLoop's). Processes and time go through env (which must outlive the thread).
  VerifierThread(const app::Config& cfg, std::string config_path, std::string owner,
                 std::string owner_glob, Env& env = default_env());
  ~VerifierThread();  // stop(0)

  // Stops leasing and waits up to grace for samples being verified, then kills the rest and
  // gives their jobs back to 'verify_queued'.
  void stop(std::chrono::milliseconds grace);
  // Any thread: the database's files changed: an idle backend looks at the queue now.
  void notice_db_change();
  // Any thread (SIGHUP): the loop reloads its reloadable settings at its next step.
  void request_reload();
  bool running() const { return running_.load(); }
  verify::BackendStats stats() const;
  std::string last_error() const;

 private:
  void run(app::Config cfg, std::string config_path, std::string owner, std::string owner_glob);

  Env& env_;
  std::atomic<bool> running_{true};
  std::mutex loop_mu_;            // guards loop_ against its destruction, and the stop below
  VerifierLoop* loop_ = nullptr;  // while run() steps one
  bool stopping_ = false;         // stop() came (before the loop, perhaps)
  std::chrono::milliseconds grace_{0};
  mutable VerifierLoop::Shared shared_;
  std::thread thread_;
};

}  // namespace kforge::daemon
