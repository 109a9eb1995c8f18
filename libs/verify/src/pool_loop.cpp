#include "pool_impl.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/resource.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kforge/core/fs.hpp"
#include "kforge/verify/cost.hpp"

namespace kforge::verify {

namespace fs = std::filesystem;

// One step: the phases in order (pool.hpp's contract). Callbacks run last, so they may submit().
void Pool::Impl::step(milliseconds max_wait) {
  SteadyTime t = now();
  start_due_workers(t);
  if (!any_device_in_rotation()) fail_queue("no verifier device in rotation (see the log)");
  // Prestart the children that will take the next samples.
  for (auto& s : slots)
    if (prestarting(s) && !s.spare && t >= s.next_spare) prepare_spare(s);
  dispatch_queue();
  bool watching = watching_runs();  // runs were in flight during the wait
  wait_and_read(t, max_wait);
  t = now();
  reap_exits();
  // Worker start deadlines.
  for (auto& s : slots)
    if (s.state == WorkerState::starting && t >= s.start_deadline)
      worker_start_failed(s, "not ready within " +
                                 std::to_string(static_cast<int>(cfg.worker_start_timeout_s)) +
                                 " s: " + worker_log_tail(s));
  if (rss_watch() && watching && t >= next_memory_poll) watch_memory(t);
  check_runs(t);
  if (!reap_later.empty()) reap();
  samples.run_callbacks();
}

void Pool::Impl::start_due_workers(SteadyTime t) {
  if (!warm) return;
  for (auto& s : slots)
    if (s.state == WorkerState::down && devices[s.device].in_rotation && t >= s.next_start &&
        may_start(s))
      start_worker(s);
}

// A lent slot's worker starts once its device's workers are up: it does not slow their start.
bool Pool::Impl::may_start(const Slot& s) const {
  return !s.lent || std::none_of(slots.begin(), slots.end(), [&s](const Slot& o) {
    return !o.lent && o.device == s.device && o.state == WorkerState::starting;
  });
}

void Pool::Impl::fail_queue(const std::string& why) {
  while (!samples.empty()) verdicts.fail_job(samples.take(), why);
}

void Pool::Impl::dispatch_queue() {
  for (auto& s : slots) {
    if (samples.empty()) break;
    if (s.run || !devices[s.device].in_rotation) continue;
    // A ready worker whose device's probe has not said ok yet takes none (its prestarted child
    // may already make its context meanwhile: it runs nothing of a sample's).
    if (warm && !usable(s)) continue;
    if (s.lent && !may_lend(s)) continue;
    if (!dispatch(s, samples.take_next(cfg.order, now(), long_room())) || !s.lent) continue;
    int running = 0;
    for (const auto& o : slots) running += o.lent && o.device == s.device && o.run ? 1 : 0;
    ++stats.lent_runs;
    stats.lent_max = std::max(stats.lent_max, running);
  }
}

LongRoom Pool::Impl::long_room() const {
  LongRoom room;
  for (const auto& s : slots) room.running += s.run && s.run->job.is_long ? 1 : 0;
  int n = 0;  // the workers: lent slots are not counted
  for (const auto& s : slots) n += s.lent ? 0 : 1;
  room.at_once = long_at_once(n);
  room.spacing = long_spacing(n);
  return room;
}

int Pool::Impl::lend_slots(std::size_t device, int workers) const {
  if (!timing_on(device) || workers <= 0) return 0;
  if (cfg.timing.lend != kAutoLend) return cfg.timing.lend;
  return std::max(1, workers / 4);
}

// A lent slot takes a sample while its device has more samples waiting for their timing
// section than lent slots running: each waiting sample lends its slot once. A sample that says
// it waits and does not (the sample's code writes the line itself) gains at most the device's
// lent slots: there are no others.
bool Pool::Impl::may_lend(const Slot& s) const {
  int waiting = 0, lent = 0;
  const SteadyTime t = now();
  for (const auto& o : slots) {
    if (o.device != s.device || !o.run) continue;
    const SampleProcess& r = *o.run;
    bool waits = r.waiting && t - r.wait_since >= kLendAfter;
    waiting += waits && !r.exited && r.killed == KillReason::none ? 1 : 0;
    lent += o.lent ? 1 : 0;
  }
  return waiting > lent;
}

std::optional<SteadyTime> Pool::Impl::next_lend(SteadyTime t) const {
  if (samples.empty()) return std::nullopt;
  std::optional<SteadyTime> soonest;
  for (const auto& o : slots)
    if (o.run && o.run->waiting && !o.run->exited) {
      SteadyTime at = o.run->wait_since + kLendAfter;
      if (at > t && (!soonest || at < *soonest)) soonest = at;
    }
  return soonest;
}

bool Pool::Impl::watching_runs() const {
  return std::any_of(slots.begin(), slots.end(), [](const Slot& s) { return s.run != nullptr; });
}

bool Pool::Impl::rss_watch() const {
  return cfg.memory_cap_mb > 0 && !(cgroups && cgroups->available());
}

// What the wait polls, and which slot and stream each entry is.
struct Pool::Impl::PollSet {
  std::vector<pollfd> pfds;
  std::vector<std::pair<Slot*, Watched>> owners;  // what each pfds entry is
  void add(int fd, short events, Slot* s, Watched what) {
    pfds.push_back({fd, events, 0});
    owners.emplace_back(s, what);
  }
};

Pool::Impl::PollSet Pool::Impl::poll_set() {
  PollSet ps;
  for (auto& s : slots) {
    if (s.ctl_fd >= 0) ps.add(s.ctl_fd, POLLIN, &s, Watched::control);
    if (s.run) {
      const std::pair<int, Watched> fds[3] = {{s.run->out_fd, Watched::run_out},
                                              {s.run->err_fd, Watched::run_err},
                                              {s.run->res_fd, Watched::run_result}};
      for (const auto& [fd, what] : fds)
        if (fd >= 0) ps.add(fd, POLLIN, &s, what);
      if (s.run->go_fd >= 0 && !s.run->go_pending.empty())
        ps.add(s.run->go_fd, POLLOUT, &s, Watched::run_go);
    }
    if (s.spare) {  // what a prestarted child prints while it waits belongs to its sample
      const std::pair<int, Watched> fds[2] = {{s.spare->out_fd, Watched::spare_out},
                                              {s.spare->err_fd, Watched::spare_err}};
      for (const auto& [fd, what] : fds)
        if (fd >= 0) ps.add(fd, POLLIN, &s, what);
    }
  }
  if (wake_fd >= 0) ps.add(wake_fd, POLLIN, nullptr, Watched::wake);
  return ps;
}

// How long the wait may last: up to max_wait, and no later than the next deadline, worker
// start, memory poll or (fresh mode) exit check; not at all with callbacks waiting.
milliseconds Pool::Impl::wait_time(SteadyTime t, milliseconds max_wait) const {
  SteadyTime wake = t + max_wait;
  bool watching = false;
  for (auto& s : slots) {
    if (s.run) {
      wake = std::min(wake, s.run->deadline);
      watching = true;
    }
    if (s.state == WorkerState::starting) wake = std::min(wake, s.start_deadline);
    if (s.state == WorkerState::down && warm && devices[s.device].in_rotation && may_start(s))
      wake = std::min(wake, s.next_start);
  }
  if (watching && rss_watch()) wake = std::min(wake, next_memory_poll);
  // A wait that may lend a slot soon (kLendAfter).
  if (auto lend = next_lend(t)) wake = std::min(wake, *lend);
  // Fresh children are reaped by polling waitpid: cap the wait so exits are seen promptly.
  bool fresh_running = !warm && watching;
  if (fresh_running) wake = std::min(wake, t + milliseconds(20));
  auto wait_ms =
      std::max<std::int64_t>(0, std::chrono::duration_cast<milliseconds>(wake - t).count());
  if (samples.has_results()) wait_ms = 0;
  return milliseconds(wait_ms);
}

void Pool::Impl::wait_and_read(SteadyTime t, milliseconds max_wait) {
  PollSet ps = poll_set();
  std::vector<pollfd>& pfds = ps.pfds;
  int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(wait_time(t, max_wait).count()));
  if (n <= 0) return;
  for (std::size_t i = 0; i < pfds.size(); ++i) {
    if (!(pfds[i].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR))) continue;
    Slot* s = ps.owners[i].first;
    // Each fd is checked again: an earlier entry's handling may have closed it.
    switch (ps.owners[i].second) {
      case Watched::control:
        read_control(*s);
        break;
      case Watched::run_go:
        if (s->run && s->run->go_fd == pfds[i].fd) flush_go(*s->run);
        break;
      case Watched::spare_out:
        if (s->spare && s->spare->out_fd == pfds[i].fd)
          drain_fd(s->spare->out_fd, *s->spare, Stream::out);
        break;
      case Watched::spare_err:
        if (s->spare && s->spare->err_fd == pfds[i].fd)
          drain_fd(s->spare->err_fd, *s->spare, Stream::err);
        break;
      case Watched::run_out:
        if (s->run && s->run->out_fd == pfds[i].fd) drain_fd(s->run->out_fd, *s->run, Stream::out);
        break;
      case Watched::run_err:
        if (s->run && s->run->err_fd == pfds[i].fd) drain_fd(s->run->err_fd, *s->run, Stream::err);
        break;
      case Watched::run_result:
        if (s->run && s->run->res_fd == pfds[i].fd)
          drain_fd(s->run->res_fd, *s->run, Stream::result);
        break;
      case Watched::wake: {
        std::uint64_t count = 0;
        (void)!::read(wake_fd, &count, sizeof count);
        break;
      }
    }
  }
}

