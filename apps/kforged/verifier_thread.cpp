#include "verifier_thread.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/verify/local_backend.hpp"
#include "kforge/verify/slurm_backend.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::daemon {

Result<std::unique_ptr<verify::VerifyBackend>> make_verify_backend(const app::Config& cfg,
                                                                   verify::VerifyQueue& queue,
                                                                   Env& env, std::string owner,
                                                                   const std::string& owner_glob) {
  if (cfg.verifier.backend == "slurm") {
    verify::SlurmBackendOptions opts;
    opts.verifier = cfg.verifier;
    if (cfg.source != "(defaults)") opts.config_file = std::filesystem::absolute(cfg.source);
    if (!cfg.llm.api_key_env.empty()) opts.drop_env.push_back(cfg.llm.api_key_env);
    opts.env = &env;
    KF_TRY(auto s,
           verify::SlurmBackend::create(queue, std::move(opts), std::move(owner), owner_glob));
    return std::unique_ptr<verify::VerifyBackend>(std::move(s));
  }
  verify::PoolOptions opts;
  opts.config = cfg.verifier;
  opts.env = &env;
  KF_TRY(auto s,
         verify::LocalBackend::create(queue, std::move(opts), std::move(owner), owner_glob));
  return std::unique_ptr<verify::VerifyBackend>(std::move(s));
}

VerifierThread::VerifierThread(const app::Config& cfg, std::string config_path, std::string owner,
                               std::string owner_glob, Env& env)
    : env_(env),
      thread_(&VerifierThread::run, this, cfg, std::move(config_path), std::move(owner),
              std::move(owner_glob)) {}

VerifierThread::~VerifierThread() {
  stop(std::chrono::milliseconds(0));
}

void VerifierThread::notice_db_change() {
  std::lock_guard l(loop_mu_);
  if (loop_ != nullptr) loop_->notice_db_change();
}

void VerifierThread::request_reload() {
  std::lock_guard l(loop_mu_);
  if (loop_ != nullptr) loop_->request_reload();
}

void VerifierThread::stop(std::chrono::milliseconds grace) {
  {
    std::lock_guard l(loop_mu_);
    if (!stopping_) {
      stopping_ = true;
      grace_ = grace;
      if (loop_ != nullptr) loop_->request_stop(grace);
    }
  }
  if (thread_.joinable()) thread_.join();
}

verify::BackendStats VerifierThread::stats() const {
  std::lock_guard l(shared_.mu);
  return shared_.stats;
}

std::string VerifierThread::last_error() const {
  std::lock_guard l(shared_.mu);
  return shared_.last_error;
}

void VerifierThread::run(app::Config cfg, std::string config_path, std::string owner,
                         std::string owner_glob) {
  auto db = app::open_store(cfg);
  // A backend that cannot start is an alert for `kforge status` (device "verifier").
  auto fail = [&](const std::string& msg) {
    spdlog::error("verifier: {}; generated samples wait in verify_queued", msg);
    if (db.ok()) {
      verify::DeviceStatus d;
      d.device = "verifier";
      d.in_rotation = false;
      d.start_failures = 1;
      d.reason = "cannot start: " + msg;
      auto st = verify::replace_device_status(**db, {d}, env_.clock().wall_ms());
      if (!st.ok()) spdlog::warn("verifier: recording the devices' state: {}", st.error().message);
    }
    std::lock_guard l(shared_.mu);
    shared_.last_error = msg;
    running_ = false;
  };
  if (!db.ok()) return fail(db.error().message);
  pipeline::RequeuePolicy requeue;
  requeue.max_requeues = cfg.verifier.max_requeues;
  requeue.backoff_ms = static_cast<std::int64_t>(cfg.verifier.requeue_backoff_s * 1000);
  // outlives the backend, whose stop() releases jobs
  pipeline::JobsVerifyQueue queue(**db, requeue);
  if (!cfg.score.listen.empty()) queue.set_score_share(cfg.score.share);
  auto backend = make_verify_backend(cfg, queue, env_, owner, owner_glob);
  if (!backend.ok()) return fail(backend.error().message);
  spdlog::info("verifier: {}", (*backend)->describe());
  VerifierLoop loop(
      {**db, **backend, env_, shared_, dynamic_cast<verify::LocalBackend*>(backend->get())},
      std::move(config_path), cfg.verifier);
  {
    std::lock_guard l(loop_mu_);
    loop_ = &loop;
    if (stopping_) loop.request_stop(grace_);
  }
  loop.run();
  {
    std::lock_guard l(loop_mu_);
    loop_ = nullptr;
  }
  (void)loop.finish();
  running_ = false;
}

}  // namespace kforge::daemon
