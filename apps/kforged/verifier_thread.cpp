#include "verifier_thread.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "kforge/pipeline/slurm_backend.hpp"

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
  std::unique_ptr<pipeline::VerifyBackend> backend;
  if (cfg.verifier.backend == "slurm") {
    pipeline::SlurmBackendOptions opts;
    opts.verifier = cfg.verifier;
    if (cfg.source != "(defaults)") opts.config_file = std::filesystem::absolute(cfg.source);
    if (!cfg.llm.api_key_env.empty()) opts.drop_env.push_back(cfg.llm.api_key_env);
    auto s =
        pipeline::SlurmBackend::create(**db, system_clock(), std::move(opts), owner, owner_glob);
    if (!s.ok()) return fail(s.error().message);
    backend = std::move(*s);
  } else {
    verify::PoolOptions opts;
    opts.config = cfg.verifier;
    auto s =
        pipeline::VerifyStage::create(**db, system_clock(), std::move(opts), owner, owner_glob);
    if (!s.ok()) return fail(s.error().message);
    backend = std::move(*s);
  }
  spdlog::info("verifier: {}", backend->describe());
  std::chrono::steady_clock::time_point deadline{};
  bool drain_started = false;
  int errors = 0;
  while (true) {
    if (draining_ && !drain_started) {
      drain_started = true;
      backend->drain();
      deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms_.load());
    }
    if (drain_started && (backend->idle() || std::chrono::steady_clock::now() >= deadline)) break;
    auto st = backend->step(std::chrono::milliseconds(200));
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
    stats_ = backend->stats();
  }
  auto st = backend->stop();
  if (!st.ok()) spdlog::error("verifier: releasing jobs: {}", st.error().message);
  {
    std::lock_guard l(mu_);
    stats_ = backend->stats();
  }
  running_ = false;
}

}  // namespace kforge::daemon
