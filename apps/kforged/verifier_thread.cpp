#include "verifier_thread.hpp"

#include <spdlog/spdlog.h>

namespace kforge::daemon {

VerifierThread::VerifierThread(const app::Config& cfg, std::string owner, std::string owner_glob)
    : thread_(&VerifierThread::run, this, cfg, std::move(owner), std::move(owner_glob)) {}

VerifierThread::~VerifierThread() {
  stop(std::chrono::milliseconds(0));
}

void VerifierThread::stop(std::chrono::milliseconds grace) {
  if (!draining_.exchange(true)) grace_ms_ = grace.count();
  if (thread_.joinable()) thread_.join();
}

pipeline::VerifyStageStats VerifierThread::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

std::string VerifierThread::last_error() const {
  std::lock_guard l(mu_);
  return last_error_;
}

void VerifierThread::run(app::Config cfg, std::string owner, std::string owner_glob) {
  auto fail = [&](const std::string& msg) {
    spdlog::error("verifier: {}; generated samples wait in verify_queued", msg);
    std::lock_guard l(mu_);
    last_error_ = msg;
    running_ = false;
  };
  auto db = app::open_store(cfg);
  if (!db.ok()) return fail(db.error().message);
  verify::PoolOptions opts;
  opts.config = cfg.verifier;
  auto stage =
      pipeline::VerifyStage::create(**db, system_clock(), std::move(opts), owner, owner_glob);
  if (!stage.ok()) return fail(stage.error().message);
  spdlog::info("verifier: {} slots", (*stage)->pool().slots());
  std::chrono::steady_clock::time_point deadline{};
  bool drain_started = false;
  int errors = 0;
  while (true) {
    if (draining_ && !drain_started) {
      drain_started = true;
      (*stage)->drain();
      deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms_.load());
    }
    if (drain_started && ((*stage)->idle() || std::chrono::steady_clock::now() >= deadline)) break;
    auto st = (*stage)->step(std::chrono::milliseconds(200));
    if (!st.ok()) {
      ++errors;
      spdlog::error("verifier step failed ({} in a row): {}", errors, st.error().message);
      {
        std::lock_guard l(mu_);
        last_error_ = st.error().message;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100 * errors, 5000)));
    } else {
      errors = 0;
    }
    std::lock_guard l(mu_);
    stats_ = (*stage)->stats();
  }
  auto st = (*stage)->stop();
  if (!st.ok()) spdlog::error("verifier: releasing jobs: {}", st.error().message);
  {
    std::lock_guard l(mu_);
    stats_ = (*stage)->stats();
  }
  running_ = false;
}

}  // namespace kforge::daemon
