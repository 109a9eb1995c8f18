#include "kforge/verify/config.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

#include "kforge/verify/targets.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::verify {

namespace {
void read_slurm(ConfigNode n, SlurmConfig& out) {
  n.get("shared_dir", out.shared_dir);
  n.get("partition", out.partition);
  n.get("account", out.account);
  n.get("gres", out.gres);
  n.get_at_least("gpus", out.gpus, 0);
  n.get("time_limit", out.time_limit);
  n.get("job_name", out.job_name);
  n.get("extra_args", out.extra_args);
  n.get_at_least("samples_per_task", out.samples_per_task, 1);
  n.get_at_least("max_array_tasks", out.max_array_tasks, 1);
  n.get_at_least("max_samples_in_flight", out.max_samples_in_flight, 1);
  n.get_at_least("submit_interval_ms", out.submit_interval_ms, 0);
  n.get_at_least("poll_ms", out.poll_ms, 50);
  n.get_at_least("command_timeout_ms", out.command_timeout_ms, 1000);
  n.get("kforge", out.kforge);
  n.get("node_config", out.node_config);
  n.get("sbatch", out.sbatch);
  n.get("scontrol", out.scontrol);
  n.get("scancel", out.scancel);
  if (out.job_name.empty()) n.invalid("job_name", "must not be empty");
  const std::pair<const char*, const std::string*> commands[] = {{"kforge", &out.kforge},
                                                                 {"sbatch", &out.sbatch},
                                                                 {"scontrol", &out.scontrol},
                                                                 {"scancel", &out.scancel}};
  for (const auto& [key, cmd] : commands)
    if (cmd->empty()) n.invalid(key, "must not be empty");
}
// verifier.timing.enabled: auto, or a boolean as the reader took one when the key was a boolean
// (parse_bool: a file or an environment value written then still reads).
std::optional<TimingOn> timing_on_of(const std::string& s) {
  if (bool b; parse_bool(s, b)) return b ? TimingOn::all : TimingOn::none;
  return value_of(kTimingOnNames, s);
}

void read_timing(ConfigNode n, TimingConfig& out) {
  std::string on(name_of(kTimingOnNames, out.enabled));
  n.get("enabled", on);
  if (auto v = timing_on_of(on))
    out.enabled = *v;
  else
    n.invalid("enabled", "'" + on + "' is not one of " + names_of(kTimingOnNames));
  n.get_above("budget_s", out.budget_s, 0);
  n.get_at_least("min_reps", out.min_reps, 3);
  n.get_at_least("max_reps", out.max_reps, 3);
  n.get_between("target", out.target, 0, 1);
  n.get_above("min_speedup", out.min_speedup, 0);
  n.get_above("wait_s", out.wait_s, 0);
  n.get_at_least("gather_s", out.gather_s, 0);
  if (out.gather_s >= out.wait_s) n.invalid("gather_s", "must be less than wait_s");
  n.get_between("workers_factor", out.workers_factor, 1, 4);
  n.get_between("min_kernel_share", out.min_kernel_share, 0, 1);
  n.get_between("max_input_fraction", out.max_input_fraction, 0, 1);
  if (out.max_reps < out.min_reps) n.invalid("max_reps", "must be at least min_reps");
  std::string lend = out.lend == kAutoLend ? std::string("auto") : std::to_string(out.lend);
  n.get("lend", lend);
  if (lend == "auto") {
    out.lend = kAutoLend;
  } else {
    bool digits = !lend.empty() && lend.size() < 4 &&
                  lend.find_first_not_of("0123456789") == std::string::npos;
    out.lend = digits ? std::stoi(lend) : kAutoLend;
    if (!digits) n.invalid("lend", "'" + lend + "' is not auto or a number >= 0");
  }
}
}  // namespace

