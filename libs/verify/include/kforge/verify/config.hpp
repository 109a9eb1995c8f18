#pragma once
// The `verifier` section of the configuration (config/kforge.yaml documents every key).

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kforge/core/config.hpp"
#include "kforge/core/enum_names.hpp"
#include "kforge/verify/gpu.hpp"

namespace kforge::verify {

inline constexpr int kAutoWorkers = 0;
// verifier.timing.lend: auto (a quarter of each device's workers, at least 1).
inline constexpr int kAutoLend = -1;

// The closed choices of the section, read by name (ConfigNode::get_enum) at load time; to_string
// gives the name back (the harness spec and messages carry it).
enum class PoolMode {
  warm,   // each slot keeps a child forked, sandboxed and holding a CUDA context ready
  fresh,  // a new process per sample
};
inline constexpr EnumName<PoolMode> kPoolModeNames[] = {{PoolMode::warm, "warm"},
                                                        {PoolMode::fresh, "fresh"}};
enum class Autotune {
  single,  // @triton.autotune keeps its first config (one compile per kernel)
  full,    // every config is compiled and timed, as Triton does
};
inline constexpr EnumName<Autotune> kAutotuneNames[] = {{Autotune::single, "single"},
                                                        {Autotune::full, "full"}};
enum class MutantRun {
  same_process,  // the mutant run follows the real one in the sample's process
  new_process,   // it gets a process of its own
};
inline constexpr EnumName<MutantRun> kMutantRunNames[] = {{MutantRun::same_process, "same_process"},
                                                          {MutantRun::new_process, "new_process"}};

// The order waiting samples are handed to the workers (verifier.order; verify/cost.hpp).
enum class VerifyOrder {
  cost,        // the longest predicted first (kforge verify sorts its records so; the pool takes
               // the costliest waiting sample, aged by its wait)
  input,       // as submitted
  early_long,  // kforge verify moves the few samples predicted to outlast a share of the run
               // early, spread among the others (verify/cost.hpp); the pool takes them as
               // submitted
};
inline constexpr EnumName<VerifyOrder> kVerifyOrderNames[] = {
    {VerifyOrder::cost, "cost"},
    {VerifyOrder::input, "input"},
    {VerifyOrder::early_long, "early_long"}};

// How a sample's process waits for its GPU in a synchronise (verifier.cuda_sync; the harness's
// cudasync.py sets it on each visible device's primary context before the context is made).
enum class CudaSync {
  automatic,  // "auto": the driver's default (CUDA spins while the process has fewer contexts
              // than the host has cores: always, for a sample)
  spin,       // spin on the waiting thread
  yield,      // spin, yielding the core between looks
  blocking,   // sleep until the GPU's interrupt wakes the thread
};
inline constexpr EnumName<CudaSync> kCudaSyncNames[] = {{CudaSync::automatic, "auto"},
                                                        {CudaSync::spin, "spin"},
                                                        {CudaSync::yield, "yield"},
                                                        {CudaSync::blocking, "blocking"}};

enum class Backend { local, slurm };
inline constexpr EnumName<Backend> kBackendNames[] = {{Backend::local, "local"},
                                                      {Backend::slurm, "slurm"}};

constexpr std::string_view to_string(PoolMode v) {
  return name_of(kPoolModeNames, v);
}
constexpr std::string_view to_string(Autotune v) {
  return name_of(kAutotuneNames, v);
}
constexpr std::string_view to_string(VerifyOrder v) {
  return name_of(kVerifyOrderNames, v);
}
constexpr std::string_view to_string(MutantRun v) {
  return name_of(kMutantRunNames, v);
}
constexpr std::string_view to_string(CudaSync v) {
  return name_of(kCudaSyncNames, v);
}
// The `verifier.slurm` section: how the daemon's verify stage runs samples as Slurm array tasks
// (verifier.backend: slurm). Read by the Slurm backend (slurm_backend.hpp) and by `kforge run
// cancel`.
struct SlurmConfig {
  std::string shared_dir;  // seen by the daemon's host and every node (shards, results, logs)
  std::string partition;   // --partition; empty: the cluster's default
  std::string account;     // --account; empty: none
  std::string gres;        // --gres, e.g. "gpu:1"; empty: none
  int gpus = 0;            // --gpus=N; 0: not sent
  std::string time_limit;  // --time, e.g. "01:00:00"; empty: the partition's default
  std::string job_name = "kforge-verify";
  std::vector<std::string> extra_args;       // more sbatch options, each one argument
  int samples_per_task = 50;                 // one shard (JSON Lines) per array task
  int max_array_tasks = 16;                  // tasks per sbatch --array
  int max_samples_in_flight = 512;           // leased into tasks that have not ended
  std::int64_t submit_interval_ms = 5'000;   // a partly filled array waits at most this long
  std::int64_t poll_ms = 2'000;              // scontrol and the result files, this often
  std::int64_t command_timeout_ms = 60'000;  // each sbatch/scontrol/scancel call
  std::string kforge = "kforge";             // the kforge binary as the nodes see it
  std::string node_config;  // the config file the tasks read; empty: the daemon's own
  std::string sbatch = "sbatch";
  std::string scontrol = "scontrol";
  std::string scancel = "scancel";
  bool operator==(const SlurmConfig&) const = default;
};

// The `verifier.timing` section: the speed label (docs/VERIFIER.md, "The speed label"). When
// enabled, every passing sample's kernels (and its wrapper against its PyTorch reference, where
// it declares one) are timed with the device held exclusively.
// Which devices' samples get the speed label (verifier.timing.enabled): auto, every GPU's
// (NVIDIA or AMD) and not the CPU device's, whose times say nothing about a GPU; true, every
// device's (the CPU stand-in's too); false, none (a run's --require-speedup still times its
// samples).
enum class TimingOn { gpus, all, none };
inline constexpr EnumName<TimingOn> kTimingOnNames[] = {
    {TimingOn::gpus, "auto"}, {TimingOn::all, "true"}, {TimingOn::none, "false"}};

struct TimingConfig {
  TimingOn enabled = TimingOn::gpus;
  // Whether a sample of a device of this vendor is timed without a run asking for it.
  bool on_for(Vendor v) const {
    return enabled == TimingOn::all || (enabled == TimingOn::gpus && v != Vendor::cpu);
  }
  double budget_s = 0.3;     // timing per sample (the exclusive section), split over its calls
  int min_reps = 10;         // reps before the stop rule may stop
  int max_reps = 200;        // reps at most per timed call
  double target = 0.02;      // stop when the 95% interval's half width is within this fraction
  double min_speedup = 1.0;  // pass_perf: the speedup interval's lower bound above this
  double wait_s = 30;        // the longest a sample waits for the device before it gives up
  // A timing sample that would stop the device's other samples first lets them go on this long
  // while the timing samples that come meanwhile queue behind it: they are timed in one burst,
  // one stall for all (harness gpulock.py). 0 (the default): each stops them as it comes; on the
  // H200 0.5 cost more than it saved (docs/BENCHMARKS.md, "The label's cost without bursts").
  double gather_s = 0;
  // With the label on, the automatic worker count of a GPU (verifier.workers_per_device: auto)
  // is its share of the cores times this (still at most one per 4 GiB of its memory): a worker
  // stopped behind a timing section, or waiting for the device to time, holds no core, so more
  // workers than cores keep the cores busy meanwhile (issue 54). 1: one worker a core, as with
  // the label off. An explicit workers_per_device or --workers is taken as it is.
  double workers_factor = 1.0;
  // library_work: the sample's own Triton launches took less than this share of the timed
  // wrapper call's GPU time.
  double min_kernel_share = 0.5;
  // The label is taken for inputs up to this fraction of the worker's GPU memory (larger:
  // not_timed, with the reason); the timing holds about six times the inputs' bytes.
  double max_input_fraction = 0.125;
  // Lent slots (docs/VERIFIER.md, "Lent slots"): while a sample waits for its timing section
  // (the device held by another's, or the others stepping out), its worker's core is idle; the
  // pool then runs another sample meanwhile on one of the device's lent slots, at most this many
  // at once per device. kAutoLend (`auto` in the file): a quarter of the device's workers, at
  // least 1. 0 (the default): none; on the H200 lending gave no throughput (124.3 s against
  // 124.7 s, docs/BENCHMARKS.md "Lent slots").
  int lend = 0;
};

struct VerifierConfig {
  // local: the pool runs on this host. slurm: samples go to Slurm array tasks (`slurm:`).
  // Read through kBackendNames at load time (an unknown name is an error at its line); kept as
  // the name while the daemon's verifier thread compares it.
  std::string backend = "local";
  SlurmConfig slurm;
  // Devices to run on: "cuda:N", "rocm:N" or "cpu"; empty means detect (nvidia-smi, rocm-smi,
  // the driver's device files), and "cpu" when none is found.
  std::vector<std::string> devices;
  // Workers per GPU; kAutoWorkers (the default, `auto` in the file): sized from the cores, the
  // GPUs in use and each GPU's memory (auto_workers_per_device() in gpu.hpp).
  int workers_per_device = 0;
  int cpu_workers = 2;  // workers when the only device is "cpu"
  PoolMode mode = PoolMode::warm;
  // Warm mode: each slot keeps a child forked, sandboxed and holding a CUDA context ready for
  // its next sample (the sample's deadline starts when it is handed over).
  bool prestart = true;
  double timeout_s = 120;  // per sample (and again for its mutant re-run)
  std::string python = "python3";
  std::vector<std::string> python_path;  // extra sys.path entries for workers and samples
  // Modules a warm worker imports once, before any CUDA call (those not installed are skipped).
  std::vector<std::string> preload = {"torch", "triton", "triton.language", "numpy"};
  std::string harness;                    // empty: the installed kforge-harness.py
  std::int64_t memory_cap_mb = 8192;      // host memory per sample
  std::int64_t output_cap_kb = 256;       // captured stdout and stderr, each (head and tail kept)
  std::int64_t disk_cap_mb = 1024;        // tmpfs over the sample's directory (0: plain directory)
  std::int64_t file_size_cap_mb = 256;    // RLIMIT_FSIZE
  std::int64_t address_space_cap_mb = 0;  // RLIMIT_AS; 0: none (CUDA needs address space)
  int max_processes = 256;                // RLIMIT_NPROC for the sample's own uid
  int max_open_files = 4096;              // RLIMIT_NOFILE
  double gpu_memory_fraction = 0;         // per sample; 0: 0.9 / workers_per_device
  Autotune autotune = Autotune::single;
  // Hardware work queues per sample's GPU context: CUDA_DEVICE_MAX_CONNECTIONS (NVIDIA) or
  // GPU_MAX_HW_QUEUES (AMD) in the samples' environment; 0 leaves the driver's default (8 on
  // NVIDIA, 4 on AMD). Each queue is set up when a context is made and torn down when it goes,
  // and the driver does that one context at a time per GPU: with 1, an H200 makes 14.7 contexts
  // a second instead of 5.5 (docs/BENCHMARKS.md). Streams of one sample then share one queue.
  int gpu_hw_queues = 1;
  // How each sample's process waits for its GPU in a synchronise (docs/VERIFIER.md, "How a
  // sample's process waits for the GPU"): auto (the driver's default; spinning, for a sample),
  // spin, yield or blocking. Set in the process before its context is made; the report's
  // sandbox.cuda_sync says what was asked and whether it took.
  CudaSync cuda_sync = CudaSync::automatic;
  bool mutant_check = true;  // re-run passing samples with kernel launches skipped
  // same_process: the mutant run follows the real one in the sample's process (GPU memory the
  // real run freed is overwritten first); new_process: it gets a process of its own.
  MutantRun mutant_run = MutantRun::same_process;
  // The output mutants run after the skip-launch one kills a passing sample's test, in this
  // order, until one survives (docs/VERIFIER.md, "Output mutants"); empty: none.
  std::vector<std::string> mutants = {"tail",        "interior", "permute",
                                      "permute_row", "scale",    "zero"};
  // The kernel battery (docs/VERIFIER.md, "Kernel mutants"), after the output mutants: at most
  // this many kernel mutants per sample (0: none), within this many seconds of the mutant run
  // (the pool adds it to the mutant run's deadline).
  int kernel_mutants = 8;
  double kernel_mutant_time_s = 30;
  // A passing sample's captured launches replayed between guard zones, for reads and writes
  // outside their buffers (flag out_of_bounds; docs/VERIFIER.md, "Out-of-bounds accesses").
  bool bounds_check = true;
  // Targets every passing sample's launched kernels are compiled for, e.g. hip:gfx942 and
  // hip:gfx90a with Triton's AMD backend (verify/targets.hpp); nothing runs there. Empty: none.
  std::vector<std::string> cross_compile;
  // Seconds all targets of one sample may take together; the sample's deadline grows by this
  // much when it has targets.
  double cross_compile_timeout_s = 60;
  TimingConfig timing;
  // %u stands for the uid kforge runs as: users of one machine never share it.
  std::string work_dir = "/var/tmp/kforge-verify-%u";
  std::string triton_cache_dir;  // empty: <work_dir>/triton-cache
  bool triton_cache_per_worker = false;
  std::int64_t sandbox_uid_base = 61000;  // as root, each worker's samples run as their own uid
  int sandbox_uid_count = 1000;           // from this range (0 base: samples keep the pool's uid)
  std::int64_t sandbox_gid = 61000;
  std::string uid_lock_dir = "/run/lock";
  // A PID namespace per sample, with its own /proc (as non-root through a user namespace; the
  // pool refuses to start where the kernel forbids it). Off only to measure what it costs.
  bool pid_namespace = true;
  // The PID namespace's init: empty for kforge-sandbox-init (started with posix_spawn, copying
  // nothing of the worker), "fork" for a fork of the worker (what it was before; measured against
  // in kforge-bench-verify), or the path of an init program.
  std::string sandbox_init;
  // Paths samples can neither read nor write (hidden in their mount namespace). kforge adds the
  // database (with -wal, -shm, its directory) and the configuration file it loaded.
  std::vector<std::string> hide = {"/etc/kforge"};
  std::string cgroup = "auto";  // auto | off | a delegated cgroup v2 directory
  int queue_capacity = 64;
  // Which waiting sample a free worker takes (docs/VERIFIER.md, "Dispatch order"): input, as
  // submitted (the default: on the H200 it was faster than cost, which runs like samples
  // together); cost, the longest predicted first, each sample's wait added to its predicted
  // seconds so none waits behind later ones for long. Verdicts and outputs do not depend on it.
  VerifyOrder order = VerifyOrder::input;
  double worker_start_timeout_s = 180;
  int max_start_failures = 3;  // consecutive, per device, before it leaves the rotation
  // A sample the verifier could not run (flagged `infrastructure`: a worker died, a sandbox
  // could not be set up) goes back to the queue at most max_requeues - 1 times, waiting
  // requeue_backoff_s, doubled each time (at most 10 minutes); the next failure ends it with an
  // `error` verdict naming the cause.
  int max_requeues = 5;
  double requeue_backoff_s = 5;
  int memory_poll_ms = 100;
  bool probe_gpu = true;  // one worker per GPU checks it before the GPU's workers take samples
  // Variables copied from the pool's environment into the samples' (a trailing * matches a
  // prefix); everything else is dropped.
  std::vector<std::string> env_passthrough = {
      "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH",        "ROCM_PATH", "HIP_PATH", "CC", "CXX",
      "TRITON_*",        "NCCL_*",    "TORCH_SYMM_MEM_*", "NVSHMEM_*"};
  std::map<std::string, std::string> env;  // set in the samples' environment
};

void read_config(ConfigNode n, VerifierConfig& out);

// A reload (SIGHUP) of a running verifier: copies into `running` the settings of `fresh` that
// take effect without new workers: timeout_s, cross_compile_timeout_s and output_cap_kb (for
// samples started from now on), worker_start_timeout_s, max_start_failures, memory_poll_ms, order,
// cuda_sync (for sample processes started from now on: a child already prestarted keeps the one
// it was started with), and the `slurm` section but its shared_dir. The rest (devices, workers,
// mode, python, the sandbox, the backend) takes a restart. Returns whether anything changed.
bool apply_reloadable(VerifierConfig& running, const VerifierConfig& fresh);

}  // namespace kforge::verify
