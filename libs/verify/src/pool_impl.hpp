#pragma once
// Internal: the verifier pool's state, shared by its parts (pool.hpp has the contract):
//   pool_create.cpp   creation and sizing (devices, slots, directories, sandbox, cgroups)
//   pool_worker.cpp   the warm workers' protocol (start, events, requests) and the spares
//   pool_run.cpp      one run: its directory, pipes, request, output and deadline
//   pool_loop.cpp     step(): dispatch, wait, reap, deadlines, the memory watch
//   pool_samples.hpp  the sample bookkeeping (SampleBook: the queue, ids, results to hand over)
//   pool_verdict.cpp  a finished run's verdict; the verdict assembly (VerdictAssembly,
//                     pool_verdicts.hpp): the mutant re-run, failed samples
//   pool.cpp          the public methods
// Threads: as Pool, one thread.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/worker_event.hpp"
#include "pool_samples.hpp"
#include "pool_verdicts.hpp"
#include "sandbox.hpp"
#include "sys.hpp"

namespace kforge::verify {

using std::chrono::milliseconds;

// A timing sample's wait lends a slot once it has lasted this long: most waits last hundreds of
// milliseconds (a burst's, a gathering), and a lent sample runs for seconds whatever the wait.
inline constexpr milliseconds kLendAfter{50};

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

enum class WorkerState { down, starting, ready, dead_device };

// How a sample's process starts: for the sample at hand, or prestarted (a spare that waits,
// sandboxed, for its request on a go channel).
enum class Start { now, prestart };

// One sample's process: the harness running it (and its mutant phase, in the same process),
// with its directory, pipes, cgroup and what was read from it.
struct SampleProcess {
  Sample job;
  std::string dir;
  int out_fd = -1, err_fd = -1, res_fd = -1;
  CappedBuffer out, err;
  std::string result;
  bool result_overflow = false;
  pid_t pid = -1;  // the sample's process (and process group)
  SteadyTime dispatched{}, started{}, deadline{};
  SteadyTime kill_time{};
  KillReason killed = KillReason::none;
  std::string lost;       // KillReason::worker_lost: why the pool took its worker for lost
  std::string cancelled;  // Pool::cancel's reason: the run ends with no verdict
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
  // Lent slots (verifier.timing.lend): the sample says on its result pipe that it waits for its
  // timing section ({"lend": "wait"}) and that the section began or it gave up ({"lend":
  // "back"}); while it waits, the pool may run another sample on a lent slot of its device.
  // lend_line: where the result's line not yet complete begins; lend_scan: how far it has been
  // searched for its end.
  // wait_since: when it said it waits (a wait lends a slot once it lasted kLendAfter).
  bool waiting = false;
  SteadyTime wait_since{};
  std::size_t lend_line = 0, lend_scan = 0;
};

struct Slot {
  int index = 0;
  std::size_t device = 0;  // index into Impl::devices
  // A lent slot (verifier.timing.lend): after the device's workers, it takes a sample only
  // while a sample of its device waits for its timing section (may_lend); not a worker in the
  // counts (Pool::slots, the memory fraction's divisor, the cores per sample).
  bool lent = false;
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
  bool probing = false;  // this start of the worker makes the GPU probe (--probe-gpu)
  std::unique_ptr<SampleProcess> run;
  std::unique_ptr<SampleProcess> spare;  // prestarted, waiting for a sample
  SteadyTime next_spare{};
  int spare_failures = 0;
};

struct DeviceEntry {
  Device device;
  bool in_rotation = true;
  int start_failures = 0;
  std::string reason;
  // The device's exclusive section for timing (harness gpulock.py): lock files under the run
  // root that every sample of this device takes, shared while it uses the GPU and exclusive
  // while it times; timing samples queue among themselves on the third.
  std::string lock_gate, lock_rw, lock_queue;
  // The device's GPU probe (verifier.probe_gpu): one worker of the device probes on its first
  // start (`prober`, its slot; -1 when none does now), the others do not; none of the device's
  // workers takes a sample before a probe of the device said ok (`probe_ok`). A worker that
  // starts again (it died, wedged or failed) probes for itself, as each did before.
  bool probe_ok = false;
  int prober = -1;
};

// A run's output streams, as drain_fd() files what it reads.
enum class Stream { out, err, result };
// What step() polls: a worker's control socket, the running sample's streams and go channel
// (a prestarted child waiting for its request), a spare's streams.
enum class Watched { control, run_out, run_err, run_result, run_go, spare_out, spare_err, wake };

struct Pool::Impl {
  VerifierConfig cfg;
  Env* env = nullptr;      // processes: started, reaped and killed through it
  int wake_fd = -1;        // an eventfd Pool::wake() writes (any thread); step() polls it
  Clock* clock = nullptr;  // deadlines and back-off
  std::string harness;
  std::string python;
  std::vector<DeviceEntry> devices;
  std::vector<Slot> slots;
  SampleBook samples;  // waiting samples, ids, results whose callbacks step() runs last
  bool warned_missing_modules = false;
  bool timing_seen = false;  // a sample required a speedup (the lock's watcher, pool_run.cpp)
  bool any_lent = false;     // some device has lent slots: the results are scanned for lend lines
  double long_cost_s = 0;    // set_long_cost(): above it a new sample is long (early_long)
  std::string run_root;      // <work_dir>/runs/<pid>-<n>
  std::string cache_root;
  bool warm = true;
  SandboxCaps caps;
  std::unique_ptr<Sandbox> sandbox;
  std::unique_ptr<sys::Cgroups> cgroups;
  PoolStats stats;
  VerdictAssembly verdicts{cfg, samples, stats};  // results to verdicts (pool_verdict.cpp)
  SteadyTime next_memory_poll{};
  std::uint64_t run_counter = 0;
  int omp_threads = 1;
  std::vector<pid_t> reap_later;
  std::string sizing;  // how the worker count was chosen
  // When the pool was made: each run's report.pool.dispatched_ms counts from it.
  SteadyTime created{};

