#include "pool_impl.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kforge/core/fs.hpp"
#include "kforge/core/paths.hpp"

namespace kforge::verify {

namespace fs = std::filesystem;

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

std::string env_get(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// verifier.python as an absolute path: looked up on the pool's PATH (the samples' PATH is a
// clean one), then the interpreter itself as it reports it, not a shim or wrapper script that
// needs the caller's environment.
Result<std::string> resolve_python(const VerifierConfig& cfg, const std::string& harness,
                                   SystemProbe& probe) {
  std::string python = cfg.python;
  if (python.find('/') == std::string::npos) {
    // Resolved on the pool's PATH: the samples' PATH is a clean one.
    std::string path = env_get("PATH");
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string cand = path.substr(start, end - start) + "/" + python;
      if (end > start && ::access(cand.c_str(), X_OK) == 0) {
        python = cand;
        break;
      }
      start = end + 1;
    }
    if (python.find('/') == std::string::npos)
      return fail("config", "verifier.python: '" + cfg.python + "' is not on PATH");
  }
  {
    // The interpreter itself, not a shim or wrapper script that needs the caller's environment.
    auto info = probe.run({python, "-s", harness, "info"});
    if (!info.ok())
      return fail("config", "verifier.python: " + python +
                                " cannot run the harness: " + info.error().message);
    auto j = nlohmann::json::parse(*info, nullptr, false);
    std::string e = j.is_object() ? j.value("executable", std::string()) : std::string();
    if (!e.empty() && e[0] == '/') python = e;
  }
  return python;
}

// Each slot's device: total_workers spread over the devices, else each device's own count;
// `sizing` says how the count was chosen.
std::vector<std::size_t> plan_slots(int total_workers, const VerifierConfig& cfg,
                                    const std::vector<Device>& devs, std::string& sizing) {
  std::vector<std::size_t> slot_devices;
  if (total_workers > 0) {
    for (int i = 0; i < total_workers; ++i)
      slot_devices.push_back(static_cast<std::size_t>(i) % devs.size());
    sizing = std::to_string(total_workers) + " in all (set by the caller)";
  } else {
    // Each GPU gets its own count: workers_per_device, or (auto) one sized from the cores, the
    // GPUs in use and that GPU's memory.
    std::size_t gpus = 0;
    for (const auto& d : devs) gpus += d.vendor != Vendor::cpu ? 1 : 0;
    for (std::size_t d = 0; d < devs.size(); ++d) {
      int n = cfg.workers_per_device;
      std::string why = std::to_string(n) + " per GPU (verifier.workers_per_device)";
      if (devs[d].vendor == Vendor::cpu) {
        n = cfg.cpu_workers;
        why = std::to_string(n) + " (verifier.cpu_workers)";
      } else if (n == kAutoWorkers) {
        n = auto_workers_per_device(
            usable_cores(), gpus, devs[d].memory_mb, &why,
            cfg.timing.on_for(devs[d].vendor) ? cfg.timing.workers_factor : 1.0);
        why = "auto: " + why;
      }
      for (int i = 0; i < n; ++i) slot_devices.push_back(d);
      sizing += (sizing.empty() ? "" : "; ") + devs[d].id + ": " + why;
    }
    spdlog::info("verifier: workers: {}", sizing);
  }
  return slot_devices;
}

// Each device's lock files for the timing's exclusive section (harness gpulock.py).
Status make_device_locks(const std::string& run_root, std::vector<DeviceEntry>& devices) {
  for (std::size_t d = 0; d < devices.size(); ++d) {
    auto& e = devices[d];
    e.lock_gate = run_root + "/device-" + std::to_string(d) + ".gate";
    e.lock_rw = run_root + "/device-" + std::to_string(d) + ".rw";
    e.lock_queue = run_root + "/device-" + std::to_string(d) + ".queue";
    for (const auto* path : {&e.lock_gate, &e.lock_rw, &e.lock_queue}) {
      int fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
      if (fd < 0) return fail("io", *path + ": " + std::strerror(errno));
      ::fchmod(fd, 0644);
      ::close(fd);
    }
  }
  return {};
}

}  // namespace

