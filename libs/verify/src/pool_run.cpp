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

RunPlace Pool::Impl::place(const Slot& s, const SampleProcess& r) const {
  return {r.dir, s.cache_dir, r.cgroup, s.own_uid ? static_cast<int>(r.uid) : -1};
}

nlohmann::json Pool::Impl::sandbox_json(const Slot& s, const SampleProcess& r) const {
  return sandbox->spec(place(s, r));
}

// For the skip-launch run in a process of its own: the buffers each kernel's launches wrote in
// the real run (its coverage facts), which the skipped launches fill with all-ones bytes.
static nlohmann::json skip_outputs(const Sample& job) {
  if (!job.mutant || !job.primary || !job.primary->harness || !job.primary->harness->coverage)
    return nlohmann::json::object();
  return job.primary->harness->coverage->outputs;
}

std::vector<std::string> Pool::Impl::targets_of(const Sample& job) const {
  if (job.mutant) return {};
  std::vector<std::string> out = cfg.cross_compile;
  for (const auto& t : job.request.cross_compile)
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  return out;
}

namespace {
// The most the out-of-bounds check (verifier.bounds_check) may take, sent with the request. It
// runs inside the real run's deadline (usually 0.2 s: docs/BENCHMARKS.md), which is not
// lengthened for it: a sample's timeout stays what the configuration says.
constexpr double kBoundsCheckTimeS = 10;
}  // namespace

bool Pool::Impl::timing_on(std::size_t device) const {
  return cfg.timing.on_for(devices[device].device.vendor);
}

double Pool::Impl::timeout_of(const Slot& s, const Sample& job) const {
  double t = job.request.timeout_s > 0 ? job.request.timeout_s : cfg.timeout_s;
  // The cross-compile runs before the real run's report goes out: its time is added.
  if (!targets_of(job).empty()) t += cfg.cross_compile_timeout_s;
  // A mutant run in a process of its own gets the kernel battery's budget on top.
  if (job.mutant && cfg.mutant_check && cfg.kernel_mutants > 0) t += cfg.kernel_mutant_time_s;
  // So does the timing: the wait for the device, the budget and its set-up (the graphs).
  if ((timing_on(s.device) || job.request.require_speedup > 0) && !job.mutant)
    t += cfg.timing.wait_s + 2 * cfg.timing.budget_s + 5;
  return t;
}

nlohmann::json Pool::Impl::timing_json(const Slot& s, const Sample& job) const {
  const auto& t = cfg.timing;
  const auto& d = devices[s.device];
  bool on = timing_on(s.device) || job.request.require_speedup > 0;
  if (!on || job.mutant || d.lock_gate.empty()) return {{"enabled", false}};
  return {{"enabled", true},
          {"budget_s", t.budget_s},
          {"min_reps", t.min_reps},
          {"max_reps", t.max_reps},
          {"target", t.target},
          {"min_speedup", std::max(t.min_speedup, job.request.require_speedup)},
          {"wait_s", t.wait_s},
          {"gather_s", t.gather_s},
          {"min_kernel_share", t.min_kernel_share},
          {"max_input_fraction", t.max_input_fraction},
          // The device has lent slots: the harness says when it waits for its section.
          {"lend", std::any_of(slots.begin(), slots.end(),
                               [&s](const Slot& o) { return o.lent && o.device == s.device; })}};
}