  SteadyTime now() const { return clock->steady_now(); }

  // --- the worker protocol and the spares (pool_worker.cpp) ---
  std::vector<std::string> sample_env(const Slot& s) const;
  double memory_fraction(const Slot& s) const;
  // verifier.cuda_sync and the slot's device's vendor, as the request and the prep carry them
  // ("cuda_sync", "gpu_vendor"): the harness sets the process's GPU wait before its context.
  std::string gpu_vendor(const Slot& s) const;
  void start_worker(Slot& s);
  std::string worker_log_tail(const Slot& s) const;
  void stop_worker(Slot& s);
  // Killed processes are reaped without blocking: one stuck in the kernel (a GPU driver call)
  // must not stall the pool.
  void reap();
  void worker_start_failed(Slot& s, const std::string& why);
  // The worker died or wedged after it had been ready.
  void worker_lost(Slot& s, const std::string& why);
  // Whether a start of this slot's worker makes the GPU probe; claims the device's probe.
  bool probes_at_start(Slot& s);
  // A slot whose worker is ready may take samples: its device's probe said ok (or none is asked).
  bool usable(const Slot& s) const;
  // The ready event's probe failed: that worker failed to start, and, while no probe of the
  // device has passed, so did every worker of the device that relies on it (starting without a
  // probe of its own, or ready and waiting for it), as when each made its own probe and failed.
  void probe_failed(Slot& s, const std::string& why);
  void handle_ready(Slot& s, const WorkerEvent& ev);
  void handle_event(Slot& s, const WorkerEvent& ev);
  void read_control(Slot& s);
  // Sends a message with file descriptors to the slot's worker (closing them here), built by
  // worker_op_text (worker_ops.txt). The error says why it was not sent.
  Status send_to_worker(Slot& s, const WorkerOp& op, const std::vector<int>& fds);
  bool prestarting(const Slot& s) const;
  // Starts the child that will run the slot's next sample: it applies the sandbox and creates
  // its CUDA context now, while the slot's current sample still runs.
  void prepare_spare(Slot& s);
  void drop_spare(Slot& s);
  // The prestarted child ended before it got a sample.
  void spare_died(Slot& s);