// Reap: workers that died, fresh samples that exited.
void Pool::Impl::reap_exits() {
  for (auto& s : slots) {
    if (warm && s.worker_pid > 0) {
      if (auto ended = env->wait(s.worker_pid, WaitMode::no_hang)) {
        int st = ended->status;
        s.worker_pid = -1;
        std::string why = (WIFSIGNALED(st) ? signal_name(WTERMSIG(st))
                                           : "exit code " + std::to_string(WEXITSTATUS(st)));
        read_control(s);  // events it sent before dying
        if (s.state == WorkerState::starting)
          worker_start_failed(
              s, "worker ended (" + why + ") before it was ready: " + worker_log_tail(s));
        else if (s.state == WorkerState::ready)
          worker_lost(s, "worker ended (" + why + "): " + worker_log_tail(s));
      }
    }
    if (!warm && s.run && !s.run->exited && s.run->pid > 0) {
      if (auto ended = env->wait(s.run->pid, WaitMode::no_hang)) {
        s.run->exited = true;
        s.run->wait_status = ended->status;
        s.run->maxrss_kb = ended->maxrss_kb;
        s.run->cpu_ms = ended->cpu_ms;
      }
    }
  }
}

// The memory watch where no cgroup caps a run: the resident memory of each run's processes.
void Pool::Impl::watch_memory(SteadyTime t) {
  next_memory_poll = t + milliseconds(cfg.memory_poll_ms);
  auto procs = sys::scan_procs();
  for (auto& s : slots) {
    if (!s.run || s.run->exited || s.run->pid <= 0 || s.run->killed != KillReason::none) continue;
    std::int64_t rss = 0;
    int uid = s.own_uid ? static_cast<int>(s.run->uid) : -1;
    for (const auto& p : procs)
      if (sandbox->counts_for_run(p, s.run->pid, uid)) rss += p.rss_kb;
    s.run->peak_rss_kb = std::max(s.run->peak_rss_kb, rss);
    if (rss > cfg.memory_cap_mb * 1024) kill_run(s, KillReason::memory_rss);
  }
}

// Deadlines, wedged workers, finished runs.
void Pool::Impl::check_runs(SteadyTime t) {
  for (auto& s : slots) {
    if (!s.run) continue;
    SampleProcess& r = *s.run;
    if (!r.exited && r.killed == KillReason::none && t >= r.deadline)
      kill_run(s, KillReason::timeout);
    if (warm && !r.exited) {
      bool never_started = r.pid <= 0 && t - r.dispatched > milliseconds(30000);
      bool stuck_after_kill = r.killed != KillReason::none && t - r.kill_time > milliseconds(10000);
      if (never_started || stuck_after_kill) {
        worker_lost(
            s, never_started ? "no 'started' within 30 s" : "no 'finished' within 10 s of a kill");
        continue;
      }
    }
    if (r.exited) finish_run(s);
  }
}

}  // namespace kforge::verify