namespace {
nlohmann::json mutants_void(const Sample& job) {
  if (!job.mutant || !job.primary || !job.primary->harness) return nullptr;
  const auto& why = job.primary->harness->mutants_void;
  return why ? nlohmann::json(*why) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json Pool::Impl::request_json(const Slot& s, const SampleProcess& r) const {
  const Sample& job = r.job;
  const auto& d = devices[s.device];
  nlohmann::json lock = nullptr;
  if (!d.lock_gate.empty())
    lock = {{"gate", d.lock_gate},
            {"rw", d.lock_rw},
            {"queue", d.lock_queue},
            // The watcher thread (gpulock.py) steps the sample out between launches for a
            // timing sample: only where one may come.
            {"watch", timing_on(s.device) || timing_seen}};
  return {{"code", job.request.code.value_or("")},
          {"timing", timing_json(s, job)},
          {"gpu_lock", lock},
          {"cross_compile", targets_of(job)},
          {"cross_compile_timeout_s", cfg.cross_compile_timeout_s},
          {"kernel_wrapper", job.request.kernel_wrapper.value_or("")},
          {"unitest_code", job.request.unitest_code.value_or("")},
          {"key", job.request.key},
          {"report_version", harness_report_version()},
          {"mutant", job.mutant},
          // The real run's decision that no mutant run's result counts (its kernel faulted in
          // the bounds replay): the mutant runs' controls void every result with it.
          {"mutants_void", mutants_void(job)},
          {"skip_outputs", skip_outputs(job)},
          {"mutant_run", cfg.mutant_check && !job.mutant ? std::string(to_string(cfg.mutant_run))
                                                         : std::string("off")},
          {"mutants", cfg.mutant_check ? cfg.mutants : std::vector<std::string>{}},
          {"kernel_mutants",
           {{"count", cfg.mutant_check ? cfg.kernel_mutants : 0},
            {"time_s", cfg.kernel_mutant_time_s}}},
          {"bounds_check", cfg.bounds_check && !job.mutant},
          {"bounds_check_time_s", kBoundsCheckTimeS},
          {"autotune", std::string(to_string(cfg.autotune))},
          {"gpu_memory_fraction", memory_fraction(s)},
          {"cuda_sync", std::string(to_string(cfg.cuda_sync))},
          {"gpu_vendor", gpu_vendor(s)},
          {"python_path", cfg.python_path},
          {"preload", cfg.preload},
          {"fresh", !warm},
          {"sandbox", sandbox_json(s, r)}};
}

// A sample process's directory, cgroup and pipes (the read ends kept, the write ends returned in
// `child`: stdout, stderr, result and, for a prestarted child, the go channel's far end).
std::unique_ptr<SampleProcess> Pool::Impl::new_process(Slot& s, Start start,
                                                       std::vector<int>& child) {
  const bool prestart = start == Start::prestart;
  auto run = std::make_unique<SampleProcess>();
  run->wid = samples.new_id();
  run->prestarted = prestart;
  run->out = CappedBuffer(static_cast<std::size_t>(cfg.output_cap_kb) * 1024);
  run->err = CappedBuffer(static_cast<std::size_t>(cfg.output_cap_kb) * 1024);
  run->dir = run_root + "/s" + std::to_string(s.index) + "-" + std::to_string(++run_counter);
  if (s.own_uid) {
    run->uid = s.uids[s.uid_turn % s.uids.size()];
    ++s.uid_turn;
  }
  std::error_code ec;
  fs::create_directories(run->dir, ec);
  if (ec) {
    spdlog::error("verifier: cannot prepare {}: {}", run->dir, ec.message());
    return nullptr;
  }
  sandbox->prepare_dir(place(s, *run));
  if (cgroups && cgroups->available()) {
    auto cg = cgroups->create("run-" + std::to_string(s.index) + "-" + std::to_string(run_counter),
                              cfg.memory_cap_mb * 1024 * 1024, cfg.max_processes);
    if (cg.ok()) run->cgroup = *cg;
  }
  int p_out[2], p_err[2], p_res[2], p_go[2] = {-1, -1};
  bool ok = ::pipe2(p_out, O_CLOEXEC) == 0;
  ok = ok && ::pipe2(p_err, O_CLOEXEC) == 0;
  ok = ok && ::pipe2(p_res, O_CLOEXEC) == 0;
  // The go channel is a socket so that writing to a child that died raises no SIGPIPE.
  if (ok && prestart) ok = ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p_go) == 0;
  if (!ok) {
    spdlog::error("verifier: cannot make pipes for {}: {}", run->dir, std::strerror(errno));
    drop_process(*run);
    return nullptr;
  }
  run->out_fd = p_out[0];
  run->err_fd = p_err[0];
  run->res_fd = p_res[0];
  run->go_fd = p_go[0];
  for (int fd : {run->out_fd, run->err_fd, run->res_fd, run->go_fd})
    if (fd >= 0) sys::set_nonblocking(fd);
  child = {p_out[1], p_err[1], p_res[1]};
  if (prestart) child.push_back(p_go[1]);
  return run;
}

// Whatever a run holds outside its process: cgroup, directory, pipes.
void Pool::Impl::drop_process(SampleProcess& r) {
  if (!r.cgroup.empty()) cgroups->destroy(r.cgroup), r.cgroup.clear();
  for (int* fd : {&r.out_fd, &r.err_fd, &r.res_fd, &r.go_fd}) sys::close_fd(*fd);
  std::error_code ec;
  fs::remove_all(r.dir, ec);
  if (ec) spdlog::warn("verifier: cannot remove {}: {}", r.dir, ec.message());
}

void Pool::Impl::flush_go(SampleProcess& r) {
  while (r.go_fd >= 0 && !r.go_pending.empty()) {
    ssize_t n =
        ::send(r.go_fd, r.go_pending.data(), r.go_pending.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0) {  // the child is gone; its end is reported by the worker
      r.go_pending.clear();
      break;
    }
    r.go_pending.erase(0, static_cast<std::size_t>(n));
  }
  if (r.go_pending.empty()) sys::close_fd(r.go_fd);  // EOF: the request is complete
}

// The sample's clock starts now.
void Pool::Impl::arm(SampleProcess& r) {
  r.dispatched = now();
  r.started = r.dispatched;
  r.deadline = r.dispatched + milliseconds(static_cast<std::int64_t>(r.timeout_s * 1000));
}

bool Pool::Impl::dispatch(Slot& s, Sample job) {
  spdlog::debug("verifier: {} starts on slot {}{}", job.request.key, s.index,
                job.mutant ? " (its mutant run)" : "");
  if (s.spare) {
    // The prestarted child takes the sample: the request goes down its go channel, as
    // worker_ops.txt declares it (`file request`).
    SampleProcess& r = *s.spare;
    r.job = std::move(job);
    r.timeout_s = timeout_of(s, r.job);
    auto text = worker_file_text(WorkerFile::request, request_json(s, r));
    if (!text.ok()) {
      Sample back = std::move(r.job);
      drop_spare(s);
      verdicts.fail_job(std::move(back), text.error().message);
      return false;
    }
    s.run = std::move(s.spare);
    arm(*s.run);
    s.run->go_pending = std::move(*text);
    flush_go(*s.run);
    if (prestarting(s)) prepare_spare(s);
    return true;
  }
  std::vector<int> child;
  auto run = new_process(s, Start::now, child);
  if (!run) {
    verdicts.fail_job(std::move(job), "cannot prepare a sample directory under " + run_root);
    return false;
  }
  run->job = std::move(job);
  run->timeout_s = timeout_of(s, run->job);
  auto req = worker_file_text(WorkerFile::request, request_json(s, *run));
  auto st = req.ok() ? write_file(run->dir + "/request.json", *req) : Status(req.error());
  if (!st.ok()) {
    spdlog::error("verifier: cannot prepare {}: {}", run->dir, st.error().message);
    for (int fd : child) ::close(fd);
    drop_process(*run);
    verdicts.fail_job(std::move(run->job), "cannot prepare the sample directory " + run->dir +
                                               ": " + st.error().message);
    return false;
  }
  arm(*run);
  if (warm) {
    WorkerOp op{WorkerOpKind::run, static_cast<std::int64_t>(run->wid), run->dir + "/request.json"};
    s.run = std::move(run);
    if (auto sent = send_to_worker(s, op, child); !sent.ok()) {
      worker_lost(s, sent.error().message);
      return false;
    }
    if (prestarting(s) && !s.spare) prepare_spare(s);
  } else {
    SpawnOptions spec;
    spec.argv = {
        python,        "-s", "-u", harness, "fresh", "--request", run->dir + "/request.json",
        "--result-fd", "3"};
    spec.env = sample_env(s);
    spec.fds = {{child[0], 1}, {child[1], 2}, {child[2], 3}};
    auto pid = env->spawn(spec);
    for (int fd : child) ::close(fd);
    if (!pid.ok()) {
      s.run = std::move(run);
      s.run->exited = true;
      s.run->err.append(pid.error().message.data(), pid.error().message.size());
      finish_run(s);
      return false;
    }
    run->pid = *pid;
    s.run = std::move(run);
  }
  return true;
}

void Pool::Impl::drain_fd(int& fd, SampleProcess& r, Stream which) {
  char buf[65536];
  while (fd >= 0) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {
      sys::close_fd(fd);
      return;
    }
    auto len = static_cast<std::size_t>(n);
    if (which == Stream::out) {
      r.out.append(buf, len);
    } else if (which == Stream::err) {
      r.err.append(buf, len);
    } else if (r.result.size() + len <= (32u << 20)) {
      r.result.append(buf, len);
      if (!r.first_line_seen && any_lent) read_lend_lines(r);
      if (!r.first_line_seen) watch_first_line(r);
    } else {
      r.result_overflow = true;
    }
  }
}

