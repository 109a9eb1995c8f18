#include "kforge/verify/gpu.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace kforge::verify {
namespace {

std::string trim(std::string s) {
  auto issp = [](unsigned char c) { return std::isspace(c) != 0; };
  while (!s.empty() && issp(static_cast<unsigned char>(s.back()))) s.pop_back();
  std::size_t i = 0;
  while (i < s.size() && issp(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(i);
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

class RealProbe final : public SystemProbe {
 public:
  explicit RealProbe(Env& env) : env_(env) {}
  Result<std::string> run(const std::vector<std::string>& argv) override {
    RunOptions o;
    o.timeout = std::chrono::seconds(20);
    o.output_cap = 1u << 20;
    auto r = env_.run(argv, o);
    if (!r.ok() && r.error().kind == "timeout")
      return fail("timeout", argv[0] + ": no answer in 20 s");
    if (!r.ok()) return r.error();
    if (r->exit_code == 127) return fail("not_found", argv[0] + ": not found");
    if (r->exit_code != 0)
      return fail("io", argv[0] + ": exited with status " + std::to_string(r->wait_status));
    return std::move(r->out);
  }
  std::vector<std::string> list_dir(const std::string& path) override {
    std::vector<std::string> out;
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
  }
  bool exists(const std::string& path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }

 private:
  Env& env_;
};

}  // namespace

SystemProbe& system_probe() {
  static RealProbe probe(default_env());
  return probe;
}

std::unique_ptr<SystemProbe> make_system_probe(Env& env) {
  return std::make_unique<RealProbe>(env);
}

std::map<std::string, std::string> Device::visibility_env() const {
  switch (vendor) {
    case Vendor::nvidia:
      if (!uuid.empty()) return {{"CUDA_VISIBLE_DEVICES", uuid}};
      return {{"CUDA_VISIBLE_DEVICES", std::to_string(index)}, {"CUDA_DEVICE_ORDER", "PCI_BUS_ID"}};
    case Vendor::amd:
      return {{"ROCR_VISIBLE_DEVICES", uuid.empty() ? std::to_string(index) : uuid},
              {"HIP_VISIBLE_DEVICES", "0"}};
    case Vendor::cpu:
      break;
  }
  return {{"CUDA_VISIBLE_DEVICES", ""}, {"HIP_VISIBLE_DEVICES", ""}, {"ROCR_VISIBLE_DEVICES", ""}};
}

std::map<std::string, std::string> Device::hw_queue_env(int queues) const {
  if (queues <= 0) return {};
  switch (vendor) {
    case Vendor::nvidia:
      return {{"CUDA_DEVICE_MAX_CONNECTIONS", std::to_string(queues)}};
    case Vendor::amd:
      return {{"GPU_MAX_HW_QUEUES", std::to_string(queues)}};
    case Vendor::cpu:
      break;
  }
  return {};
}

std::vector<Device> parse_nvidia_smi(const std::string& csv) {
  // nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits (the
  // memory column is optional: "81559" or "81559 MiB")
  std::vector<Device> out;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) f.push_back(trim(cell));
    if (f.size() < 3 || !all_digits(f[0])) continue;
    Device d;
    d.vendor = Vendor::nvidia;
    d.index = std::stoi(f[0]);
    d.id = "cuda:" + f[0];
    if (f[1].rfind("GPU-", 0) == 0 || f[1].rfind("MIG-", 0) == 0) d.uuid = f[1];
    d.name = f[2];
    if (f.size() >= 4) {
      std::string m = f[3];
      auto sp = m.find(' ');
      if (sp != std::string::npos) m = m.substr(0, sp);
      if (all_digits(m) && m.size() < 12) d.memory_mb = std::stoll(m);
    }
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(),
            [](const Device& a, const Device& b) { return a.index < b.index; });
  return out;
}

std::vector<Device> parse_rocm_smi(const std::string& json_text) {
  // rocm-smi --showproductname --showuniqueid --json: {"card0": {"Card series": ...,
  // "Unique ID": "0x..."}, ...}. Field names vary between versions; only "cardN" is relied on.
  std::vector<Device> out;
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return out;
  for (const auto& [key, value] : j.items()) {
    if (key.rfind("card", 0) != 0 || !all_digits(key.substr(4))) continue;
    Device d;
    d.vendor = Vendor::amd;
    d.index = std::stoi(key.substr(4));
    d.id = "rocm:" + std::to_string(d.index);
    if (value.is_object()) {
      for (const char* k :
           {"Card Series", "Card series", "Card SKU", "Card Model", "Device Name"}) {
        if (value.contains(k) && value[k].is_string() && !value[k].get<std::string>().empty()) {
          d.name = value[k].get<std::string>();
          break;
        }
      }
      if (value.contains("Unique ID") && value["Unique ID"].is_string()) {
        std::string u = value["Unique ID"].get<std::string>();
        // ROCr names a device "GPU-" and its unique id as 16 hex digits.
        if (u.rfind("0x", 0) == 0 && u.size() > 2 && u.size() <= 18) {
          std::string hex = u.substr(2);
          d.uuid = "GPU-" + std::string(16 - hex.size(), '0') + hex;
        }
      }
    }
    out.push_back(d);
  }
  std::sort(out.begin(), out.end(),
            [](const Device& a, const Device& b) { return a.index < b.index; });
  return out;
}

Detection detect_devices(SystemProbe& probe) {
  Detection det;
  auto nv = probe.run(
      {"nvidia-smi", "--query-gpu=index,uuid,name,memory.total", "--format=csv,noheader,nounits"});
  if (nv.ok()) {
    det.devices = parse_nvidia_smi(*nv);
    if (det.devices.empty())
      det.notes.push_back("nvidia-smi: no GPU in its output");
    else
      det.notes.push_back("nvidia-smi: " + std::to_string(det.devices.size()) + " GPU(s)");
  } else {
    det.notes.push_back("nvidia-smi: " + nv.error().message);
  }
  if (det.devices.empty()) {
    std::vector<int> idx;
    for (const auto& n : probe.list_dir("/dev"))
      if (n.rfind("nvidia", 0) == 0 && all_digits(n.substr(6)))
        idx.push_back(std::stoi(n.substr(6)));
    std::sort(idx.begin(), idx.end());
    for (int i : idx)
      det.devices.push_back({"cuda:" + std::to_string(i), Vendor::nvidia, i, "", "", 0});
    if (!idx.empty())
      det.notes.push_back("/dev/nvidiaN: " + std::to_string(idx.size()) + " GPU(s)");
  }
  std::vector<Device> amd;
  if (probe.exists("/dev/kfd")) {
    auto r = probe.run({"rocm-smi", "--showproductname", "--showuniqueid", "--json"});
    if (r.ok()) {
      amd = parse_rocm_smi(*r);
      det.notes.push_back("rocm-smi: " + std::to_string(amd.size()) + " GPU(s)");
    } else {
      det.notes.push_back("rocm-smi: " + r.error().message);
    }
    if (amd.empty()) {
      int i = 0;
      for (const auto& n : probe.list_dir("/dev/dri"))
        if (n.rfind("renderD", 0) == 0) {
          amd.push_back({"rocm:" + std::to_string(i), Vendor::amd, i, "", "", 0});
          ++i;
        }
      if (!amd.empty())
        det.notes.push_back("/dev/kfd + /dev/dri/renderD*: " + std::to_string(amd.size()) +
                            " GPU(s)");
    }
  }
  det.devices.insert(det.devices.end(), amd.begin(), amd.end());
  return det;
}

namespace {
std::string factor_text(double f) {
  std::ostringstream o;
  o << f;
  return o.str();
}
}  // namespace

int auto_workers_per_device(unsigned cores, std::size_t gpus, std::int64_t device_memory_mb,
                            std::string* why, double cpu_factor) {
  std::size_t g = std::max<std::size_t>(1, gpus);
  int per_gpu = static_cast<int>(static_cast<std::size_t>(cores) / g);
  // The factor's product rounded down, so 1.0 keeps the count exactly (no float drift).
  int by_cpu =
      std::max(2, cpu_factor > 1.0 ? static_cast<int>(per_gpu * cpu_factor + 1e-9) : per_gpu);
  int n = by_cpu;
  int by_memory = device_memory_mb > 0 ? static_cast<int>(device_memory_mb / 4096) : 0;
  if (device_memory_mb > 0) n = std::min(n, std::max(1, by_memory));
  n = std::clamp(n, 1, 64);
  if (why)
    *why =
        std::to_string(n) + " per GPU (" + std::to_string(cores) + " cores / " + std::to_string(g) +
        " GPU(s)" +
        (cpu_factor > 1.0 ? " x " + factor_text(cpu_factor) + " (speed label on)" : std::string()) +
        " = " + std::to_string(by_cpu) +
        (device_memory_mb > 0 ? "; " + std::to_string(device_memory_mb) +
                                    " MiB / 4 GiB = " + std::to_string(by_memory)
                              : std::string("; GPU memory unknown")) +
        ")";
  return n;
}

unsigned usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1u;
}