void read_config(ConfigNode n, VerifierConfig& out) {
  {
    // Read as an enum (a name not in kBackendNames is an error at its line), kept as its name.
    Backend backend = value_of(kBackendNames, out.backend).value_or(Backend::local);
    n.get_enum("backend", backend, kBackendNames);
    out.backend = std::string(name_of(kBackendNames, backend));
  }
  read_slurm(n.child("slurm"), out.slurm);
  if (out.backend == name_of(kBackendNames, Backend::slurm) && out.slurm.shared_dir.empty())
    n.invalid("backend", "slurm needs verifier.slurm.shared_dir");
  n.get("devices", out.devices);
  {
    std::string w = out.workers_per_device == kAutoWorkers ? std::string("auto")
                                                           : std::to_string(out.workers_per_device);
    n.get("workers_per_device", w);
    if (w == "auto") {
      out.workers_per_device = kAutoWorkers;
    } else {
      bool digits =
          !w.empty() && w.size() < 6 && w.find_first_not_of("0123456789") == std::string::npos;
      out.workers_per_device = digits ? std::stoi(w) : -1;
      if (out.workers_per_device < 1)
        n.invalid("workers_per_device", "'" + w + "' is not auto or a number >= 1");
    }
  }
  n.get_at_least("cpu_workers", out.cpu_workers, 1);
  n.get_enum("mode", out.mode, kPoolModeNames);
  n.get("prestart", out.prestart);
  n.get_above("timeout_s", out.timeout_s, 0);
  n.get("python", out.python);
  n.get("python_path", out.python_path);
  n.get("preload", out.preload);
  n.get("harness", out.harness);
  n.get_at_least("memory_cap_mb", out.memory_cap_mb, 0, "0: no cap");
  n.get_at_least("output_cap_kb", out.output_cap_kb, 1);
  n.get_at_least("disk_cap_mb", out.disk_cap_mb, 0);
  n.get_at_least("file_size_cap_mb", out.file_size_cap_mb, 0);
  n.get_at_least("address_space_cap_mb", out.address_space_cap_mb, 0);
  n.get_at_least("max_processes", out.max_processes, 1);
  n.get_at_least("max_open_files", out.max_open_files, 16);
  n.get_between("gpu_memory_fraction", out.gpu_memory_fraction, 0, 1);
  n.get_enum("autotune", out.autotune, kAutotuneNames);
  n.get("gpu_hw_queues", out.gpu_hw_queues);
  n.get_enum("cuda_sync", out.cuda_sync, kCudaSyncNames);
  n.get("mutant_check", out.mutant_check);
  n.get_enum("mutant_run", out.mutant_run, kMutantRunNames);
  n.get("mutants", out.mutants);
  n.get_at_least("kernel_mutants", out.kernel_mutants, 0, "0: no kernel battery");
  n.get_above("kernel_mutant_time_s", out.kernel_mutant_time_s, 0);
  n.get("bounds_check", out.bounds_check);
  {
    std::vector<std::string> items = out.cross_compile;
    n.get("cross_compile", items);
    out.cross_compile.clear();
    if (auto e = parse_targets(items, "a target", out.cross_compile))
      n.invalid("cross_compile", *e);
  }
  n.get_above("cross_compile_timeout_s", out.cross_compile_timeout_s, 0);
  read_timing(n.child("timing"), out.timing);
  n.get("work_dir", out.work_dir);
  n.get("triton_cache_dir", out.triton_cache_dir);
  n.get("triton_cache_per_worker", out.triton_cache_per_worker);
  n.get_at_least("sandbox_uid_base", out.sandbox_uid_base, 0);
  n.get_at_least("sandbox_uid_count", out.sandbox_uid_count, 1);
  n.get("sandbox_gid", out.sandbox_gid);
  n.get("uid_lock_dir", out.uid_lock_dir);
  n.get("pid_namespace", out.pid_namespace);
  n.get("sandbox_init", out.sandbox_init);
  n.get("hide", out.hide);
  n.get("cgroup", out.cgroup);
  n.get_at_least("queue_capacity", out.queue_capacity, 1);
  n.get_enum("order", out.order, kVerifyOrderNames);
  n.get_above("worker_start_timeout_s", out.worker_start_timeout_s, 0);
  n.get_at_least("max_start_failures", out.max_start_failures, 1);
  n.get_at_least("max_requeues", out.max_requeues, 1);
  n.get_at_least("requeue_backoff_s", out.requeue_backoff_s, 0);
  n.get_at_least("memory_poll_ms", out.memory_poll_ms, 10);
  n.get("probe_gpu", out.probe_gpu);
  n.get("env_passthrough", out.env_passthrough);
  n.get("env", out.env);

  for (std::size_t i = 0; i < out.mutants.size(); ++i) {
    const auto& m = out.mutants[i];
    if (std::find(std::begin(kOutputMutants), std::end(kOutputMutants), m) ==
        std::end(kOutputMutants))
      n.invalid("mutants",
                "'" + m + "' is not one of tail, interior, permute, permute_row, scale, zero");
    else if (std::find(out.mutants.begin(), out.mutants.begin() + static_cast<long>(i), m) !=
             out.mutants.begin() + static_cast<long>(i))
      n.invalid("mutants", "'" + m + "' is listed twice");
  }
  if (out.gpu_hw_queues < 0 || out.gpu_hw_queues > 128)
    n.invalid("gpu_hw_queues", "must be between 0 (the driver's default) and 128");
  if (out.work_dir.empty()) n.invalid("work_dir", "must not be empty");
  for (const auto& d : out.devices) {
    bool ok = d == "cpu" || d == "auto" || d.rfind("cuda:", 0) == 0 || d.rfind("rocm:", 0) == 0;
    if (!ok) n.invalid("devices", "'" + d + "' is not cpu, auto, cuda:N or rocm:N");
  }
}

bool apply_reloadable(VerifierConfig& running, const VerifierConfig& fresh) {
  bool changed = false;
  auto take = [&changed](auto& to, const auto& from) {
    if (to == from) return;
    to = from;
    changed = true;
  };
  take(running.timeout_s, fresh.timeout_s);
  take(running.cross_compile_timeout_s, fresh.cross_compile_timeout_s);
  take(running.output_cap_kb, fresh.output_cap_kb);
  take(running.worker_start_timeout_s, fresh.worker_start_timeout_s);
  take(running.max_start_failures, fresh.max_start_failures);
  take(running.memory_poll_ms, fresh.memory_poll_ms);
  take(running.order, fresh.order);
  take(running.cuda_sync, fresh.cuda_sync);
  SlurmConfig slurm = fresh.slurm;
  slurm.shared_dir = running.slurm.shared_dir;  // where the live arrays are
  take(running.slurm, slurm);
  return changed;
}

}  // namespace kforge::verify
