#pragma once
// GPU detection and per-worker device visibility.
//
// The machine is the outside world: SystemProbe is the one door to it (running nvidia-smi or
// rocm-smi, listing /dev); the real one runs its commands through an Env. Tests pass a fake
// that returns canned or broken output.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/core/result.hpp"

namespace kforge::verify {

enum class Vendor { cpu, nvidia, amd };

struct Device {
  std::string id;  // "cuda:0", "rocm:1", "cpu"
  Vendor vendor = Vendor::cpu;
  int index = -1;              // the driver's index (nvidia-smi / rocm-smi order)
  std::string name;            // e.g. "NVIDIA H100 80GB HBM3"; empty when unknown
  std::string uuid;            // "GPU-..." when the tool reported one
  std::int64_t memory_mb = 0;  // the device's memory as the tool reported it; 0 when unknown

  // The variables that make this device the only one a worker sees, set before it starts:
  // NVIDIA: CUDA_VISIBLE_DEVICES (the UUID when known, else the index with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID, which is nvidia-smi's order). AMD: ROCR_VISIBLE_DEVICES
  // selects the device and HIP_VISIBLE_DEVICES=0 picks the one that remains (setting both to
  // the index would filter twice). CPU: every GPU hidden.
  std::map<std::string, std::string> visibility_env() const;
  // The variable that caps the hardware work queues of a context on this device at `queues`:
  // CUDA_DEVICE_MAX_CONNECTIONS (NVIDIA) or GPU_MAX_HW_QUEUES (AMD); none for 0 or the CPU.
  std::map<std::string, std::string> hw_queue_env(int queues) const;
};

class SystemProbe {
 public:
  virtual ~SystemProbe() = default;
  // Runs argv (argv[0] looked up on PATH) and returns its stdout; an error when it cannot be
  // started, exits non-zero or runs longer than a few seconds.
  virtual Result<std::string> run(const std::vector<std::string>& argv) = 0;
  // Entry names in a directory (empty when it does not exist).
  virtual std::vector<std::string> list_dir(const std::string& path) = 0;
  virtual bool exists(const std::string& path) = 0;
};

// The real machine (its commands run through default_env()).
SystemProbe& system_probe();
// The real machine, its commands run through `env` (which must outlive it).
std::unique_ptr<SystemProbe> make_system_probe(Env& env);

struct Detection {
  std::vector<Device> devices;     // GPUs found, in index order; empty when none
  std::vector<std::string> notes;  // how they were found, and what failed on the way
};

// nvidia-smi first, then /dev/nvidiaN; rocm-smi, then /dev/kfd with /dev/dri/renderD*.
Detection detect_devices(SystemProbe& probe);

// Turns the configured list into devices: empty or ["auto"] detects (falling back to "cpu"),
// otherwise each "cuda:N" / "rocm:N" / "cpu" is taken as given, named from detection when
// possible. Errors (kind "config") name the entry that is wrong.
Result<std::vector<Device>> resolve_devices(const std::vector<std::string>& configured,
                                            SystemProbe& probe,
                                            std::vector<std::string>* notes = nullptr);

// The automatic worker count (verifier.workers_per_device: auto) for one GPU: samples are
// CPU-bound (Triton compiling their kernels), so one worker for every core the device's share of
// the machine has (`cores` / `gpus`), at least 2; at most one per 4 GiB of the device's
// memory when that is known (each sample gets 0.9 / workers of it); at most 64. `why` (if given)
// receives the figures it used, for the log. `cpu_factor` (verifier.timing.workers_factor with
// the speed label on, else 1) multiplies the cores' count before the memory's bound: workers
// that wait behind timing sections hold no core.
int auto_workers_per_device(unsigned cores, std::size_t gpus, std::int64_t device_memory_mb,
                            std::string* why = nullptr, double cpu_factor = 1.0);

// The CPUs this process may run on (its affinity mask; the online count when that fails).
unsigned usable_cores();

// Parsers, exposed for tests.
std::vector<Device> parse_nvidia_smi(const std::string& csv);
std::vector<Device> parse_rocm_smi(const std::string& json_text);

}  // namespace kforge::verify