Result<int> Pool::planned_workers(const PoolOptions& o) {
  if (o.total_workers > 0) return o.total_workers;
  std::vector<Device> devs = o.devices;
  if (devs.empty()) {
    Env& env = o.env ? *o.env : default_env();
    std::unique_ptr<SystemProbe> own_probe;
    if (!o.probe) own_probe = make_system_probe(env);
    KF_TRY(devs, resolve_devices(o.config.devices, o.probe ? *o.probe : *own_probe));
  }
  std::string sizing;
  return static_cast<int>(plan_slots(0, o.config, devs, sizing).size());
}

// The lent slots (verifier.timing.lend) after the workers, each device's in turn.
void Pool::Impl::add_lent_slots(std::vector<std::size_t>& slot_devices) {
  const auto end = static_cast<std::ptrdiff_t>(slot_devices.size());
  for (std::size_t d = 0; d < devices.size(); ++d) {
    int n = lend_slots(
        d, static_cast<int>(std::count(slot_devices.begin(), slot_devices.begin() + end, d)));
    for (int i = 0; i < n; ++i) slot_devices.push_back(d);
    any_lent = any_lent || n > 0;
    if (n > 0)
      sizing += "; " + devices[d].device.id + ": " + std::to_string(n) + " lent slot" +
                (n > 1 ? "s" : "") + " (verifier.timing.lend)";
  }
}

Result<std::unique_ptr<Pool>> Pool::create(PoolOptions o) {
  auto impl = std::make_unique<Impl>();
  Impl& I = *impl;
  I.cfg = o.config;
  I.env = o.env ? o.env : &default_env();
  I.clock = &I.env->clock();
  I.created = I.now();
  I.warm = I.cfg.mode == PoolMode::warm;
  KF_TRY(I.harness, find_harness(I.cfg));
  I.python = I.cfg.python;
  std::unique_ptr<SystemProbe> own_probe;
  if (!o.probe) own_probe = make_system_probe(*I.env);
  SystemProbe& probe = o.probe ? *o.probe : *own_probe;
  KF_TRY(I.python, resolve_python(I.cfg, I.harness, probe));
  std::vector<Device> devs = o.devices;
  if (devs.empty()) {
    std::vector<std::string> notes;
    KF_TRY(devs, resolve_devices(I.cfg.devices, probe, &notes));
    for (const auto& n : notes) spdlog::debug("verifier: device detection: {}", n);
  }
  for (const auto& d : devs) I.devices.push_back({d, true, 0, "", "", "", ""});
  // Slots: workers_per_device on each device (cpu_workers for "cpu"), or total_workers spread.
  std::vector<std::size_t> slot_devices = plan_slots(o.total_workers, I.cfg, devs, I.sizing);
  std::sort(slot_devices.begin(), slot_devices.end());
  const std::size_t workers = slot_devices.size();
  I.add_lent_slots(slot_devices);
  unsigned cores = usable_cores();
  I.omp_threads = std::max(1, static_cast<int>(cores / std::max<std::size_t>(1, workers)));

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
  // Always made: a run that requires a speedup asks for timing when the configuration does not.
  KF_CHECK(make_device_locks(I.run_root, I.devices));
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
    so.env = I.env;
    auto sb = Sandbox::create(std::move(so));
    if (!sb.ok()) {
      fs::remove_all(I.run_root, ec);
      return fail(sb.error());
    }
    I.sandbox = std::move(*sb);
  }
  I.caps = I.sandbox->caps();
  I.cgroups = std::make_unique<sys::Cgroups>(*I.env, I.cfg.cgroup);
  I.caps.memory = I.cgroups->available() ? "cgroup" : "rss-watch";
  I.caps.cgroup_note = I.cgroups->note();
  if (!I.cgroups->available() && I.cfg.memory_cap_mb > 0)
    spdlog::info("verifier: no cgroup memory limit ({}); watching resident memory instead",
                 I.cgroups->note());

  for (std::size_t i = 0; i < slot_devices.size(); ++i) {
    Slot s;
    s.index = static_cast<int>(i);
    s.device = slot_devices[i];
    s.lent = i >= workers;
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
  I.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (I.wake_fd < 0)
    return Error("io", std::string("verifier pool: eventfd: ") + std::strerror(errno));
  auto pool = std::unique_ptr<Pool>(new Pool(std::move(impl)));
  pool->step(milliseconds(0));  // start the workers
  return pool;
}

}  // namespace kforge::verify
