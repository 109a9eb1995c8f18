#include "pool_impl.hpp"

#include "kforge/verify/cost.hpp"

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

namespace kforge::verify {

namespace fs = std::filesystem;

Pool::Pool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Pool::~Pool() {
  if (!impl_) return;
  auto& I = *impl_;
  if (I.wake_fd >= 0) ::close(I.wake_fd);
  for (auto& s : I.slots) {
    if (s.run) {
      I.kill_run(s, KillReason::worker_lost);
      s.run->exited = true;
      Sample j = std::move(s.run->job);
      if (!I.warm && s.run->pid > 0) I.reap_later.push_back(s.run->pid);
      s.run->job = Sample{};
      I.drop_process(*s.run);
      s.run.reset();
      I.verdicts.fail_job(std::move(j), "the verifier pool shut down");
    }
    if (s.ctl_fd >= 0) (void)I.send_to_worker(s, WorkerOp{WorkerOpKind::exit, 0, ""}, {});
    I.drop_spare(s);
    I.stop_worker(s);
  }
  I.sandbox.reset();  // kills what still runs as the slots' uids and releases them
  I.fail_queue("the verifier pool shut down");
  I.samples.run_callbacks();
  for (int i = 0; i < 200 && !I.reap_later.empty(); ++i) {
    I.reap();
    if (!I.reap_later.empty()) I.env->clock().sleep_for(milliseconds(10));
  }
  std::error_code ec;
  fs::remove_all(I.run_root, ec);
  I.cgroups.reset();
}

Result<std::uint64_t> Pool::submit(VerifyRequest request, Callback done) {
  auto& I = *impl_;
  if (static_cast<int>(I.samples.size()) >= I.cfg.queue_capacity)
    return fail("full",
                "the verifier queue is full (" + std::to_string(I.cfg.queue_capacity) + " waiting)",
                Transient::yes);
  Sample j;
  j.id = I.samples.new_id();
  j.origin = j.id;
  std::uint64_t id = j.id;
  ++I.stats.submitted;
  std::vector<std::string> missing;
  if (!request.code) missing.push_back("code");
  if (!request.kernel_wrapper) missing.push_back("kernel_wrapper");
  if (!request.unitest_code) missing.push_back("unitest_code");
  if (!missing.empty()) {
    VerifyResult res;
    res.key = request.key;
    res.verdict = Verdict::skipped;
    std::string list;
    for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
    res.detail = "missing field(s): " + list;
    res.report = {{"missing", missing}};
    ++I.stats.completed;
    I.samples.deliver(std::move(done), std::move(res));
    return id;
  }
  // Python compiles no source with a NUL byte in it ("source code string cannot contain null
  // bytes"): the sample is invalid as written, whatever runs it, and is not run.
  for (const auto& [field, text] :
       {std::pair{"code", &request.code}, std::pair{"kernel_wrapper", &request.kernel_wrapper},
        std::pair{"unitest_code", &request.unitest_code}}) {
    auto at = (*text)->find('\0');
    if (at == std::string::npos) continue;
    VerifyResult res;
    res.key = request.key;
    res.verdict = Verdict::invalid;
    res.detail = std::string(field) + " contains a NUL byte at offset " + std::to_string(at) +
                 ": Python cannot compile source code with null bytes";
    res.report = {{"nul_byte", {{"field", field}, {"offset", at}}}};
    ++I.stats.completed;
    I.samples.deliver(std::move(done), std::move(res));
    return id;
  }
  j.request = std::move(request);
  j.done = std::move(done);
  j.submitted = I.now();
  j.cost_s = predicted_cost_s(j.request);
  j.is_long = I.long_cost_s > 0 && j.cost_s > I.long_cost_s;
  // From the first sample that asks for the speed label on, every sample's lock watches for
  // timing samples (the harness's watcher thread; none where nothing is ever timed).
  if (j.request.require_speedup > 0) I.timing_seen = true;
  I.samples.push_back(std::move(j));
  return id;
}

bool Pool::cancel(std::uint64_t id, const std::string& why) {
  auto& I = *impl_;
  if (auto waiting = I.samples.remove(id)) {
    ++I.stats.cancelled_waiting;
    I.verdicts.cancel(std::move(*waiting), why);
    return true;
  }
  for (auto& s : I.slots) {
    if (!s.run || s.run->job.origin != id || !s.run->cancelled.empty()) continue;
    // finish_run() hands over the cancelled result once the process has ended.
    s.run->cancelled = why;
    ++I.stats.cancelled_running;
    if (!s.run->exited) I.kill_run(s, KillReason::cancelled);
    return true;
  }
  return false;
}

bool Pool::accepting() const {
  return static_cast<int>(impl_->samples.size()) < impl_->cfg.queue_capacity;
}

void Pool::step(std::chrono::milliseconds max_wait) {
  impl_->step(max_wait);
}

void Pool::wake() {
  if (impl_->wake_fd < 0) return;
  std::uint64_t one = 1;
  while (::write(impl_->wake_fd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void Pool::reconfigure(const VerifierConfig& config) {
  apply_reloadable(impl_->cfg, config);
}

const VerifierConfig& Pool::config() const {
  return impl_->cfg;
}

void Pool::drain() {
  while (!idle() || impl_->samples.has_results()) step(milliseconds(200));
}

std::size_t Pool::queued() const {
  return impl_->samples.size();
}

std::size_t Pool::in_flight() const {
  std::size_t n = 0;
  for (const auto& s : impl_->slots) n += s.run ? 1 : 0;
  return n;
}

void Pool::set_long_cost(double seconds) {
  impl_->long_cost_s = seconds;
}

int Pool::slots() const {  // the workers: lent slots are not counted
  return static_cast<int>(std::count_if(impl_->slots.begin(), impl_->slots.end(),
                                        [](const Slot& s) { return !s.lent; }));
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
      if (s.device != d || s.lent) continue;
      ++st.workers;
      if (impl_->usable(s) || (!impl_->warm && e.in_rotation)) ++st.ready_workers;
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
    if (!s.lent) out.push_back(s.state == WorkerState::ready ? s.worker_pid : -1);
  return out;
}

std::vector<int> Pool::TEST_slot_uids() const {
  std::vector<int> out;
  for (const auto& s : impl_->slots)
    if (!s.lent) out.push_back(s.own_uid ? static_cast<int>(s.uids.front()) : -1);
  return out;
}

}  // namespace kforge::verify
