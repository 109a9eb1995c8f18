#include "daemon_loop.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kforge/core/log.hpp"
#include "kforge/pipeline/metrics.hpp"
#include "kforge/pipeline/progress.hpp"
#include "kforge/pipeline/search_index.hpp"

namespace kforge::daemon {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

std::string status_line(store::Db& db, const pipeline::Scheduler& s, Clock& clock) {
  auto progress = pipeline::collect_active_progress(db, clock.wall_ms());
  std::string line;
  if (progress.ok()) {
    for (const auto& p : *progress) {
      // As kforge status shows it: the jobs that ended (verification included), then where the
      // others are; a rate and an ETA only while LLM work is left.
      char buf[320];
      std::snprintf(buf, sizeof buf,
                    "%s %lld/%lld jobs ended (%.0f%%), %lld past the LLM stages, %lld at the "
                    "verifier",
                    p.run.tag.c_str(), static_cast<long long>(p.ended),
                    static_cast<long long>(p.total), std::floor(p.ended_fraction() * 100 + 1e-9),
                    static_cast<long long>(p.past_llm), static_cast<long long>(p.verifying));
      line += (line.empty() ? "" : "; ") + std::string(buf);
      if (p.remaining > 0) {
        std::snprintf(buf, sizeof buf, ", %.0f/min", p.per_minute);
        line += buf;
        if (p.eta_s) line += " ETA " + std::to_string(*p.eta_s) + "s";
      }
    }
  }
  if (line.empty()) line = "idle: no active runs";
  line += "; " + std::to_string(s.in_flight()) + " in flight";
  if (s.draining()) line = "stopping: " + line;
  return line;
}

DaemonLoop::DaemonLoop(Parts parts, std::string config_path, app::Config cfg,
                       std::filesystem::path prompts_dir,
                       std::unique_ptr<pipeline::PromptLibrary> prompts)
    : p_(parts),
      config_path_(std::move(config_path)),
      prompts_dir_(std::move(prompts_dir)),
      watchdog_(std::chrono::duration_cast<milliseconds>(parts.notifier.watchdog_interval())),
      started_(parts.clock.steady_now()),
      cfg_(std::move(cfg)),
      policy_(parts.clock, "") {
  libraries_.push_back(std::move(prompts));
  auto now = p_.clock.steady_now();
  last_watchdog_ = last_status_ = last_log_ = last_index_ = now;
  last_metrics_ = std::chrono::steady_clock::time_point{};
  std::lock_guard l(p_.shared.mu);
  p_.shared.last_step_wall_ms = p_.clock.wall_ms();
}

void DaemonLoop::request_reload() {
  reload_requested_ = true;
  p_.sched.wake();
}

void DaemonLoop::request_stop() {
  policy_.request_stop();
  p_.sched.wake();
}

void DaemonLoop::notice_db_change() {
  db_changed_ = true;
  // A busy loop steps on its completions anyway; waking it for every commit would only add steps.
  if (idle_now_.load()) p_.sched.wake();
}

bool DaemonLoop::idle() const {
  return p_.sched.in_flight() == 0 && !p_.sched.draining() && policy_.stop_requests() == 0 &&
         !reload_requested_.load() && policy_.consecutive_errors() == 0;
}

bool DaemonLoop::may_sleep() {
  if (!watched_ || !idle()) return false;
  auto now = p_.clock.steady_now();
  if (now >= next_look_) return false;
  if (auto due = p_.sched.next_due_ms(); due && *due <= p_.clock.wall_ms()) return false;
  if (!db_changed_.exchange(false)) return true;
  // Written: by another connection (work for us), or only by this one (its heartbeat)?
  auto v = p_.db.data_version();
  if (!v.ok() || *v != data_version_) return false;
  return true;
}

void DaemonLoop::notify(const std::string& msg) {
  auto r = p_.notifier.notify(msg);
  if (!r.ok() && r.error().is_transient())
    spdlog::debug("{}", r.error().message);
  else if (!r.ok())
    spdlog::warn("{}", r.error().message);
}

bool DaemonLoop::step() {
  // A quiet step (an idle loop with no reason to look for work) skips only the scheduler; what
  // is shown stays fresh on it: the STATUS line (active runs only) and, when served, /metrics
  // (trigger-kept counts), both cheap.
  const bool quiet = may_sleep();
  Status step;
  if (quiet) {
    ++quiet_steps_;
  } else {
    if (watched_ && idle()) {
      // Looking for work: whatever another connection committed is seen from here on.
      if (auto v = p_.db.data_version(); v.ok()) data_version_ = *v;
      p_.sched.notice_change();
      next_look_ = p_.clock.steady_now() + kIdleLook;
    }
    if (auto r = p_.sched.step(); !r.ok()) step = std::move(r).error();
  }
  if (step.ok()) {
    std::lock_guard l(p_.shared.mu);
    p_.shared.last_step_wall_ms = p_.clock.wall_ms();
    p_.shared.in_flight = p_.sched.in_flight();
    p_.shared.draining = p_.sched.draining();
  } else {
    std::lock_guard l(p_.shared.mu);
    p_.shared.last_error = step.error().message;
  }
  policy_.after_step(step);  // a failure is logged and backed off
  if (step.ok() && p_.heartbeat != nullptr)
    if (auto hb = p_.heartbeat->beat(); !hb.ok()) spdlog::warn("heartbeat: {}", hb.error().message);
  feed_watchdog(step.ok());
  index_search();
  if (!quiet || !cfg_.daemon.http_listen.empty()) refresh_metrics();
  report_status();
  if (reload_requested_.exchange(false)) reload();
  if (policy_.begin_drain(milliseconds(cfg_.daemon.shutdown_grace_ms))) start_drain();
  idle_now_ = watched_ && idle();
  return !policy_.drain_over(p_.sched.in_flight() == 0);
}

milliseconds DaemonLoop::next_wait() const {
  auto wait = milliseconds(cfg_.pipeline.idle_poll_ms);
  if (watched_ && idle() && db_changed_.load()) return milliseconds(0);
  if (watched_ && idle()) {
    // Nothing to poll for: sleep until the first timer is due; a change wakes the wait earlier.
    const auto now = p_.clock.steady_now();
    const std::int64_t wall = p_.clock.wall_ms();
    wait = std::chrono::duration_cast<milliseconds>(next_look_ - now);
    if (auto due = p_.sched.next_due_ms()) wait = std::min(wait, milliseconds(*due - wall));
    if (p_.heartbeat != nullptr)
      wait = std::min(wait, milliseconds(p_.heartbeat->next_beat_ms() - wall));
    if (p_.notifier.enabled())  // systemd shows the STATUS line: keep it on its interval
      wait = std::min(wait, std::chrono::duration_cast<milliseconds>(
                                last_status_ + milliseconds(cfg_.daemon.status_interval_ms) - now));
    wait = std::max(wait, milliseconds(1));
  }
  if (watchdog_.count() > 0) wait = std::min(wait, watchdog_);
  if (p_.sched.draining()) wait = std::min(wait, milliseconds(100));
  return wait;
}

void DaemonLoop::run() {
  while (step()) p_.sched.wait(next_wait());
}

// The watchdog is fed only while steps succeed: a wedged or failing loop gets restarted.
void DaemonLoop::feed_watchdog(bool step_ok) {
  if (watchdog_.count() <= 0 || !step_ok) return;
  auto now = p_.clock.steady_now();
  if (now - last_watchdog_ < watchdog_) return;
  notify("WATCHDOG=1");
  last_watchdog_ = now;
}

void DaemonLoop::refresh_metrics() {
  auto now = p_.clock.steady_now();
  if (now - last_metrics_ < 1s) return;
  pipeline::MetricsSnapshot m;
  auto st = pipeline::collect_db_metrics(p_.db, m);
  if (!st.ok()) spdlog::warn("metrics: {}", st.error().message);
  m.scheduler = p_.sched.stats();
  m.llm = p_.gateway.stats();
  m.in_flight = p_.sched.in_flight();
  m.draining = p_.sched.draining();
  m.uptime_s = std::chrono::duration<double>(now - started_).count();
  std::string text = pipeline::render_prometheus(m);
  std::lock_guard l(p_.shared.mu);
  p_.shared.metrics = std::move(text);
  last_metrics_ = now;
}

// The answers stored since the last batch, into the search index: every kIndexEvery while
// working, and at once when the loop goes idle after storing some (so an idle daemon leaves no
// tail for the viewer to read directly). A failure is logged; the next batch takes them.
void DaemonLoop::index_search() {
  const auto now = p_.clock.steady_now();
  const std::uint64_t stored = p_.sched.stats().checkpoints;
  const bool went_idle = stored != checkpoints_at_index_ && idle();
  if (now - last_index_ < kIndexEvery && !went_idle) return;
  last_index_ = now;
  checkpoints_at_index_ = stored;
  auto r = pipeline::index_answers(p_.db, kIndexBatchIds);
  if (!r.ok())
    spdlog::warn("search index: {}", r.error().message);
  else if (!r->caught_up())
    last_index_ = {};  // more than a batch behind: the next step takes the next batch
}

void DaemonLoop::report_status() {
  auto now = p_.clock.steady_now();
  if (now - last_status_ < milliseconds(cfg_.daemon.status_interval_ms)) return;
  std::string line = status_line(p_.db, p_.sched, p_.clock);
  if (p_.notifier.enabled()) notify("STATUS=" + line);
  if (now - last_log_ >= 30s) {
    spdlog::info("{}", line);
    last_log_ = now;
  }
  last_status_ = now;
}

void DaemonLoop::reload() {
  auto fresh = app::load_config(config_path_);
  if (!fresh.ok()) {
    spdlog::error("SIGHUP: keeping the current configuration: {}", fresh.error().message);
    return;
  }
  auto lib = pipeline::PromptLibrary::load(prompts_dir_);
  if (!lib.ok()) {
    spdlog::error("SIGHUP: keeping the current prompts: {}", lib.error().message);
    p_.sched.reconfigure(fresh->pipeline);
  } else {
    libraries_.push_back(std::make_unique<pipeline::PromptLibrary>(std::move(*lib)));
    p_.sched.reconfigure(fresh->pipeline, libraries_.back().get());
  }
  p_.gateway.reload_limits(fresh->llm);
  cfg_.pipeline = fresh->pipeline;
  cfg_.daemon.status_interval_ms = fresh->daemon.status_interval_ms;
  setup_logging(fresh->log.level, cfg_.log.file);
  spdlog::info("SIGHUP: reloaded {}: up to {} stage calls in flight, {} LLM requests",
               fresh->source, cfg_.pipeline.max_in_flight, fresh->llm.max_in_flight);
}

void DaemonLoop::start_drain() {
  p_.sched.drain();
  spdlog::info("stopping: no new leases; {} calls in flight get up to {} ms", p_.sched.in_flight(),
               cfg_.daemon.shutdown_grace_ms);
  notify("STOPPING=1\nSTATUS=stopping: " + std::to_string(p_.sched.in_flight()) +
         " calls in flight");
}

}  // namespace kforge::daemon
