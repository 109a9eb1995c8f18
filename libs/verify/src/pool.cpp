#include "kforge/verify/pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <thread>

#include "kforge/core/fs.hpp"
#include "kforge/core/paths.hpp"
#include "sandbox.hpp"
#include "sys.hpp"

namespace kforge::verify {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

Result<std::string> find_harness(const VerifierConfig& config) {
  if (!config.harness.empty()) {
    if (!fs::exists(config.harness))
      return fail("config", "verifier.harness: " + config.harness + ": no such file");
    return config.harness;
  }
  // The entry script; the kforge_harness package it imports lies beside it.
  const std::string script = "harness/kforge-harness.py";
  if (auto dir = find_data_dir(script)) return (*dir / script).string();
  auto src = source_dir() / "libs" / "verify" / script;
  if (fs::exists(src)) return src.string();
  return fail("config", "the verifier harness (" + script +
                            ") is not installed; set verifier.harness or KFORGE_DATA_DIR");
}

namespace {

// Keeps the first and the last `cap` bytes of a stream and counts the rest.
class CappedBuffer {
 public:
  explicit CappedBuffer(std::size_t cap = 65536) : cap_(cap) {}
  void append(const char* p, std::size_t n) {
    total_ += n;
    if (head_.size() < cap_) {
      std::size_t take = std::min(n, cap_ - head_.size());
      head_.append(p, take);
      p += take;
      n -= take;
    }
    if (n == 0) return;
    tail_.append(p, n);
    if (tail_.size() > 2 * cap_) tail_.erase(0, tail_.size() - cap_);
  }
  std::string text() const {
    if (tail_.empty()) return head_;
    std::string t = tail_.size() > cap_ ? tail_.substr(tail_.size() - cap_) : tail_;
    std::uint64_t dropped = total_ - head_.size() - t.size();
    if (dropped == 0) return head_ + t;
    return head_ + "\n[kforge: " + std::to_string(dropped) + " bytes not kept]\n" + t;
  }
  std::string tail(std::size_t n) const {
    std::string all = tail_.empty() ? head_ : text();
    return all.size() > n ? all.substr(all.size() - n) : all;
  }
  std::uint64_t total() const { return total_; }
  bool truncated() const { return total_ > head_.size() + std::min(tail_.size(), cap_); }

 private:
  std::size_t cap_;
  std::string head_, tail_;
  std::uint64_t total_ = 0;
};

struct Job {
  std::uint64_t id = 0;
  VerifyRequest request;
  Callback done;
  bool mutant = false;
  std::optional<VerifyResult> primary;  // for a mutant re-run: the passing result it checks
  int infra_attempts = 0;
  SteadyTime submitted{};
};

enum class WorkerState { down, starting, ready, dead_device };

struct Run {
  Job job;
  std::string dir;
  int out_fd = -1, err_fd = -1, res_fd = -1;
  CappedBuffer out, err;
  std::string result;
  bool result_overflow = false;
  pid_t pid = -1;  // the sample's process (and process group)
  SteadyTime dispatched{}, started{}, deadline{};
  SteadyTime kill_time{};
  KillReason killed = KillReason::none;
  bool exited = false;
  int wait_status = -1;
  std::int64_t maxrss_kb = 0;
  std::int64_t cpu_ms = -1;  // user + system time of the sample's process (its own children too)
  std::int64_t peak_rss_kb = 0;
  std::string cgroup;
  double timeout_s = 0;
  std::uint64_t wid = 0;  // the id the worker's events carry
  uid_t uid = 0;          // the uid the sample runs as (when the slot has uids of its own)
  // A prestarted child (warm mode, verifier.prestart): forked, sandboxed and holding a CUDA
  // context before its sample exists; the request goes down go_fd when the sample is assigned.
  bool prestarted = false;
  int go_fd = -1;
  std::string go_pending;
  // The mutant run in the same process: set once the real run's report (the first line on the
  // result pipe) says a second one follows.
  bool first_line_seen = false;
  bool mutant_phase = false;
  SteadyTime primary_done{};
};

struct Slot {
  int index = 0;
  std::size_t device = 0;  // index into Impl::devices
  // The uids this slot's samples run as: two with prestarting (the running sample and the child
  // waiting for the next one never share a uid, so ending one cannot touch the other).
  std::vector<uid_t> uids;
  std::size_t uid_turn = 0;
  bool own_uid = false;
  std::string cache_dir;
  std::string log_path;
  // warm worker
  WorkerState state = WorkerState::down;
  pid_t worker_pid = -1;
  int ctl_fd = -1;
  SteadyTime start_deadline{};
  SteadyTime next_start{};
  int backoff_ms = 0;
  bool ever_ready = false;
  std::unique_ptr<Run> run;
  std::unique_ptr<Run> spare;  // prestarted, waiting for a sample
  SteadyTime next_spare{};
  int spare_failures = 0;
};

struct DeviceEntry {
  Device device;
  bool in_rotation = true;
  int start_failures = 0;
  std::string reason;
};

std::string env_get(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

}  // namespace

struct Pool::Impl {
  VerifierConfig cfg;
  Clock* clock = nullptr;
  std::string harness;
  std::string python;
  std::vector<DeviceEntry> devices;
  std::vector<Slot> slots;
  std::deque<Job> queue;
  std::vector<std::pair<Callback, VerifyResult>> ready;  // callbacks to run at the end of step()
  bool warned_missing_modules = false;
  std::uint64_t next_id = 1;
  std::string run_root;  // <work_dir>/runs/<pid>-<n>
  std::string cache_root;
  bool warm = true;
  SandboxCaps caps;
  std::unique_ptr<Sandbox> sandbox;
  std::unique_ptr<sys::Cgroups> cgroups;
  PoolStats stats;
  SteadyTime next_memory_poll{};
  std::uint64_t run_counter = 0;
  int omp_threads = 1;
  std::vector<pid_t> reap_later;
  std::string sizing;  // how the worker count was chosen
  // verifier.test_fail_device (TEST ONLY): the device index once the fault has fired.
  std::optional<std::size_t> faulted_device;

  SteadyTime now() const { return clock->steady_now(); }

  // --- environment -----------------------------------------------------------------------

  std::vector<std::string> sample_env(const Slot& s) const {
    return sandbox->environment(devices[s.device].device, s.cache_dir, omp_threads);
  }

