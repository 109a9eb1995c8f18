#include "verifier_thread.hpp"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/verify/local_backend.hpp"
#include "kforge/verify/slurm_backend.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::daemon {

VerifierThread::VerifierThread(const app::Config& cfg, std::string owner, std::string owner_glob,
                               Env& env)
    : env_(env),
      thread_(&VerifierThread::run, this, cfg, std::move(owner), std::move(owner_glob)) {}

VerifierThread::~VerifierThread() {
  stop(std::chrono::milliseconds(0));
}

void VerifierThread::notice_db_change() {
  if (!idle_.load() && !draining_.load()) return;  // busy: it steps every kBusyWait anyway
  std::lock_guard l(backend_mu_);
  if (backend_ != nullptr) backend_->wake();
}

void VerifierThread::stop(std::chrono::milliseconds grace) {
  if (!draining_.exchange(true)) grace_ms_ = grace.count();
  notice_db_change();
  if (thread_.joinable()) thread_.join();
}

verify::BackendStats VerifierThread::stats() const {
  std::lock_guard l(mu_);
  return stats_;
}

std::string VerifierThread::last_error() const {
  std::lock_guard l(mu_);
  return last_error_;
}

void VerifierThread::run(app::Config cfg, std::string owner, std::string owner_glob) {
  Clock& clock = env_.clock();
  auto db = app::open_store(cfg);
  // The pool's devices go to the database (verifier_devices) for `kforge status`: a device out
  // of rotation, or a pool that cannot start at all (device "verifier"), is an alert there.
  auto record = [&](const std::vector<verify::DeviceStatus>& devices) {
    if (!db.ok()) return;
    auto st = verify::replace_device_status(**db, devices, clock.wall_ms());
    if (!st.ok()) spdlog::warn("verifier: recording the devices' state: {}", st.error().message);
  };
  auto fail = [&](const std::string& msg) {
    spdlog::error("verifier: {}; generated samples wait in verify_queued", msg);
    verify::DeviceStatus d;
    d.device = "verifier";
    d.in_rotation = false;
    d.start_failures = 1;
    d.reason = "cannot start: " + msg;
    record({d});
    std::lock_guard l(mu_);
    last_error_ = msg;
    running_ = false;
  };
  if (!db.ok()) return fail(db.error().message);
  pipeline::JobsVerifyQueue queue(**db);  // outlives the backend, whose stop() releases jobs
  std::unique_ptr<verify::VerifyBackend> backend;
  verify::LocalBackend* local = nullptr;  // the local pool, whose devices are recorded
  if (cfg.verifier.backend == "slurm") {
    verify::SlurmBackendOptions opts;
    opts.verifier = cfg.verifier;
    if (cfg.source != "(defaults)") opts.config_file = std::filesystem::absolute(cfg.source);
    if (!cfg.llm.api_key_env.empty()) opts.drop_env.push_back(cfg.llm.api_key_env);
    opts.env = &env_;
    auto s = verify::SlurmBackend::create(queue, clock, std::move(opts), owner, owner_glob);
    if (!s.ok()) return fail(s.error().message);
    backend = std::move(*s);
  } else {
    verify::PoolOptions opts;
    opts.config = cfg.verifier;
    opts.env = &env_;
    auto s = verify::LocalBackend::create(queue, clock, std::move(opts), owner, owner_glob);
    if (!s.ok()) return fail(s.error().message);
    local = s->get();
    backend = std::move(*s);
  }
  spdlog::info("verifier: {}", backend->describe());
  {
    std::lock_guard l(backend_mu_);
    backend_ = backend.get();
  }
  std::vector<verify::DeviceStatus> recorded;
  if (local) {
    recorded = local->pool().devices();
    record(recorded);
  }
  auto last_record = clock.steady_now();
  std::chrono::steady_clock::time_point deadline{};
  bool drain_started = false;
  int errors = 0;
  while (true) {
    if (draining_ && !drain_started) {
      drain_started = true;
      backend->drain();
      deadline = clock.steady_now() + std::chrono::milliseconds(grace_ms_.load());
    }
    if (drain_started && (backend->idle() || clock.steady_now() >= deadline)) break;
    // Idle: sleep until woken (a change of the database, a stop) or kIdleWait; the queue
    // answers "nothing" without a query while nobody has committed.
    const bool idle = backend->idle() && !drain_started;
    idle_ = idle;
    auto st = backend->step(idle ? kIdleWait : kBusyWait);
    idle_ = false;
    if (!st.ok()) {
      ++errors;
      spdlog::error("verifier step failed ({} in a row): {}", errors, st.error().message);
      {
        std::lock_guard l(mu_);
        last_error_ = st.error().message;
      }
      clock.sleep_for(std::chrono::milliseconds(std::min(100 * errors, 5000)));
    } else {
      errors = 0;
    }
    if (local && clock.steady_now() - last_record >= std::chrono::seconds(1)) {
      auto devices = local->pool().devices();
      auto key = [](const std::vector<verify::DeviceStatus>& v) {
        std::string k;
        for (const auto& d : v)
          k += d.device + (d.in_rotation ? "+" : "-") + std::to_string(d.start_failures) + "/" +
               std::to_string(d.ready_workers) + "/" + d.reason + ";";
        return k;
      };
      if (key(devices) != key(recorded)) {
        record(devices);
        recorded = std::move(devices);
      }
      last_record = clock.steady_now();
    }
    std::lock_guard l(mu_);
    stats_ = backend->stats();
  }
  {
    std::lock_guard l(backend_mu_);
    backend_ = nullptr;
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
