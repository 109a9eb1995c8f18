#include "verifier_loop.hpp"

#include <spdlog/spdlog.h>

#include "kforge/app/config.hpp"

namespace kforge::daemon {

using std::chrono::milliseconds;

VerifierLoop::VerifierLoop(Parts parts, std::string config_path, verify::VerifierConfig cfg)
    : p_(parts),
      config_path_(std::move(config_path)),
      policy_(parts.env.clock(), "verifier"),
      cfg_(std::move(cfg)) {
  last_record_ = p_.env.clock().steady_now();
  record_devices(/*force=*/true);
}

void VerifierLoop::notice_db_change() {
  // Busy, it steps every kBusyWait anyway; waking it for every commit would only add steps.
  if (!idle_.load() && policy_.stop_requests() == 0) return;
  p_.backend.wake();
}

void VerifierLoop::request_reload() {
  reload_requested_ = true;
  p_.backend.wake();
}

void VerifierLoop::request_stop(milliseconds grace) {
  if (policy_.stop_requests() == 0) grace_ms_ = grace.count();
  policy_.request_stop();
  p_.backend.wake();
}

milliseconds VerifierLoop::next_wait() const {
  return p_.backend.idle() && !policy_.draining() ? kIdleWait : kBusyWait;
}

bool VerifierLoop::step() {
  if (policy_.begin_drain(milliseconds(grace_ms_.load()))) p_.backend.drain();
  if (policy_.drain_over(p_.backend.idle())) return false;
  // Idle: sleep until woken (a change of the database, a stop, a reload) or kIdleWait; the queue
  // answers "nothing" without a query while nobody has committed.
  const milliseconds wait = next_wait();
  idle_ = wait == kIdleWait;
  Status st = p_.backend.step(wait);
  idle_ = false;
  if (!st.ok()) {
    std::lock_guard l(p_.shared.mu);
    p_.shared.last_error = st.error().message;
  }
  policy_.after_step(st);  // a failure is logged and backed off
  record_devices(/*force=*/false);
  publish_stats();
  if (reload_requested_.exchange(false)) reload();
  return true;
}

void VerifierLoop::run() {
  while (step()) {
  }
}

Status VerifierLoop::finish() {
  auto st = p_.backend.stop();
  if (!st.ok()) spdlog::error("verifier: releasing jobs: {}", st.error().message);
  publish_stats();
  return st;
}

void VerifierLoop::publish_stats() {
  std::lock_guard l(p_.shared.mu);
  p_.shared.stats = p_.backend.stats();
}

// The pool's devices go to the database (verifier_devices) for `kforge status`: a device out of
// rotation is an alert there. Written when they change, looked at once a second.
void VerifierLoop::record_devices(bool force) {
  if (p_.local == nullptr) return;
  Clock& clock = p_.env.clock();
  if (!force && clock.steady_now() - last_record_ < std::chrono::seconds(1)) return;
  last_record_ = clock.steady_now();
  auto devices = p_.local->pool().devices();
  auto key = [](const std::vector<verify::DeviceStatus>& v) {
    std::string k;
    for (const auto& d : v)
      k += d.device + (d.in_rotation ? "+" : "-") + std::to_string(d.start_failures) + "/" +
           std::to_string(d.ready_workers) + "/" + d.reason + ";";
    return k;
  };
  if (!force && key(devices) == key(recorded_)) return;
  auto st = verify::replace_device_status(p_.db, devices, clock.wall_ms());
  if (!st.ok()) spdlog::warn("verifier: recording the devices' state: {}", st.error().message);
  recorded_ = std::move(devices);
}

void VerifierLoop::reload() {
  auto fresh = app::load_config(config_path_);
  if (!fresh.ok()) {
    spdlog::error("SIGHUP: verifier: keeping the current settings: {}", fresh.error().message);
    return;
  }
  if (fresh->verifier.backend != cfg_.backend)
    spdlog::warn("SIGHUP: verifier.backend changes at the next start, not on a reload");
  if (!verify::apply_reloadable(cfg_, fresh->verifier)) {
    spdlog::info("SIGHUP: verifier: no reloadable setting changed in {}", fresh->source);
    return;
  }
  p_.backend.reconfigure(cfg_);
  spdlog::info("SIGHUP: verifier: reloaded {}: {} s per sample, workers start within {} s",
               fresh->source, cfg_.timeout_s, cfg_.worker_start_timeout_s);
}

}  // namespace kforge::daemon