  // --- one run's directory, pipes and deadline (pool_run.cpp) ---
  RunPlace place(const Slot& s, const SampleProcess& r) const;
  nlohmann::json sandbox_json(const Slot& s, const SampleProcess& r) const;
  nlohmann::json request_json(const Slot& s, const SampleProcess& r) const;
  // The request's "timing" (verifier.timing, the run's required speedup): off for mutant runs.
  nlohmann::json timing_json(const Slot& s, const Sample& job) const;
  // Whether the device's samples get the speed label without a run asking for it
  // (verifier.timing.enabled; auto: GPUs only).
  bool timing_on(std::size_t device) const;
  // The targets a sample's kernels are compiled for (none for a mutant run), and its deadline
  // (the configured or requested one, plus the cross-compile's time when it has targets).
  std::vector<std::string> targets_of(const Sample& job) const;
  double timeout_of(const Slot& s, const Sample& job) const;
  // A run's directory, cgroup and pipes (the read ends kept, the write ends returned in
  // `child`: stdout, stderr, result and, for a prestarted child, the go channel's far end).
  std::unique_ptr<SampleProcess> new_process(Slot& s, Start start, std::vector<int>& child);
  // Whatever a run holds outside its process: cgroup, directory, pipes.
  void drop_process(SampleProcess& r);
  void flush_go(SampleProcess& r);
  // The sample's clock starts now.
  void arm(SampleProcess& r);
  bool dispatch(Slot& s, Sample job);
  void drain_fd(int& fd, SampleProcess& r, Stream which);
  // The real run's report has arrived; if the mutant run follows in the same process, it gets
  // a deadline of its own, as it would in a process of its own.
  void watch_first_line(SampleProcess& r);
  void kill_run(Slot& s, KillReason why);

  // --- verdicts (pool_verdict.cpp) ---
  void finish_run(Slot& s);
  nlohmann::json run_facts_json(const Slot& s, const SampleProcess& r,
                                const std::string& device) const;
  bool any_device_in_rotation() const;

  // --- the loop (pool_loop.cpp): step() and its phases, in order ---
  void step(milliseconds max_wait);
  void start_due_workers(SteadyTime t);
  bool may_start(const Slot& s) const;
  void fail_queue(const std::string& why);
  void dispatch_queue();
  // Lent slots: how many a device gets (verifier.timing.lend, auto: a quarter of its workers),
  // whether one may take a sample now (a sample of its device waits for its timing section and
  // the lent slots running are fewer than the samples waiting), and the lend lines of a run's
  // result read so far.
  int lend_slots(std::size_t device, int workers) const;
  // Appends each device's lent slots to `slot_devices` (the workers' devices), in device order.
  void add_lent_slots(std::vector<std::size_t>& slot_devices);
  bool may_lend(const Slot& s) const;
  // The soonest after t a wait, kLendAfter old then, may lend a slot (for the poll's wait).
  std::optional<SteadyTime> next_lend(SteadyTime t) const;
  void read_lend_lines(SampleProcess& r);
  bool watching_runs() const;
  // early_long: the long samples running, and how many may (verify/cost.hpp).
  LongRoom long_room() const;
  // Whether resident memory is polled (a memory cap and no cgroups to enforce it).
  bool rss_watch() const;
  struct PollSet;
  PollSet poll_set();
  milliseconds wait_time(SteadyTime t, milliseconds max_wait) const;
  // Waits for a stream, control socket, go channel or wake-up, and reads what is ready.
  void wait_and_read(SteadyTime t, milliseconds max_wait);
  void reap_exits();
  void watch_memory(SteadyTime t);
  void check_runs(SteadyTime t);
};

}  // namespace kforge::verify