// The lines of a timing sample that waits for the device ({"lend": "wait"}) and whose section
// began or which gave up ({"lend": "back"}), written by the harness (timing.py) before the real
// run's report; read as they come. Anything else on the line, or another value, is not one.
void Pool::Impl::read_lend_lines(SampleProcess& r) {
  static constexpr std::string_view kLine = "{\"lend\": \"";
  for (auto nl = r.result.find('\n', r.lend_scan); nl != std::string::npos;
       nl = r.result.find('\n', r.lend_scan)) {
    std::string_view line = std::string_view(r.result).substr(r.lend_line, nl - r.lend_line);
    r.lend_line = r.lend_scan = nl + 1;
    if (line.substr(0, kLine.size()) != kLine) continue;
    auto rest = line.substr(kLine.size());
    if (rest == "wait\"}" && !r.waiting) r.waiting = true, r.wait_since = now();
    if (rest == "back\"}") r.waiting = false;
  }
  r.lend_scan = r.result.size();  // a long line (the report) is searched once
}

// The real run's report has arrived; if the mutant run follows in the same process, it gets
// a deadline of its own, as it would in a process of its own.
void Pool::Impl::watch_first_line(SampleProcess& r) {
  auto nl = r.result.rfind('\n');
  if (nl == std::string::npos) return;
  // The guard's lines may come first (split_result_lines): the first report is what counts.
  auto lines = split_result_lines(std::string_view(r.result).substr(0, nl + 1));
  if (lines.reports.empty()) return;
  r.first_line_seen = true;
  r.waiting = false;  // its timing is over
  auto report = parse_harness_report(lines.reports.front(), ReportOrigin::harness);
  if (!report.ok() || !report->mutant_phase) return;
  r.mutant_phase = true;
  r.primary_done = now();
  // The kernel battery's budget comes on top of the mutant run's own timeout.
  double budget = cfg.mutant_check && cfg.kernel_mutants > 0 ? cfg.kernel_mutant_time_s : 0;
  if (r.killed == KillReason::none)
    r.deadline =
        r.primary_done + milliseconds(static_cast<std::int64_t>((r.timeout_s + budget) * 1000));
}

void Pool::Impl::kill_run(Slot& s, KillReason why) {
  SampleProcess& r = *s.run;
  if (r.killed != KillReason::none) return;
  r.killed = why;
  r.kill_time = now();
  if (!r.cgroup.empty()) cgroups->destroy(r.cgroup), r.cgroup.clear();
  sandbox->kill_run(r.pid, s.own_uid ? static_cast<int>(r.uid) : -1);
}

}  // namespace kforge::verify