  double memory_fraction(const Slot& s) const {
    if (devices[s.device].device.vendor == Vendor::cpu) return 0;
    if (cfg.gpu_memory_fraction > 0) return cfg.gpu_memory_fraction;
    int per_device = 0;
    for (const auto& o : slots) per_device += o.device == s.device ? 1 : 0;
    return 0.9 / std::max(1, per_device);
  }

  // --- workers -----------------------------------------------------------------------------

  void start_worker(Slot& s) {
    if (faulted_device && *faulted_device == s.device) {
      worker_start_failed(s, "test fault (verifier.test_fail_device " + cfg.test_fail_device +
                                 "): the device is treated as failed");
      return;
    }
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
      worker_start_failed(s, std::string("socketpair: ") + std::strerror(errno));
      return;
    }
    int log = ::open(s.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    sys::SpawnSpec spec;
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
    if (cfg.probe_gpu && devices[s.device].device.vendor != Vendor::cpu)
      spec.argv.push_back("--probe-gpu");
    spec.env = sample_env(s);
    spec.fds = {{sv[1], 3}};
    if (log >= 0) spec.fds.push_back({log, 2});
    auto pid = sys::spawn(spec);
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

  std::string worker_log_tail(const Slot& s) const {
    auto text = read_file(s.log_path);
    if (!text.ok()) return "";
    std::string t = last_lines(*text, 6, 1500);
    while (!t.empty() && t.back() == '\n') t.pop_back();
    return t;
  }

  void stop_worker(Slot& s) {
    if (s.worker_pid > 0) {
      sys::kill_group(s.worker_pid);
      reap_later.push_back(s.worker_pid);
      reap();
    }
    s.worker_pid = -1;
    sys::close_fd(s.ctl_fd);
  }

  // Killed processes are reaped without blocking: one stuck in the kernel (a GPU driver call)
  // must not stall the pool.
  void reap() {
    std::vector<pid_t> left;
    for (pid_t p : reap_later) {
      int st = 0;
      pid_t r = ::waitpid(p, &st, WNOHANG);
      if (r == 0) left.push_back(p);
    }
    reap_later = std::move(left);
  }

  void worker_start_failed(Slot& s, const std::string& why) {
    drop_spare(s);
    stop_worker(s);
    auto& d = devices[s.device];
    ++d.start_failures;
    s.backoff_ms = std::min(30000, s.backoff_ms == 0 ? 500 : s.backoff_ms * 2);
    s.next_start = now() + milliseconds(s.backoff_ms);
    s.state = WorkerState::down;
    spdlog::warn("verifier: worker {} on {} failed to start ({} in a row): {}", s.index,
                 d.device.id, d.start_failures, why);
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
  void worker_lost(Slot& s, const std::string& why) {
    spdlog::warn("verifier: worker {} on {} lost: {}; restarting", s.index,
                 devices[s.device].device.id, why);
    drop_spare(s);
    if (s.run) {
      if (s.run->pid > 0) sys::kill_group(s.run->pid);
      if (!s.run->exited)
        s.run->killed = s.run->killed == KillReason::none ? KillReason::worker_lost : s.run->killed;
      s.run->exited = true;
    }
    stop_worker(s);
    s.state = WorkerState::down;
    s.next_start = now();
    if (s.run) finish_run(s);
  }

  void handle_event(Slot& s, const nlohmann::json& ev) {
    std::string kind = ev.value("event", "");
    if (kind == "ready") {
      bool ok = ev.contains("probe") && ev["probe"].value("ok", false);
      if (!ok) {
        std::string why = "GPU probe failed: " + (ev.contains("probe") ? ev["probe"].dump() : "");
        worker_start_failed(s, why);
        return;
      }
      s.state = WorkerState::ready;
      s.ever_ready = true;
      s.backoff_ms = 0;
      devices[s.device].start_failures = 0;
      spdlog::debug("verifier: worker {} on {} ready (pid {}, modules {}, triton key {})", s.index,
                    devices[s.device].device.id, s.worker_pid,
                    ev.value("modules", nlohmann::json()).dump(),
                    ev.value("triton_key", nlohmann::json()).dump());
      if (!warned_missing_modules && ev.contains("modules") && ev["modules"].is_object()) {
        std::string missing;
        for (const char* m : {"torch", "triton"})
          if (ev["modules"].contains(m) &&
              (!ev["modules"][m].is_string() ||
               ev["modules"][m].get<std::string>().rfind("import failed", 0) == 0))
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
      return;
    }
    auto id = ev.value("id", std::uint64_t{0});
    if (s.spare && id == s.spare->wid) {
      if (kind == "started") s.spare->pid = ev.value("pid", -1);
      if (kind == "finished") spare_died(s);
      return;
    }
    if (!s.run || id != s.run->wid) return;
    if (kind == "started") {
      s.run->pid = ev.value("pid", -1);
      if (!s.run->prestarted) s.run->started = now();
    } else if (kind == "finished") {
      s.run->exited = true;
      s.run->wait_status = ev.value("status", -1);
      s.run->maxrss_kb = ev.value("maxrss_kb", std::int64_t{0});
      s.run->cpu_ms = ev.value("cpu_ms", std::int64_t{-1});
    }
  }

  void read_control(Slot& s) {
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
      auto ev =
          nlohmann::json::parse(std::string(buf, static_cast<std::size_t>(n)), nullptr, false);
      if (ev.is_object()) handle_event(s, ev);
    }
  }

  // --- runs --------------------------------------------------------------------------------

  RunPlace place(const Slot& s, const Run& r) const {
    return {r.dir, s.cache_dir, r.cgroup, s.own_uid ? static_cast<int>(r.uid) : -1};
  }

  nlohmann::json sandbox_json(const Slot& s, const Run& r) const {
    return sandbox->spec(place(s, r));
  }

  nlohmann::json request_json(const Slot& s, const Run& r) const {
    const Job& job = r.job;
    return {{"code", job.request.code.value_or("")},
            {"kernel_wrapper", job.request.kernel_wrapper.value_or("")},
            {"unitest_code", job.request.unitest_code.value_or("")},
            {"key", job.request.key},
            {"mutant", job.mutant},
            {"mutant_run", cfg.mutant_check && !job.mutant ? cfg.mutant_run : "off"},
            {"mutants", cfg.mutant_check ? cfg.mutants : std::vector<std::string>{}},
            {"autotune", cfg.autotune},
            {"gpu_memory_fraction", memory_fraction(s)},
            {"python_path", cfg.python_path},
            {"preload", cfg.preload},
            {"fresh", !warm},
            {"sandbox", sandbox_json(s, r)}};
  }

  // A run's directory, cgroup and pipes (the read ends kept, the write ends returned in
  // `child`: stdout, stderr, result and, for a prestarted child, the go channel's far end).
  std::unique_ptr<Run> new_run(Slot& s, bool prestart, std::vector<int>& child) {
    auto run = std::make_unique<Run>();
    run->wid = next_id++;
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
      auto cg =
          cgroups->create("run-" + std::to_string(s.index) + "-" + std::to_string(run_counter),
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
      drop_run(*run);
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

  // Sends a message with file descriptors to the slot's worker (closing them here).
  bool send_to_worker(Slot& s, const nlohmann::json& msg, const std::vector<int>& fds) {
    std::string text = msg.dump();
    char cbuf[CMSG_SPACE(sizeof(int) * 4)];
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
    ssize_t n = ::sendmsg(s.ctl_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    for (int fd : fds) ::close(fd);
    return n == static_cast<ssize_t>(text.size());
  }

  // Whatever a run holds outside its process: cgroup, directory, pipes.
  void drop_run(Run& r) {
    if (!r.cgroup.empty()) cgroups->destroy(r.cgroup), r.cgroup.clear();
    for (int* fd : {&r.out_fd, &r.err_fd, &r.res_fd, &r.go_fd}) sys::close_fd(*fd);
    std::error_code ec;
    fs::remove_all(r.dir, ec);
    if (ec) spdlog::warn("verifier: cannot remove {}: {}", r.dir, ec.message());
  }

  bool prestarting(const Slot& s) const {
    return warm && cfg.prestart && s.state == WorkerState::ready && devices[s.device].in_rotation;
  }

  // Starts the child that will run the slot's next sample: it applies the sandbox and creates
  // its CUDA context now, while the slot's current sample still runs.
  void prepare_spare(Slot& s) {
    std::vector<int> child;
    auto run = new_run(s, true, child);
    if (!run) return;
    nlohmann::json prep = {{"sandbox", sandbox_json(s, *run)},
                           {"python_path", cfg.python_path},
                           {"gpu", devices[s.device].device.vendor != Vendor::cpu}};
    auto st = write_file(run->dir + "/prep.json", prep.dump());
    if (!st.ok()) {
      spdlog::error("verifier: cannot prepare {}: {}", run->dir, st.error().message);
      for (int fd : child) ::close(fd);
      drop_run(*run);
      return;
    }
    nlohmann::json msg = {{"op", "prepare"}, {"id", run->wid}, {"prep", run->dir + "/prep.json"}};
    bool sent = send_to_worker(s, msg, child);
    s.spare = std::move(run);
    if (!sent) worker_lost(s, std::string("cannot send a request: ") + std::strerror(errno));
  }

  void drop_spare(Slot& s) {
    if (!s.spare) return;
    sandbox->kill_run(s.spare->pid, s.own_uid ? static_cast<int>(s.spare->uid) : -1);
    drop_run(*s.spare);
    s.spare.reset();
  }

  // The prestarted child ended before it got a sample.
  void spare_died(Slot& s) {
    Run& r = *s.spare;
    drain_fd(r.err_fd, r, 1);
    drain_fd(r.res_fd, r, 2);
    std::string why = "exited before it was given a sample";
    auto j = nlohmann::json::parse(r.result.substr(0, r.result.find('\n')), nullptr, false);
    if (j.is_object() && j.contains("detail")) why += ": " + j.value("detail", std::string());
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

  void flush_go(Run& r) {
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
  void arm(Run& r) {
    r.dispatched = now();
    r.started = r.dispatched;
    r.deadline = r.dispatched + milliseconds(static_cast<std::int64_t>(r.timeout_s * 1000));
  }

  bool dispatch(Slot& s, Job job) {
    if (s.spare) {
      // The prestarted child takes the sample: the request goes down its go channel.
      s.run = std::move(s.spare);
      Run& r = *s.run;
      r.job = std::move(job);
      r.timeout_s = r.job.request.timeout_s > 0 ? r.job.request.timeout_s : cfg.timeout_s;
      arm(r);
      r.go_pending = request_json(s, r).dump();
      flush_go(r);
      if (prestarting(s)) prepare_spare(s);
      return true;
    }
    std::vector<int> child;
    auto run = new_run(s, false, child);
    if (!run) {
      fail_job(std::move(job), "cannot prepare a sample directory under " + run_root);
      return false;
    }
    run->job = std::move(job);
    run->timeout_s = run->job.request.timeout_s > 0 ? run->job.request.timeout_s : cfg.timeout_s;
    auto req = request_json(s, *run);
    auto st = write_file(run->dir + "/request.json", req.dump());
    if (!st.ok()) {
      spdlog::error("verifier: cannot prepare {}: {}", run->dir, st.error().message);
      for (int fd : child) ::close(fd);
      drop_run(*run);
      fail_job(std::move(run->job), "cannot prepare the sample directory " + run->dir);
      return false;
    }
    arm(*run);
    if (warm) {
      nlohmann::json msg = {
          {"op", "run"}, {"id", run->wid}, {"request", run->dir + "/request.json"}};
      s.run = std::move(run);
      if (!send_to_worker(s, msg, child)) {
        worker_lost(s, std::string("cannot send a request: ") + std::strerror(errno));
        return false;
      }
      if (prestarting(s) && !s.spare) prepare_spare(s);
    } else {
      sys::SpawnSpec spec;
      spec.argv = {
          python,        "-s", "-u", harness, "fresh", "--request", run->dir + "/request.json",
          "--result-fd", "3"};
      spec.env = sample_env(s);
      spec.fds = {{child[0], 1}, {child[1], 2}, {child[2], 3}};
      auto pid = sys::spawn(spec);
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

  void drain_fd(int& fd, Run& r, int which) {
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
      if (which == 0) {
        r.out.append(buf, len);
      } else if (which == 1) {
        r.err.append(buf, len);
      } else if (r.result.size() + len <= (32u << 20)) {
        r.result.append(buf, len);
        if (!r.first_line_seen) watch_first_line(r);
      } else {
        r.result_overflow = true;
      }
    }
  }

  // The real run's report has arrived; if the mutant run follows in the same process, it gets
  // a deadline of its own, as it would in a process of its own.
  void watch_first_line(Run& r) {
    auto nl = r.result.find('\n');
    if (nl == std::string::npos) return;
    r.first_line_seen = true;
    auto j = nlohmann::json::parse(r.result.substr(0, nl), nullptr, false);
    if (!j.is_object() || !j.value("mutant_phase", false)) return;
    r.mutant_phase = true;
    r.primary_done = now();
    if (r.killed == KillReason::none)
      r.deadline = r.primary_done + milliseconds(static_cast<std::int64_t>(r.timeout_s * 1000));
  }

  void kill_run(Slot& s, KillReason why) {
    Run& r = *s.run;
    if (r.killed != KillReason::none) return;
    r.killed = why;
    r.kill_time = now();
    if (!r.cgroup.empty()) cgroups->destroy(r.cgroup), r.cgroup.clear();
    sandbox->kill_run(r.pid, s.own_uid ? static_cast<int>(r.uid) : -1);
  }

  void finish_run(Slot& s) {
    std::unique_ptr<Run> run = std::move(s.run);
    Run& r = *run;
    // Whatever the sample left behind dies with it.
    std::int64_t oom = 0;
    if (!r.cgroup.empty()) {
      oom = cgroups->oom_kills(r.cgroup);
      cgroups->destroy(r.cgroup), r.cgroup.clear();
    }
    if (s.own_uid)
      sys::sweep_uid(r.uid);
    else if (r.pid > 0)
      sys::kill_group(r.pid);
    drain_fd(r.out_fd, r, 0);
    drain_fd(r.err_fd, r, 1);
    drain_fd(r.res_fd, r, 2);
    drop_run(r);
    if (r.prestarted && r.killed == KillReason::none) s.spare_failures = 0;

    // The result pipe holds the real run's report and, after a mutant run in the same process,
    // the mutant run's: one JSON object per line.
    std::optional<nlohmann::json> second;
    RunFacts f;
    if (!r.result.empty() && !r.result_overflow) {
      auto nl = r.result.find('\n');
      auto j = nlohmann::json::parse(r.result.substr(0, nl), nullptr, false);
      if (j.is_object()) f.report = std::move(j);
      if (r.mutant_phase && nl != std::string::npos) {
        auto m = nlohmann::json::parse(r.result.substr(nl + 1), nullptr, false);
        if (m.is_object()) second = std::move(m);
      }
    }
    RunFacts mf;  // the mutant run's facts: how the process ended belongs to it
    if (r.mutant_phase) {
      mf.report = std::move(second);
      mf.killed = r.killed;
      mf.wait_status = r.wait_status;
      mf.timeout_s = r.timeout_s;
      mf.memory_cap_mb = cfg.memory_cap_mb;
      mf.peak_rss_kb = std::max(r.peak_rss_kb, r.maxrss_kb);
      mf.stderr_tail = r.err.tail(8192);
      if (mf.killed == KillReason::none && oom > 0 && !mf.report)
        mf.killed = KillReason::memory_cgroup;
      oom = 0;
    }
    f.killed = r.mutant_phase ? KillReason::none : r.killed;
    if (f.killed == KillReason::none && oom > 0 && !f.report) f.killed = KillReason::memory_cgroup;
    f.wait_status = r.mutant_phase ? 0 : r.wait_status;
    f.timeout_s = r.timeout_s;
    f.memory_cap_mb = cfg.memory_cap_mb;
    f.peak_rss_kb = std::max(r.peak_rss_kb, r.maxrss_kb);
    f.stderr_tail = r.err.tail(8192);
    auto c = classify(f);

    // A lost worker says nothing about the sample: run it once more.
    if (r.killed == KillReason::worker_lost && r.job.infra_attempts < 1) {
      r.job.infra_attempts++;
      queue.push_front(std::move(r.job));
      return;
    }

    VerifyResult res;
    res.key = r.job.request.key;
    res.tag = r.job.request.tag;
    res.verdict = c.verdict;
    res.detail = c.detail;
    res.flags = c.flags;
    res.report = f.report.value_or(nlohmann::json::object());
    if (res.report.contains("script")) {
      res.script = res.report["script"].get<std::string>();
      res.report.erase("script");
    }
    res.stdout_text = r.out.text();
    res.stderr_tail = last_lines(r.err.text(), 60, 8192);
    SteadyTime end = now();
    res.duration_ms = std::chrono::duration_cast<milliseconds>(
                          (r.mutant_phase ? r.primary_done : end) - r.started)
                          .count();
    res.device = devices[s.device].device.id;
    nlohmann::json pool_facts = {
        {"mode", warm ? "warm" : "fresh"},
        {"slot", s.index},
        {"device", res.device},
        {"wait_status", r.wait_status},
        {"maxrss_kb", r.maxrss_kb},
        {"cpu_ms", r.cpu_ms},
        {"peak_rss_kb", r.peak_rss_kb},
        {"memory_watch", r.cgroup.empty() && !(cgroups && cgroups->available()) ? "rss" : "cgroup"},
        {"stdout_bytes", r.out.total()},
        {"stderr_bytes", r.err.total()},
        {"output_truncated", r.out.truncated() || r.err.truncated()},
        {"timeout_s", r.timeout_s},
        {"uid", s.own_uid ? static_cast<std::int64_t>(r.uid) : -1},
        {"prestarted", r.prestarted},
        {"queue_ms",
         r.job.submitted == SteadyTime{}
             ? std::int64_t{-1}
             : std::chrono::duration_cast<milliseconds>(r.dispatched - r.job.submitted).count()}};
    if (r.result_overflow) pool_facts["report_overflow"] = true;
    res.report["pool"] = pool_facts;
    ++stats.completed;
    if (r.mutant_phase) {
      auto mc = classify(mf);
      attach_mutant(res, mc.verdict, mc.detail, mc.flags,
                    std::chrono::duration_cast<milliseconds>(end - r.primary_done).count(),
                    mf.report.value_or(nlohmann::json::object()), "same");
      ++stats.mutant_runs;
      ready.emplace_back(std::move(r.job.done), std::move(res));
      return;
    }
    complete(std::move(r.job), std::move(res));
  }

  // Applies the quality checks and the mutant re-run, then hands the result over.
  // Records the mutant run on the real run's result. A mutant run that passes (and did not
  // fail for the verifier's own reasons) means the test checks nothing about the kernel.
  static void attach_mutant(VerifyResult& primary, Verdict verdict, const std::string& detail,
                            const std::vector<std::string>& flags, std::int64_t duration_ms,
                            const nlohmann::json& report, const char* process) {
    nlohmann::json m = {{"verdict", to_string(verdict)},
                        {"detail", detail},
                        {"duration_ms", duration_ms},
                        {"launches_skipped", report.value("triton", nlohmann::json::object())
                                                 .value("launches", nlohmann::json::object())},
                        {"process", process}};
    if (report.contains("poisoned_bytes")) m["poisoned_bytes"] = report["poisoned_bytes"];
    // Whether the mutant run compiled anything (it should not: its launches are skipped).
    auto compile =
        report.value("triton", nlohmann::json::object()).value("compile", nlohmann::json::object());
    if (compile.contains("count")) {
      m["compiles"] = compile["count"];
      m["compile_ms"] = compile.value("ms", 0);
    }
    bool infra = std::find(flags.begin(), flags.end(), kInfrastructure) != flags.end();
    if (infra) m["infrastructure"] = true;
    if (report.contains("battery")) m["battery"] = report["battery"];
    primary.report["mutant"] = std::move(m);
    if (verdict == Verdict::passed && !infra) primary.flags.push_back(kMutantSurvived);
    apply_mutation_score(primary, score_mutants(verdict, infra, report));
  }

  void complete(Job job, VerifyResult res) {
    if (job.mutant) {
      VerifyResult primary = std::move(*job.primary);
      attach_mutant(primary, res.verdict, res.detail, res.flags, res.duration_ms, res.report,
                    "new");
      ready.emplace_back(std::move(job.done), std::move(primary));
      return;
    }
    if (res.verdict == Verdict::passed) {
      auto t = res.report.value("triton", nlohmann::json::object());
      auto kernels = t.value("kernels", nlohmann::json::array());
      std::int64_t launches = 0;
      auto counts = t.value("launches", nlohmann::json::object());
      for (const auto& [k, v] : counts.items())
        launches += v.is_number() ? v.get<std::int64_t>() : 0;
      if (launches == 0) {
        // The code defines no Triton kernel, or none of its kernels ran: nothing was verified.
        res.flags.push_back(kNoKernelLaunch);
        bool defines =
            !kernels.empty() || !res.report.value("code_kernels", nlohmann::json::array()).empty();
        res.report["no_kernel_launch"] = defines ? "no kernel of its code was launched"
                                                 : "the code defines no @triton.jit kernel";
      } else if (!kernels.empty() && cfg.mutant_check) {
        Job m;
        m.id = next_id++;
        m.request = job.request;
        m.done = std::move(job.done);
        m.mutant = true;
        m.primary = std::move(res);
        ++stats.mutant_runs;
        queue.push_front(std::move(m));
        return;
      }
    }
    ready.emplace_back(std::move(job.done), std::move(res));
  }

  void fail_job(Job job, const std::string& why) {
    VerifyResult res;
    res.key = job.request.key;
    res.tag = job.request.tag;
    res.verdict = Verdict::error;
    res.detail = why;
    res.flags = {kInfrastructure};
    res.report = {{"pool", {{"error", why}}}};
    if (job.mutant && job.primary) {
      VerifyResult primary = std::move(*job.primary);
      primary.report["mutant"] = {{"verdict", "error"}, {"detail", why}};
      ready.emplace_back(std::move(job.done), std::move(primary));
      return;
    }
    ready.emplace_back(std::move(job.done), std::move(res));
  }

  bool any_device_in_rotation() const {
    return std::any_of(devices.begin(), devices.end(),
                       [](const DeviceEntry& d) { return d.in_rotation; });
  }

  // --- the loop ----------------------------------------------------------------------------

  // verifier.test_fail_device (TEST ONLY): once enough samples have completed, the device's
  // workers are stopped (a running sample is run again elsewhere) and cannot start again.
  void maybe_fire_test_fault() {
    if (cfg.test_fail_device.empty() || faulted_device ||
        stats.completed < static_cast<std::uint64_t>(cfg.test_fail_after))
      return;
    for (std::size_t d = 0; d < devices.size(); ++d) {
      if (devices[d].device.id != cfg.test_fail_device) continue;
      faulted_device = d;
      spdlog::warn("verifier: test fault: {} fails from now on (verifier.test_fail_device)",
                   cfg.test_fail_device);
      for (auto& s : slots) {
        if (s.device != d) continue;
        if (s.state == WorkerState::ready)
          worker_lost(s, "test fault (verifier.test_fail_device)");
        else if (s.state == WorkerState::starting)
          worker_start_failed(s, "test fault (verifier.test_fail_device)");
      }
      return;
    }
  }

  void step(milliseconds max_wait) {
    maybe_fire_test_fault();
    SteadyTime t = now();
    // Start workers that are due.
    if (warm) {
      for (auto& s : slots)
        if (s.state == WorkerState::down && devices[s.device].in_rotation && t >= s.next_start)
          start_worker(s);
    }
    if (!any_device_in_rotation()) {
      while (!queue.empty()) {
        Job j = std::move(queue.front());
        queue.pop_front();
        fail_job(std::move(j), "no verifier device in rotation (see the log)");
      }
    }
    // Prestart the children that will take the next samples.
    for (auto& s : slots)
      if (prestarting(s) && !s.spare && t >= s.next_spare) prepare_spare(s);
    // Dispatch.
    for (auto& s : slots) {
      if (queue.empty()) break;
      if (s.run || !devices[s.device].in_rotation) continue;
      if (warm && s.state != WorkerState::ready) continue;
      Job j = std::move(queue.front());
      queue.pop_front();
      dispatch(s, std::move(j));
    }
    // Wait for something.
    std::vector<pollfd> pfds;
    std::vector<std::pair<Slot*, int>> owners;  // (slot, 0 ctl / 1 out / 2 err / 3 res)
    for (auto& s : slots) {
      if (s.ctl_fd >= 0) {
        pfds.push_back({s.ctl_fd, POLLIN, 0});
        owners.emplace_back(&s, 0);
      }
      if (s.run) {
        int fds[3] = {s.run->out_fd, s.run->err_fd, s.run->res_fd};
        for (int i = 0; i < 3; ++i)
          if (fds[i] >= 0) {
            pfds.push_back({fds[i], POLLIN, 0});
            owners.emplace_back(&s, i + 1);
          }
        if (s.run->go_fd >= 0 && !s.run->go_pending.empty()) {
          pfds.push_back({s.run->go_fd, POLLOUT, 0});
          owners.emplace_back(&s, 4);
        }
      }
      if (s.spare) {  // what a prestarted child prints while it waits belongs to its sample
        int fds[2] = {s.spare->out_fd, s.spare->err_fd};
        for (int i = 0; i < 2; ++i)
          if (fds[i] >= 0) {
            pfds.push_back({fds[i], POLLIN, 0});
            owners.emplace_back(&s, 5 + i);
          }
      }
    }
    SteadyTime wake = t + max_wait;
    bool watching = false;
    for (auto& s : slots) {
      if (s.run) {
        wake = std::min(wake, s.run->deadline);
        watching = true;
      }
      if (s.state == WorkerState::starting) wake = std::min(wake, s.start_deadline);
      if (s.state == WorkerState::down && warm && devices[s.device].in_rotation)
        wake = std::min(wake, s.next_start);
    }
    bool rss_watch = cfg.memory_cap_mb > 0 && !(cgroups && cgroups->available());
    if (watching && rss_watch) wake = std::min(wake, next_memory_poll);
    // Fresh children are reaped by polling waitpid: cap the wait so exits are seen promptly.
    bool fresh_running = !warm && watching;
    if (fresh_running) wake = std::min(wake, t + milliseconds(20));
    auto wait_ms =
        std::max<std::int64_t>(0, std::chrono::duration_cast<milliseconds>(wake - t).count());
    if (!ready.empty()) wait_ms = 0;
    {
      int n = ::poll(pfds.data(), pfds.size(), static_cast<int>(wait_ms));
      if (n > 0) {
        for (std::size_t i = 0; i < pfds.size(); ++i) {
          if (!(pfds[i].revents & (POLLIN | POLLOUT | POLLHUP | POLLERR))) continue;
          Slot* s = owners[i].first;
          int which = owners[i].second;
          if (which == 0) {
            read_control(*s);
          } else if (which == 4) {
            if (s->run && s->run->go_fd == pfds[i].fd) flush_go(*s->run);
          } else if (which >= 5) {
            if (s->spare) {
              int* fdp = which == 5 ? &s->spare->out_fd : &s->spare->err_fd;
              if (*fdp == pfds[i].fd) drain_fd(*fdp, *s->spare, which - 5);
            }
          } else if (s->run) {
            int* fdp = which == 1   ? &s->run->out_fd
                       : which == 2 ? &s->run->err_fd
                                    : &s->run->res_fd;
            if (*fdp == pfds[i].fd) drain_fd(*fdp, *s->run, which - 1);
          }
        }
      }
    }
    t = now();
    // Reap: workers that died, fresh samples that exited.
    for (auto& s : slots) {
      if (warm && s.worker_pid > 0) {
        int st = 0;
        pid_t p = ::waitpid(s.worker_pid, &st, WNOHANG);
        if (p == s.worker_pid) {
          s.worker_pid = -1;
          std::string why = (WIFSIGNALED(st) ? signal_name(WTERMSIG(st))
                                             : "exit code " + std::to_string(WEXITSTATUS(st)));
          read_control(s);  // events it sent before dying
          if (s.state == WorkerState::starting)
            worker_start_failed(
                s, "worker ended (" + why + ") before it was ready: " + worker_log_tail(s));
          else if (s.state == WorkerState::ready)
            worker_lost(s, "worker ended (" + why + ")");
        }
      }
      if (!warm && s.run && !s.run->exited && s.run->pid > 0) {
        int st = 0;
        rusage ru{};
        pid_t p = ::wait4(s.run->pid, &st, WNOHANG, &ru);
        if (p == s.run->pid) {
          s.run->exited = true;
          s.run->wait_status = st;
          s.run->maxrss_kb = ru.ru_maxrss;
          s.run->cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
                          (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
        }
      }
    }
    // Worker start deadlines.
    for (auto& s : slots)
      if (s.state == WorkerState::starting && t >= s.start_deadline)
        worker_start_failed(s, "not ready within " +
                                   std::to_string(static_cast<int>(cfg.worker_start_timeout_s)) +
                                   " s: " + worker_log_tail(s));
    // Memory watch.
    if (rss_watch && watching && t >= next_memory_poll) {
      next_memory_poll = t + milliseconds(cfg.memory_poll_ms);
      auto procs = sys::scan_procs();
      for (auto& s : slots) {
        if (!s.run || s.run->exited || s.run->pid <= 0 || s.run->killed != KillReason::none)
          continue;
        std::int64_t rss = 0;
        int uid = s.own_uid ? static_cast<int>(s.run->uid) : -1;
        for (const auto& p : procs)
          if (sandbox->counts_for_run(p, s.run->pid, uid)) rss += p.rss_kb;
        s.run->peak_rss_kb = std::max(s.run->peak_rss_kb, rss);
        if (rss > cfg.memory_cap_mb * 1024) kill_run(s, KillReason::memory_rss);
      }
    }
    // Deadlines, wedged workers, finished runs.
    for (auto& s : slots) {
      if (!s.run) continue;
      Run& r = *s.run;
      if (!r.exited && r.killed == KillReason::none && t >= r.deadline)
        kill_run(s, KillReason::timeout);
      if (warm && !r.exited) {
        bool never_started = r.pid <= 0 && t - r.dispatched > milliseconds(30000);
        bool stuck_after_kill =
            r.killed != KillReason::none && t - r.kill_time > milliseconds(10000);
        if (never_started || stuck_after_kill) {
          worker_lost(s, never_started ? "no 'started' within 30 s"
                                       : "no 'finished' within 10 s of a kill");
          continue;
        }
      }
      if (r.exited) finish_run(s);
    }
    if (!reap_later.empty()) reap();
    // Callbacks last, so they may submit().
    auto done = std::move(ready);
    ready.clear();
    for (auto& [cb, res] : done)
      if (cb) cb(std::move(res));
  }
};

Pool::Pool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Pool::~Pool() {
  if (!impl_) return;
  auto& I = *impl_;
  for (auto& s : I.slots) {
    if (s.run) {
      I.kill_run(s, KillReason::worker_lost);
      s.run->exited = true;
      Job j = std::move(s.run->job);
      if (!I.warm && s.run->pid > 0) I.reap_later.push_back(s.run->pid);
      s.run->job = Job{};
      I.drop_run(*s.run);
      s.run.reset();
      I.fail_job(std::move(j), "the verifier pool shut down");
    }
    if (s.ctl_fd >= 0) {
      std::string bye = R"({"op":"exit"})";
      ::send(s.ctl_fd, bye.data(), bye.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    I.drop_spare(s);
    I.stop_worker(s);
  }
  I.sandbox.reset();  // kills what still runs as the slots' uids and releases them
  while (!I.queue.empty()) {
    Job j = std::move(I.queue.front());
    I.queue.pop_front();
    I.fail_job(std::move(j), "the verifier pool shut down");
  }
  auto done = std::move(I.ready);
  for (auto& [cb, res] : done)
    if (cb) cb(std::move(res));
  for (int i = 0; i < 200 && !I.reap_later.empty(); ++i) {
    I.reap();
    if (!I.reap_later.empty()) ::usleep(10000);
  }
  std::error_code ec;
  fs::remove_all(I.run_root, ec);
  I.cgroups.reset();
}

Result<std::unique_ptr<Pool>> Pool::create(PoolOptions o) {
  auto impl = std::make_unique<Impl>();
  Impl& I = *impl;
  I.cfg = o.config;
  I.clock = o.clock ? o.clock : &system_clock();
  I.warm = I.cfg.mode != "fresh";
  KF_TRY(I.harness, find_harness(I.cfg));
  I.python = I.cfg.python;
  SystemProbe& probe = o.probe ? *o.probe : system_probe();
  if (I.python.find('/') == std::string::npos) {
    // Resolved on the pool's PATH: the samples' PATH is a clean one.
    std::string path = env_get("PATH");
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string cand = path.substr(start, end - start) + "/" + I.python;
      if (end > start && ::access(cand.c_str(), X_OK) == 0) {
        I.python = cand;
        break;
      }
      start = end + 1;
    }
    if (I.python.find('/') == std::string::npos)
      return fail("config", "verifier.python: '" + I.cfg.python + "' is not on PATH");
  }
  {
    // The interpreter itself, not a shim or wrapper script that needs the caller's environment.
    auto info = system_probe().run({I.python, "-s", I.harness, "info"});
    if (!info.ok())
      return fail("config", "verifier.python: " + I.python +
                                " cannot run the harness: " + info.error().message);
    auto j = nlohmann::json::parse(*info, nullptr, false);
    std::string e = j.is_object() ? j.value("executable", std::string()) : std::string();
    if (!e.empty() && e[0] == '/') I.python = e;
  }
  std::vector<Device> devs = o.devices;
  if (devs.empty()) {
    std::vector<std::string> notes;
    KF_TRY(devs, resolve_devices(I.cfg.devices, probe, &notes));
    for (const auto& n : notes) spdlog::debug("verifier: device detection: {}", n);
  }
  for (const auto& d : devs) I.devices.push_back({d, true, 0, ""});
  // Slots: workers_per_device on each device (cpu_workers for "cpu"), or total_workers spread.
  std::vector<std::size_t> slot_devices;
  if (o.total_workers > 0) {
    for (int i = 0; i < o.total_workers; ++i)
      slot_devices.push_back(static_cast<std::size_t>(i) % devs.size());
    I.sizing = std::to_string(o.total_workers) + " in all (set by the caller)";
  } else {
    // Each GPU gets its own count: workers_per_device, or (auto) one sized from the cores, the
    // GPUs in use and that GPU's memory.
    std::size_t gpus = 0;
    for (const auto& d : devs) gpus += d.vendor != Vendor::cpu ? 1 : 0;
    for (std::size_t d = 0; d < devs.size(); ++d) {
      int n = I.cfg.workers_per_device;
      std::string why = std::to_string(n) + " per GPU (verifier.workers_per_device)";
      if (devs[d].vendor == Vendor::cpu) {
        n = I.cfg.cpu_workers;
        why = std::to_string(n) + " (verifier.cpu_workers)";
      } else if (n == kAutoWorkers) {
        n = auto_workers_per_device(usable_cores(), gpus, devs[d].memory_mb, &why);
        why = "auto: " + why;
      }
      for (int i = 0; i < n; ++i) slot_devices.push_back(d);
      I.sizing += (I.sizing.empty() ? "" : "; ") + devs[d].id + ": " + why;
    }
    spdlog::info("verifier: workers: {}", I.sizing);
  }
  std::sort(slot_devices.begin(), slot_devices.end());
  unsigned cores = usable_cores();
  I.omp_threads =
      std::max(1, static_cast<int>(cores / std::max<std::size_t>(1, slot_devices.size())));

  std::error_code ec;
  static std::uint64_t pool_counter = 0;
  for (std::string* path : {&I.cfg.work_dir, &I.cfg.triton_cache_dir})
    for (std::size_t at; (at = path->find("%u")) != std::string::npos;)
      path->replace(at, 2, std::to_string(::geteuid()));
  I.run_root =
      I.cfg.work_dir + "/runs/" + std::to_string(::getpid()) + "-" + std::to_string(++pool_counter);
  // Samples running as other uids must reach their directories: the ones made here are 0755
  // (an existing work_dir is left as it is).
  {
    // The Triton cache under it holds code that samples load: no other user may own or write it.
    struct stat st;
    if (::stat(I.cfg.work_dir.c_str(), &st) == 0 &&
        ((st.st_uid != ::geteuid() && st.st_uid != 0) || (st.st_mode & (S_IWGRP | S_IWOTH))))
      return fail("config", "verifier.work_dir: " + I.cfg.work_dir + " belongs to uid " +
                                std::to_string(st.st_uid) + " (mode " +
                                fmt::format("{:o}", st.st_mode & 07777) +
                                "): kforge needs a directory of its own there, not writable by "
                                "others (the default /var/tmp/kforge-verify-%u is per user)");
  }
  bool made_work_dir = !fs::exists(I.cfg.work_dir);
  fs::create_directories(I.run_root, ec);
  if (ec) return fail("io", I.run_root + ": " + ec.message());
  if (made_work_dir) ::chmod(I.cfg.work_dir.c_str(), 0755);
  ::chmod((I.cfg.work_dir + "/runs").c_str(), 0755);
  ::chmod(I.run_root.c_str(), 0755);
  I.cache_root =
      I.cfg.triton_cache_dir.empty() ? I.cfg.work_dir + "/triton-cache" : I.cfg.triton_cache_dir;
  fs::create_directories(I.cache_root, ec);
  if (ec) return fail("io", I.cache_root + ": " + ec.message());

  // With prestarting, a slot has a running sample and a child waiting for the next one.
  int uids_per_slot = I.warm && I.cfg.prestart ? 2 : 1;
  {
    Sandbox::Options so;
    so.config = I.cfg;
    so.python = I.python;
    so.harness = I.harness;
    so.run_root = I.run_root;
    so.cache_root = I.cache_root;
    so.slots = static_cast<int>(slot_devices.size());
    so.uids_per_slot = uids_per_slot;
    auto sb = Sandbox::create(std::move(so));
    if (!sb.ok()) {
      fs::remove_all(I.run_root, ec);
      return fail(sb.error());
    }
    I.sandbox = std::move(*sb);
  }
  I.caps = I.sandbox->caps();
  I.cgroups = std::make_unique<sys::Cgroups>(I.cfg.cgroup);
  I.caps.memory = I.cgroups->available() ? "cgroup" : "rss-watch";
  I.caps.cgroup_note = I.cgroups->note();
  if (!I.cgroups->available() && I.cfg.memory_cap_mb > 0)
    spdlog::info("verifier: no cgroup memory limit ({}); watching resident memory instead",
                 I.cgroups->note());

  for (std::size_t i = 0; i < slot_devices.size(); ++i) {
    Slot s;
    s.index = static_cast<int>(i);
    s.device = slot_devices[i];
    s.uids = I.sandbox->slot_uids(static_cast<int>(i));
    s.own_uid = !s.uids.empty();
    s.cache_dir = I.cache_root;
    if (I.cfg.triton_cache_per_worker) {
      s.cache_dir = I.cache_root + "/worker-" + std::to_string(i);
      fs::create_directories(s.cache_dir, ec);
      I.sandbox->share_dir(s.cache_dir);
    }
    s.log_path = I.run_root + "/worker-" + std::to_string(i) + ".log";
    I.slots.push_back(std::move(s));
  }
  auto pool = std::unique_ptr<Pool>(new Pool(std::move(impl)));
  pool->step(milliseconds(0));  // start the workers
  return pool;
}

Result<std::uint64_t> Pool::submit(VerifyRequest request, Callback done) {
  auto& I = *impl_;
  if (static_cast<int>(I.queue.size()) >= I.cfg.queue_capacity)
    return fail("full",
                "the verifier queue is full (" + std::to_string(I.cfg.queue_capacity) + " waiting)",
                Transient::yes);
  Job j;
  j.id = I.next_id++;
  std::uint64_t id = j.id;
  ++I.stats.submitted;
  std::vector<std::string> missing;
  if (!request.code) missing.push_back("code");
  if (!request.kernel_wrapper) missing.push_back("kernel_wrapper");
  if (!request.unitest_code) missing.push_back("unitest_code");
  if (!missing.empty()) {
    VerifyResult res;
    res.key = request.key;
    res.tag = request.tag;
    res.verdict = Verdict::skipped;
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    res.detail = "missing field(s): " + list;
    res.report = {{"missing", missing}};
    ++I.stats.completed;
    I.ready.emplace_back(std::move(done), std::move(res));
    return id;
  }
  j.request = std::move(request);
  j.done = std::move(done);
  j.submitted = I.now();
  I.queue.push_back(std::move(j));
  return id;
}

bool Pool::accepting() const {
  return static_cast<int>(impl_->queue.size()) < impl_->cfg.queue_capacity;
}

void Pool::step(std::chrono::milliseconds max_wait) {
  impl_->step(max_wait);
}

void Pool::drain() {
  while (!idle() || !impl_->ready.empty()) step(milliseconds(200));
}

std::size_t Pool::queued() const {
  return impl_->queue.size();
}

std::size_t Pool::in_flight() const {
  std::size_t n = 0;
  for (const auto& s : impl_->slots) n += s.run ? 1 : 0;
  return n;
}

int Pool::slots() const {
  return static_cast<int>(impl_->slots.size());
}

std::vector<DeviceStatus> Pool::devices() const {
  std::vector<DeviceStatus> out;
  for (std::size_t d = 0; d < impl_->devices.size(); ++d) {
    const auto& e = impl_->devices[d];
    DeviceStatus st;
    st.device = e.device.id;
    st.in_rotation = e.in_rotation;
    st.start_failures = e.start_failures;
    st.reason = e.reason;
    for (const auto& s : impl_->slots) {
      if (s.device != d) continue;
      ++st.workers;
      if (s.state == WorkerState::ready || (!impl_->warm && e.in_rotation)) ++st.ready_workers;
    }
    out.push_back(st);
  }
  return out;
}

std::string Pool::sizing() const {
  return impl_->sizing;
}

PoolStats Pool::stats() const {
  return impl_->stats;
}

SandboxCaps Pool::sandbox() const {
  return impl_->caps;
}

std::vector<int> Pool::TEST_worker_pids() const {
  std::vector<int> out;
  for (const auto& s : impl_->slots)
    out.push_back(s.state == WorkerState::ready ? s.worker_pid : -1);
  return out;
}

std::vector<int> Pool::TEST_slot_uids() const {
  std::vector<int> out;
  for (const auto& s : impl_->slots)
    out.push_back(s.own_uid ? static_cast<int>(s.uids.front()) : -1);
  return out;
}

}  // namespace kforge::verify