Result<std::vector<Device>> resolve_devices(const std::vector<std::string>& configured,
                                            SystemProbe& probe, std::vector<std::string>* notes) {
  bool detect = configured.empty() || (configured.size() == 1 && configured[0] == "auto");
  Detection det;
  bool detected = false;
  auto run_detection = [&] {
    if (!detected) {
      det = detect_devices(probe);
      detected = true;
      if (notes) notes->insert(notes->end(), det.notes.begin(), det.notes.end());
    }
  };
  std::vector<Device> out;
  if (detect) {
    run_detection();
    out = det.devices;
    if (out.empty()) out.push_back({"cpu", Vendor::cpu, -1, "", "", 0});
    return out;
  }
  std::set<std::string> seen;
  for (const auto& c : configured) {
    if (!seen.insert(c).second)
      return fail("config", "verifier.devices: '" + c + "' is listed twice");
    if (c == "cpu") {
      out.push_back({"cpu", Vendor::cpu, -1, "", "", 0});
      continue;
    }
    Vendor v;
    std::string num;
    if (c.rfind("cuda:", 0) == 0) {
      v = Vendor::nvidia;
      num = c.substr(5);
    } else if (c.rfind("rocm:", 0) == 0) {
      v = Vendor::amd;
      num = c.substr(5);
    } else {
      return fail("config", "verifier.devices: '" + c + "' is not cpu, auto, cuda:N or rocm:N");
    }
    if (!all_digits(num))
      return fail("config", "verifier.devices: '" + c + "': the index must be a number");
    Device d{c, v, std::stoi(num), "", "", 0};
    run_detection();
    for (const auto& found : det.devices)
      if (found.id == c) d = found;
    out.push_back(d);
  }
  return out;
}

}  // namespace kforge::verify
