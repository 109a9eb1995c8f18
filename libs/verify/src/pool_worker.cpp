#include "pool_impl.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kforge/core/fs.hpp"

namespace kforge::verify {

namespace fs = std::filesystem;

std::vector<std::string> Pool::Impl::sample_env(const Slot& s) const {
  return sandbox->environment(devices[s.device].device, s.cache_dir, omp_threads);
}

double Pool::Impl::memory_fraction(const Slot& s) const {
  if (devices[s.device].device.vendor == Vendor::cpu) return 0;
  if (cfg.gpu_memory_fraction > 0) return cfg.gpu_memory_fraction;
  int per_device = 0;
  // The device's workers: a lent slot's sample has the same cap (docs/VERIFIER.md, "Lent
  // slots": the bound on the device's memory).
  for (const auto& o : slots) per_device += o.device == s.device && !o.lent ? 1 : 0;
  return 0.9 / std::max(1, per_device);
}

std::string Pool::Impl::gpu_vendor(const Slot& s) const {
  switch (devices[s.device].device.vendor) {
    case Vendor::nvidia:
      return "nvidia";
    case Vendor::amd:
      return "amd";
    case Vendor::cpu:
      break;
  }
  return "cpu";
}

void Pool::Impl::start_worker(Slot& s) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
    worker_start_failed(s, std::string("socketpair: ") + std::strerror(errno));
    return;
  }
  int log = ::open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SpawnOptions spec;
  std::string preload, pypath;
  for (const auto& m : cfg.preload) preload += (preload.empty() ? "" : ",") + m;
  for (const auto& p : cfg.python_path) pypath += (pypath.empty() ? "" : ":") + p;
  spec.argv = {python,
               "-s",
               "-u",
               harness,
               "worker",
               "--control-fd",
               "3",
               "--preload=" + preload,
               "--python-path=" + pypath};
  if (probes_at_start(s)) spec.argv.push_back("--probe-gpu");
  spec.env = sample_env(s);
  spec.fds = {{sv[1], 3}};
  if (log >= 0) spec.fds.push_back({log, 2});
  auto pid = env->spawn(spec);
  ::close(sv[1]);
  if (log >= 0) ::close(log);
  if (!pid.ok()) {
    ::close(sv[0]);
    worker_start_failed(s, pid.error().message);
    return;
  }
  ++stats.worker_starts;
  if (s.ever_ready || s.backoff_ms > 0) ++stats.worker_restarts;
  s.worker_pid = *pid;
  s.ctl_fd = sv[0];
  sys::set_nonblocking(s.ctl_fd);
  s.state = WorkerState::starting;
  s.start_deadline =
      now() + milliseconds(static_cast<std::int64_t>(cfg.worker_start_timeout_s * 1000));
}

// One probe per device (issue 54): the driver makes a GPU's contexts largely one at a time, so
// 16 probes at once took 2-3 s of every worker's start on an H200; one probe, made while the
// others import, says the same of the device.
bool Pool::Impl::probes_at_start(Slot& s) {
  auto& d = devices[s.device];
  s.probing = false;
  if (!cfg.probe_gpu || d.device.vendor == Vendor::cpu) return false;
  bool again = s.ever_ready || s.backoff_ms > 0;  // a restart probes for itself, as before
  if (!again && (d.probe_ok || d.prober >= 0)) return false;
  if (!d.probe_ok && d.prober < 0) d.prober = s.index;
  s.probing = true;
  return true;
}

bool Pool::Impl::usable(const Slot& s) const {
  const auto& d = devices[s.device];
  return s.state == WorkerState::ready &&
         (d.probe_ok || !cfg.probe_gpu || d.device.vendor == Vendor::cpu);
}

void Pool::Impl::probe_failed(Slot& s, const std::string& why) {
  const bool relied_on = !devices[s.device].probe_ok;
  const std::size_t device = s.device;
  const int index = s.index;
  worker_start_failed(s, why);
  if (!relied_on) return;
  for (auto& o : slots) {
    if (o.index == index || o.device != device || o.probing) continue;
    if (o.state != WorkerState::starting && o.state != WorkerState::ready) continue;
    worker_start_failed(o, why + " (worker " + std::to_string(index) + "'s probe, for the device)");
  }
}

std::string Pool::Impl::worker_log_tail(const Slot& s) const {
  auto text = read_file(s.log_path);
  if (!text.ok()) return "";
  std::string t = last_lines(*text, 6, 1500);
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

void Pool::Impl::stop_worker(Slot& s) {
  if (s.worker_pid > 0) {
    kill_group(*env, s.worker_pid);
    reap_later.push_back(s.worker_pid);
    reap();
  }
  s.worker_pid = -1;
  sys::close_fd(s.ctl_fd);
}

// Killed processes are reaped without blocking: one stuck in the kernel (a GPU driver call)
// must not stall the pool.
void Pool::Impl::reap() {
  std::vector<pid_t> left;
  for (pid_t p : reap_later)
    if (!env->wait(p, WaitMode::no_hang)) left.push_back(p);
  reap_later = std::move(left);
}

void Pool::Impl::worker_start_failed(Slot& s, const std::string& why) {
  drop_spare(s);
  stop_worker(s);
  auto& d = devices[s.device];
  if (d.prober == s.index) d.prober = -1;  // its restart probes (probes_at_start)
  ++d.start_failures;
  s.backoff_ms = std::min(30000, s.backoff_ms == 0 ? 500 : s.backoff_ms * 2);
  s.next_start = now() + milliseconds(s.backoff_ms);
  s.state = WorkerState::down;
  spdlog::warn("verifier: worker {} on {} failed to start ({} in a row): {}", s.index, d.device.id,
               d.start_failures, why);
  if (d.in_rotation && d.start_failures >= cfg.max_start_failures) {
    d.in_rotation = false;
    d.reason = why;
    spdlog::error("verifier: ALERT: {} taken out of rotation after {} worker start failures: {}",
                  d.device.id, d.start_failures, why);
    for (auto& o : slots)
      if (o.device == s.device) {
        stop_worker(o);
        o.state = WorkerState::dead_device;
      }
  }
}

// The worker died or wedged after it had been ready.
void Pool::Impl::worker_lost(Slot& s, const std::string& why) {
  spdlog::warn("verifier: worker {} on {} lost: {}; restarting", s.index,
               devices[s.device].device.id, why);
  drop_spare(s);
  if (s.run) {
    if (s.run->pid > 0) kill_group(*env, s.run->pid);
    if (!s.run->exited && s.run->killed == KillReason::none) {
      s.run->killed = KillReason::worker_lost;
      s.run->lost = why;
    }
    s.run->exited = true;
  }
  stop_worker(s);
  s.state = WorkerState::down;
  s.next_start = now();
  if (s.run) finish_run(s);
}

void Pool::Impl::handle_ready(Slot& s, const WorkerEvent& ev) {
  // The worker made a probe context (one not asked, or without torch, carries a note).
  if (!ev.probe.contains("note")) ++stats.gpu_probes;
  if (!ev.probe_ok) {
    probe_failed(s, "GPU probe failed: " + ev.probe.dump());
    return;
  }
  auto& d = devices[s.device];
  if (s.probing) {
    d.probe_ok = true;
    if (d.prober == s.index) d.prober = -1;
  }
  s.state = WorkerState::ready;
  s.ever_ready = true;
  s.backoff_ms = 0;
  d.start_failures = 0;
  spdlog::debug("verifier: worker {} on {} ready (pid {}, modules {}, probe {}, triton key {})",
                s.index, d.device.id, s.worker_pid, ev.modules.dump(), ev.probe.dump(),
                ev.triton_key.dump());
  if (!warned_missing_modules) {
    std::string missing;
    for (const char* m : {"torch", "triton"})
      if (ev.modules.contains(m) &&
          (!ev.modules[m].is_string() ||
           ev.modules[m].get<std::string>().rfind("import failed", 0) == 0))
        missing += (missing.empty() ? "" : ", ") + std::string(m);
    if (!missing.empty()) {
      warned_missing_modules = true;
      spdlog::warn(
          "verifier: {} lacks {}: samples that need them end in error, flagged "
          "'environment' and not repaired; set verifier.python to a Python with torch and "
          "triton",
          python, missing);
    }
  }
}

void Pool::Impl::handle_event(Slot& s, const WorkerEvent& ev) {
  if (ev.kind == WorkerEventKind::ready) {
    handle_ready(s, ev);
    return;
  }
  auto id = static_cast<std::uint64_t>(ev.id);
  if (s.spare && id == s.spare->wid) {
    if (ev.kind == WorkerEventKind::started) s.spare->pid = static_cast<int>(ev.pid);
    if (ev.kind == WorkerEventKind::finished) spare_died(s);
    return;
  }
  if (!s.run || id != s.run->wid) return;
  if (ev.kind == WorkerEventKind::started) {
    s.run->pid = static_cast<int>(ev.pid);
    if (!s.run->prestarted) s.run->started = now();
    // Killed (cancelled) before its process was known: its group goes now.
    if (s.run->killed != KillReason::none && s.run->pid > 0)
      sandbox->kill_run(s.run->pid, s.own_uid ? static_cast<int>(s.run->uid) : -1);
  } else if (ev.kind == WorkerEventKind::finished) {
    s.run->exited = true;
    s.run->wait_status = ev.status;
    s.run->maxrss_kb = ev.maxrss_kb;
    s.run->cpu_ms = ev.cpu_ms;
  }
}

void Pool::Impl::read_control(Slot& s) {
  char buf[65536];
  while (s.ctl_fd >= 0) {
    ssize_t n = ::recv(s.ctl_fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      if (s.state == WorkerState::starting)
        worker_start_failed(s, "worker exited before it was ready: " + worker_log_tail(s));
      else
        worker_lost(s, "control channel closed: " + worker_log_tail(s));
      return;
    }
    // Each event read through its declaration (worker_event.hpp): one that is not declared is a
    // worker this kforge cannot trust, named, never an event read with defaults or dropped.
    auto ev = parse_worker_event(std::string_view(buf, static_cast<std::size_t>(n)));
    if (!ev.ok()) {
      std::string why = ev.error().message + " (the harness and kforge were installed apart?)";
      if (s.state == WorkerState::starting)
        worker_start_failed(s, why);
      else
        worker_lost(s, why);
      return;
    }
    handle_event(s, *ev);
  }
}

// Sends a message with file descriptors to the slot's worker (closing them here).
Status Pool::Impl::send_to_worker(Slot& s, const WorkerOp& op, const std::vector<int>& fds) {
  auto msg = worker_op_text(op, fds.size());
  if (!msg.ok()) {
    for (int fd : fds) ::close(fd);
    return fail(msg.error());
  }
  std::string text = std::move(*msg);
  char cbuf[CMSG_SPACE(sizeof(int) * 4)];
  if (fds.size() > 4) return fail("io", "cannot send a message with more than 4 descriptors");
  std::memset(cbuf, 0, sizeof cbuf);
  iovec iov{text.data(), text.size()};
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = cbuf;
  mh.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
  cmsghdr* cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  if (fds.empty()) mh.msg_control = nullptr, mh.msg_controllen = 0;  // exit: no descriptors
  ssize_t n = ::sendmsg(s.ctl_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
  int err = errno;
  for (int fd : fds) ::close(fd);
  if (n == static_cast<ssize_t>(text.size())) return {};
  return fail("io", std::string("cannot send a request: ") + std::strerror(n < 0 ? err : EMSGSIZE));
}

bool Pool::Impl::prestarting(const Slot& s) const {
  return warm && cfg.prestart && s.state == WorkerState::ready && devices[s.device].in_rotation;
}

// Starts the child that will run the slot's next sample: it applies the sandbox and creates
// its CUDA context now, while the slot's current sample still runs.
void Pool::Impl::prepare_spare(Slot& s) {
  std::vector<int> child;
  auto run = new_process(s, Start::prestart, child);
  if (!run) return;
  nlohmann::json prep = {{"sandbox", sandbox_json(s, *run)},
                         {"python_path", cfg.python_path},
                         {"gpu", devices[s.device].device.vendor != Vendor::cpu},
                         {"cuda_sync", std::string(to_string(cfg.cuda_sync))},
                         {"gpu_vendor", gpu_vendor(s)}};
  auto text = worker_file_text(WorkerFile::prep, prep);  // as worker_ops.txt declares it
  auto st = text.ok() ? write_file(run->dir + "/prep.json", *text) : Status(text.error());
  if (!st.ok()) {
    spdlog::error("verifier: cannot prepare {}: {}", run->dir, st.error().message);
    for (int fd : child) ::close(fd);
    drop_process(*run);
    return;
  }
  WorkerOp op{WorkerOpKind::prepare, static_cast<std::int64_t>(run->wid), run->dir + "/prep.json"};
  auto sent = send_to_worker(s, op, child);
  s.spare = std::move(run);
  if (!sent.ok()) worker_lost(s, sent.error().message);
}

void Pool::Impl::drop_spare(Slot& s) {
  if (!s.spare) return;
  sandbox->kill_run(s.spare->pid, s.own_uid ? static_cast<int>(s.spare->uid) : -1);
  drop_process(*s.spare);
  s.spare.reset();
}

// The prestarted child ended before it got a sample.
void Pool::Impl::spare_died(Slot& s) {
  SampleProcess& r = *s.spare;
  drain_fd(r.err_fd, r, Stream::err);
  drain_fd(r.res_fd, r, Stream::result);
  std::string why = "exited before it was given a sample";
  auto j = nlohmann::json::parse(r.result.substr(0, r.result.find('\n')), nullptr, false);
  if (j.is_object()) {  // its report says why (the sandbox it could not set up), if it reads
    auto report = parse_harness_report(j, ReportOrigin::harness);
    why += ": " + (report.ok() ? report->detail : report.error().message);
  }
  std::string tail = last_lines(r.err.text(), 4, 800);
  if (!tail.empty()) why += "; stderr: " + tail;
  drop_spare(s);
  ++s.spare_failures;
  spdlog::warn("verifier: worker {} on {}: prestarted child {} ({} in a row)", s.index,
               devices[s.device].device.id, why, s.spare_failures);
  s.next_spare = now() + milliseconds(std::min(30000, 250 << std::min(s.spare_failures, 7)));
  if (s.spare_failures >= 3) {
    s.spare_failures = 0;
    worker_start_failed(s, "prestarted children keep failing: " + why);
  }
}

}  // namespace kforge::verify
