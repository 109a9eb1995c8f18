#include "verify_corpus.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "kforge/core/config.hpp"
#include "kforge/core/env.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/corpus/reader.hpp"
#include "kforge/verify/cost.hpp"
#include "kforge/verify/figures.hpp"
#include "kforge/verify/gpu.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/targets.hpp"

extern "C" char** environ;

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using verify::VerifyRequest;
using verify::VerifyResult;

double secs_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// --- samples ---------------------------------------------------------------------------------

struct Sample {
  std::string key;
  std::string code, wrapper, test;
};

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The names of the functions decorated with a Triton jit (`@triton.jit`, `@jit`, with or
// without arguments, other decorators such as @triton.autotune between it and the def).
std::vector<std::string> jit_functions(const std::string& code) {
  static const std::regex def_re(R"(^\s*def\s+([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  static const std::regex jit_re(R"(^\s*@\s*(triton\.)?jit\b)");
  std::vector<std::string> out;
  std::istringstream in(code);
  bool pending = false;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, jit_re)) {
      pending = true;
    } else if (std::regex_search(line, m, def_re)) {
      if (pending && std::find(out.begin(), out.end(), m[1].str()) == out.end())
        out.push_back(m[1].str());
      pending = false;
    }
  }
  return out;
}

// Renames identifier `from` to `to` where it stands alone (not part of a longer name, not an
// attribute such as torch.add).
std::string rename_ident(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  out.reserve(s.size() + 64);
  std::size_t i = 0;
  while (i < s.size()) {
    auto p = s.find(from, i);
    if (p == std::string::npos) break;
    bool left_ok = p == 0 || (!ident_char(s[p - 1]) && s[p - 1] != '.');
    bool right_ok = p + from.size() >= s.size() || !ident_char(s[p + from.size()]);
    out.append(s, i, p - i);
    out += left_ok && right_ok ? to : from;
    i = p + from.size();
  }
  out.append(s, i, std::string::npos);
  return out;
}

std::vector<Sample> load_records(const CorpusBenchOptions& o, const std::string& file) {
  std::vector<Sample> base;
  std::set<std::string> excl(o.exclude.begin(), o.exclude.end());
  auto st = corpus::read_records(
      file, corpus::Format::automatic,
      [&](nlohmann::ordered_json&& rec, const corpus::RecordPos& pos) -> Status {
        if (o.limit > 0 && static_cast<std::int64_t>(base.size()) >= o.limit) return {};
        auto str = [&](const char* k) {
          auto it = rec.find(k);
          return it != rec.end() && it->is_string() ? it->get<std::string>() : std::string();
        };
        Sample s{str("key"), str("code"), str("kernel_wrapper"), str("unitest_code")};
        if (s.key.empty()) s.key = str("file");
        if (s.key.empty()) s.key = "#" + std::to_string(pos.index);
        if (s.code.empty() || s.test.empty())
          return fail("parse", file + ": record " + std::to_string(pos.index) + " (" + s.key +
                                   "): code or unitest_code missing");
        if (!excl.count(s.key)) base.push_back(std::move(s));
        return {};
      });
  if (!st.ok()) {
    std::fprintf(stderr, "kforge-bench-verify: %s\n", st.error().message.c_str());
    std::exit(1);
  }
  return base;
}

std::vector<Sample> load_corpus(const CorpusBenchOptions& o, int* kernels) {
  std::vector<Sample> base = load_records(o, o.corpus);
  std::vector<Sample> out;
  *kernels = 0;
  for (int c = 0; c < o.copies; ++c) {
    std::string suffix = "_kf" + std::to_string(c);
    for (const auto& s : base) {
      Sample t = s;
      auto names = jit_functions(s.code);
      if (c == 0) *kernels += static_cast<int>(names.size());
      for (const auto& n : names) {
        t.code = rename_ident(t.code, n, n + suffix);
        t.wrapper = rename_ident(t.wrapper, n, n + suffix);
        t.test = rename_ident(t.test, n, n + suffix);
      }
      t.key = s.key + "@" + std::to_string(c);
      out.push_back(std::move(t));
    }
  }
  if (!o.mix.empty()) {
    // Spread evenly: the i-th of M extra samples goes after about (i + 1/2) * N / M of the N.
    CorpusBenchOptions all = o;
    all.limit = 0;
    std::vector<Sample> extra = load_records(all, o.mix);
    std::vector<Sample> mixed;
    std::size_t n = out.size(), m = extra.size(), next = 0;
    for (std::size_t i = 0; i < n; ++i) {
      while (next < m && (2 * next + 1) * n <= 2 * i * m) mixed.push_back(extra[next++]);
      mixed.push_back(std::move(out[i]));
    }
    while (next < m) mixed.push_back(extra[next++]);
    out = std::move(mixed);
  }
  return out;
}

// --- machine meters ----------------------------------------------------------------------

// Busy and total jiffies of all CPUs (/proc/stat).
std::pair<double, double> cpu_jiffies() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  double v[10] = {0};
  f >> cpu;
  for (double& x : v) f >> x;
  double idle = v[3] + v[4];
  double total = 0;
  for (int i = 0; i < 8; ++i) total += v[i];
  return {total - idle, total};
}

// GPU utilisation sampled by `nvidia-smi --query-gpu=index,utilization.gpu -lms 500` running
// beside the measurement: utilization.gpu is the share of the last sample period in which a
// kernel ran on the GPU, so its mean over the run times the wall is the GPU busy time.
class GpuMeter {
 public:
  explicit GpuMeter(kforge::Env& env) : env_(env) {}
  void start() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    SpawnOptions so;
    so.argv = {"nvidia-smi", "--query-gpu=index,utilization.gpu", "--format=csv,noheader,nounits",
               "-lms", "500"};
    so.fds = {{p[1], 1}};
    so.new_session = false;
    auto pid = env_.spawn(so);
    ::close(p[1]);
    if (!pid.ok()) {
      ::close(p[0]);
      return;
    }
    pid_ = *pid;
    fd_ = p[0];
    reader_ = std::thread([this] {
      std::string buf;
      char tmp[4096];
      ssize_t n;
      while ((n = ::read(fd_, tmp, sizeof tmp)) > 0) {
        buf.append(tmp, static_cast<std::size_t>(n));
        std::size_t nl;
        while ((nl = buf.find('\n')) != std::string::npos) {
          std::string line = buf.substr(0, nl);
          buf.erase(0, nl + 1);
          auto comma = line.find(',');
          if (comma == std::string::npos) continue;
          try {
            int idx = std::stoi(line.substr(0, comma));
            double u = std::stod(line.substr(comma + 1));
            std::lock_guard l(mu_);
            sum_[idx] += u;
            ++count_[idx];
          } catch (...) {
          }
        }
      }
    });
  }
  // Mean utilisation (%) per GPU index; empty when nvidia-smi gave nothing.
  std::map<int, double> stop() {
    if (pid_ > 0) {
      env_.kill(pid_, SIGTERM);
      env_.wait(pid_, WaitMode::block);
    }
    if (reader_.joinable()) reader_.join();
    if (fd_ >= 0) ::close(fd_);
    std::map<int, double> out;
    for (const auto& [i, s] : sum_) out[i] = s / count_[i];
    return out;
  }

 private:
  kforge::Env& env_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::thread reader_;
  std::mutex mu_;
  std::map<int, double> sum_;
  std::map<int, int> count_;
};

// --- one measurement ---------------------------------------------------------------------

struct Measure {
  std::string label;
  int workers = 0;
  std::size_t samples = 0;
  double wall_s = 0, rate = 0, mean_s = 0, p95_s = 0, max_s = 0;
  double cpu_busy_pct = 0;      // of all cores over the wall
  double cpu_s_per_sample = 0;  // the samples' own processes
  double gpu_busy_pct = -1;     // mean over the GPUs in use; -1 unknown
  std::map<std::string, int> verdicts;
  std::map<std::string, double> phase_mean_ms;  // kforge runs
  std::map<std::string, double> phase_total_ms;
  // The harness's phases (docs/VERIFIER.md, "Phases"): phase -> samples, wall s, cpu s summed.
  std::map<std::string, std::array<double, 3>> phase_times;
  int context_on_path = -1;  // samples whose process was not ready (CUDA context) before them
  std::string sizing;
  // With cross-compile targets: the mean time the targets took per cross-compiled sample, and
  // the results per "target result" (hip:gfx942 ok).
  double cross_ms_mean = -1;
  // With the speed label: the samples timed and the mean exclusive GPU time of each.
  int timed = 0;
  double exclusive_ms_mean = -1;
  double waited_ms_mean = -1;         // a timed sample's wait for the device
  double prepare_ms_mean = -1;        // its preparation, the device shared
  double reader_waited_ms_mean = -1;  // every sample's waits behind timing sections
  std::map<std::string, int> cross_results;
};

struct Meters {
  explicit Meters(kforge::Env& env) : gpu(env) {}
  std::pair<double, double> cpu0;
  GpuMeter gpu;
  bool gpus = false;
  Clock::time_point t0;
  void start(bool with_gpu) {
    gpus = with_gpu;
    if (gpus) gpu.start();
    cpu0 = cpu_jiffies();
    t0 = Clock::now();
  }
  void stop(Measure& m, const std::vector<int>& gpu_indices) {
    m.wall_s = secs_since(t0);
    auto cpu1 = cpu_jiffies();
    double total = cpu1.second - cpu0.second;
    m.cpu_busy_pct = total > 0 ? 100.0 * (cpu1.first - cpu0.first) / total : 0;
    if (gpus) {
      auto util = gpu.stop();
      double sum = 0;
      int n = 0;
      for (int i : gpu_indices)
        if (util.count(i)) sum += util[i], ++n;
      if (n > 0) m.gpu_busy_pct = sum / n;
    }
  }
};

void finish_stats(Measure& m, std::vector<double> times, double cpu_total_s) {
  m.samples = times.size();
  m.rate = m.wall_s > 0 ? static_cast<double>(times.size()) / m.wall_s : 0;
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    m.mean_s = std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(times.size());
    m.p95_s = times[std::min(times.size() - 1,
                             static_cast<std::size_t>(0.95 * static_cast<double>(times.size())))];
    m.max_s = times.back();
    m.cpu_s_per_sample = cpu_total_s / static_cast<double>(times.size());
  }
}

// The per-phase table (bench/verify/phase_table.py prints the same from kforge verify --json).
void print_phase_times(const Measure& m) {
  if (m.phase_times.empty()) return;
  static const std::vector<std::string> order = {
      "prepare",        "test",        "speed",          "cross_compile", "bounds",
      "mutant_prepare", "skip_launch", "output_mutants", "kernel_battery"};
  std::vector<std::string> names;
  for (const auto& k : order)
    if (m.phase_times.count(k)) names.push_back(k);
  for (const auto& [k, v] : m.phase_times)
    if (std::find(order.begin(), order.end(), k) == order.end()) names.push_back(k);
  double cpu_all = 0;
  for (const auto& [k, v] : m.phase_times) cpu_all += v[2];
  std::printf("  per-phase time (%zu samples): phase samples wall_s cpu_s cpu_ms/sample share\n",
              m.samples);
  for (const auto& k : names) {
    const auto& v = m.phase_times.at(k);
    std::printf("    %-16s %5.0f %8.1f %8.1f %8.0f %5.0f%%\n", k.c_str(), v[0], v[1], v[2],
                v[0] > 0 ? 1000.0 * v[2] / v[0] : 0.0, cpu_all > 0 ? 100.0 * v[2] / cpu_all : 0.0);
  }
}

void print(const Measure& m) {
  std::string v;
  for (const auto& [k, n] : m.verdicts) v += " " + k + "=" + std::to_string(n);
  std::printf(
      "%-34s workers=%-3d samples=%zu wall_s=%.1f samples_per_s=%.3f mean_sample_s=%.2f "
      "p95_sample_s=%.2f max_sample_s=%.1f cpu_busy_pct=%.0f cpu_s_per_sample=%.2f "
      "gpu_busy_pct=%.0f%s\n",
      m.label.c_str(), m.workers, m.samples, m.wall_s, m.rate, m.mean_s, m.p95_s, m.max_s,
      m.cpu_busy_pct, m.cpu_s_per_sample, m.gpu_busy_pct, v.c_str());
  if (!m.phase_mean_ms.empty()) {
    std::string p;
    for (const auto& [k, x] : m.phase_mean_ms) {
      char b[64];
      std::snprintf(b, sizeof b, " %s=%.0f", k.c_str(), x);
      p += b;
    }
    std::printf("  phases (mean ms per sample):%s context_on_path=%d\n", p.c_str(),
                m.context_on_path);
  }
  print_phase_times(m);
  if (!m.sizing.empty()) std::printf("  workers: %s\n", m.sizing.c_str());
  std::fflush(stdout);
}

// What every measurement of one invocation shares; processes go through `env`.
struct Bench {
  kforge::Env& env = default_env();
  CorpusBenchOptions o;
  verify::VerifierConfig base;  // --config's verifier section, else the defaults
  std::vector<verify::Device> devices;
  std::vector<int> gpu_indices;
  bool gpu = false;
  std::ofstream samples_out;
  int run_no = 0;
};

void write_sample(Bench& e, const std::string& label, const std::string& key,
                  const std::string& verdict, const nlohmann::json& figures,
                  const std::string& detail = "") {
  if (!e.samples_out) return;
  nlohmann::json j = {{"run", label}, {"key", key}, {"verdict", verdict}};
  for (const auto& [k, v] : figures.items()) j[k] = v;
  if (!detail.empty()) j["detail"] = detail.substr(0, 400);  // why it did not pass
  e.samples_out << j.dump() << "\n";
  e.samples_out.flush();
}

// A plain `python sample.py` per sample, P at once, inheriting this process's environment (as a
// user's own script would), with a cold Triton cache of the pass's own and the GPUs taken in
// turn. Exit status 0 counts as passed.
Measure run_naive(Bench& e, const std::vector<Sample>& samples, const std::string& label) {
  Measure m;
  m.label = label;
  m.workers = e.o.naive_procs;
  std::string dir = e.o.work_dir + "/naive-" + std::to_string(e.run_no++);
  std::string cache = dir + "/triton-cache";
  fs::create_directories(cache);
  std::vector<double> times;
  double cpu_total = 0;
  struct Proc {
    pid_t pid;
    std::size_t index;
    Clock::time_point start;
  };
  std::vector<Proc> running;
  std::size_t next = 0;
  Meters meters(e.env);
  meters.start(e.gpu);
  auto deadline_ms = static_cast<std::int64_t>(e.o.timeout_s * 1000);
  while (next < samples.size() || !running.empty()) {
    while (next < samples.size() && static_cast<int>(running.size()) < e.o.naive_procs) {
      const auto& s = samples[next];
      std::string sd = dir + "/s" + std::to_string(next);
      fs::create_directories(sd);
      (void)write_file(sd + "/sample.py", s.code + "\n\n" + s.wrapper + "\n\n" + s.test + "\n");
      std::string visible;
      if (!e.gpu_indices.empty()) {
        const auto& d = e.devices[next % e.devices.size()];
        visible = d.uuid.empty() ? std::to_string(d.index) : d.uuid;
      }
      SpawnOptions so;
      so.argv = {e.o.python, "sample.py"};
      so.cwd = sd;
      so.env.emplace();
      for (char** v = environ; v && *v; ++v) {
        std::string kv = *v;
        if (kv.rfind("TRITON_CACHE_DIR=", 0) == 0 || kv.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0)
          continue;
        so.env->push_back(kv);
      }
      so.env->push_back("TRITON_CACHE_DIR=" + cache);
      if (!visible.empty()) so.env->push_back("CUDA_VISIBLE_DEVICES=" + visible);
      const std::string out_path = sd + "/output.txt";
      int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      so.fds = {{out, 1}, {out, 2}};
      auto pid = e.env.spawn(so);  // a session of its own: its group is killed below
      if (out >= 0) ::close(out);
      if (!pid.ok()) {
        std::fprintf(stderr, "%s: %s\n", samples[next].key.c_str(), pid.error().message.c_str());
        ++m.verdicts["not_started"];
        ++next;
        continue;
      }
      running.push_back({*pid, next, Clock::now()});
      ++next;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (std::size_t i = 0; i < running.size();) {
      auto& p = running[i];
      auto ended = e.env.wait(p.pid, WaitMode::no_hang);
      auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - p.start).count();
      int st = ended ? ended->status : 0;
      if (!ended && ms > deadline_ms) {
        kill_group(e.env, p.pid);
        ended = e.env.wait(p.pid, WaitMode::block);
        st = -1;
      }
      if (ended) {
        e.env.kill(-p.pid, SIGKILL);  // whatever it left behind
        double cpu = static_cast<double>(ended->cpu_ms) / 1000.0;
        cpu_total += cpu;
        double t = static_cast<double>(ms) / 1000.0;
        times.push_back(t);
        std::string verdict = st == -1                                ? "timeout"
                              : WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "passed"
                                                                      : "failed";
        ++m.verdicts[verdict];
        write_sample(e, label, samples[p.index].key, verdict,
                     {{"duration_ms", ms}, {"cpu_ms", static_cast<std::int64_t>(cpu * 1000)}});
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  meters.stop(m, e.gpu_indices);
  finish_stats(m, times, cpu_total);
  std::error_code ec;
  fs::remove_all(dir, ec);
  print(m);
  return m;
}

// kforge's warm pool; `cache` empty: a cold cache of its own (returned through `cache`);
// `driver_queues`: verifier.gpu_hw_queues 0 (the driver's default) instead of the config's;
// `no_battery`: verifier.mutants [] (no output mutants); `no_bounds`: verifier.bounds_check off.
Measure run_pool(Bench& e, const std::vector<Sample>& samples, const std::string& workers,
                 const std::string& label, std::string& cache, bool driver_queues = false,
                 bool no_battery = false, const std::vector<std::string>& targets = {},
                 bool timing = false, bool no_bounds = false) {
  Measure m;
  m.label = label;
  verify::VerifierConfig cfg = e.base;
  cfg.cross_compile = targets;
  cfg.timing.enabled = timing ? verify::TimingOn::all : verify::TimingOn::none;
  double exclusive_ms = 0, waited_ms = 0, prepare_ms = 0, reader_waited_ms = 0;
  int locked = 0;
  double cross_ms = 0;
  int crossed = 0;
  if (driver_queues) cfg.gpu_hw_queues = 0;
  if (no_battery) cfg.mutants.clear();
  if (no_bounds) cfg.bounds_check = false;
  cfg.python = e.o.python;
  cfg.autotune = value_of(verify::kAutotuneNames, e.o.autotune).value_or(verify::Autotune::single);
  cfg.timeout_s = e.o.timeout_s;
  cfg.worker_start_timeout_s = 300;
  cfg.sandbox_uid_base = e.o.sandbox_uid_base;
  cfg.queue_capacity = 16;
  cfg.devices = e.o.devices;
  if (e.gpu) {
    cfg.preload = {"torch", "triton", "triton.language", "numpy"};
    cfg.memory_cap_mb = 16384;
  } else {
    cfg.preload = {"json"};
  }
  cfg.workers_per_device =
      workers == "auto" ? verify::kAutoWorkers : std::max(1, std::atoi(workers.c_str()));
  int n = e.run_no++;
  cfg.work_dir = e.o.work_dir + "/w" + std::to_string(n);
  if (cache.empty()) cache = e.o.work_dir + "/cache-" + std::to_string(n);
  cfg.triton_cache_dir = cache;
  verify::PoolOptions po;
  po.config = cfg;
  po.devices = e.devices;
  auto t0 = Clock::now();
  auto pool = verify::Pool::create(po);
  if (!pool.ok()) {
    std::fprintf(stderr, "kforge-bench-verify: %s\n", pool.error().message.c_str());
    std::exit(1);
  }
  auto& p = **pool;
  m.workers = p.slots();
  m.sizing = p.sizing();
  auto ready = [&] {
    int k = 0;
    for (const auto& d : p.devices()) k += d.ready_workers;
    return k >= p.slots();
  };
  auto give_up = Clock::now() + std::chrono::minutes(5);
  while (!ready() && Clock::now() < give_up) p.step(std::chrono::milliseconds(50));
  double startup = secs_since(t0);
  std::vector<double> times;
  double cpu_total = 0;
  std::map<std::string, double> phase_sum;
  std::map<std::string, int> phase_n;
  int on_path = 0;
  std::size_t next = 0, done = 0;
  Meters meters(e.env);
  meters.start(e.gpu);
  auto request_of = [](const Sample& s) {
    VerifyRequest r;
    r.key = s.key;
    r.code = s.code;
    r.kernel_wrapper = s.wrapper;
    r.unitest_code = s.test;
    return r;
  };
  // Submitted in the pool's dispatch order (verifier.order), as kforge verify submits a file's
  // records: the pool's own choice sees only its queue_capacity window.
  std::vector<double> costs;
  for (const auto& s : samples) costs.push_back(verify::predicted_cost_s(request_of(s)));
  const auto order = verify::dispatch_order(costs, cfg.order);
  while (done < samples.size()) {
    while (next < samples.size() && p.accepting()) {
      VerifyRequest r = request_of(samples[order[next++]]);
      auto id = p.submit(std::move(r), [&](VerifyResult&& res) {
        ++done;
        std::string v = verify::to_string(res.verdict);
        for (const auto& f : res.flags) v += "+" + f;
        ++m.verdicts[v];
        auto fig = verify::sample_figures(res);
        const auto& ph = fig["phases"];
        double t = static_cast<double>(res.duration_ms + ph.value("mutant", std::int64_t{0}));
        times.push_back(t / 1000.0);
        auto cpu = fig.value("cpu_ms", std::int64_t{-1});
        if (cpu > 0) cpu_total += static_cast<double>(cpu) / 1000.0;
        for (const auto& [k, x] : ph.items()) {
          phase_sum[k] += x.get<double>();
          ++phase_n[k];
        }
        if (ph.value("context_waited", std::int64_t{0}) <= 0) ++on_path;
        for (const auto& [k, pt] : fig["phase_times"].items()) {
          auto& row = m.phase_times[k];
          row[0] += 1;
          row[1] += pt.value("wall_ms", 0.0) / 1000.0;
          row[2] += pt.value("cpu_ms", 0.0) / 1000.0;
        }
        if (res.report.contains("speed") && res.report["speed"].is_object() &&
            res.report["speed"].value("timed", false)) {
          ++m.timed;
          exclusive_ms += res.report["speed"].value("exclusive_ms", 0.0);
          waited_ms += res.report["speed"].value("waited_ms", 0.0);
          prepare_ms += res.report["speed"].value("prepare_ms", 0.0);
        }
        if (res.report.contains("gpu_lock") && res.report["gpu_lock"].is_object()) {
          const auto& lk = res.report["gpu_lock"];
          ++locked;
          reader_waited_ms += lk.value("reader_waited_ms", 0.0);
          // Per sample in the samples file: what to look at when timing samples wait long.
          if (timing) {
            fig["lock"] = {{"reader_waited_ms", lk.value("reader_waited_ms", 0)},
                           {"writer_retries", lk.value("writer_retries", 0)},
                           {"longest_shared_ms", lk.value("longest_shared_ms", 0)},
                           {"longest_ended_by", lk.value("longest_ended_by", nlohmann::json())},
                           {"watch", lk.value("watch", nlohmann::json())},
                           {"watch_stepped_out", lk.value("watch_stepped_out", 0)}};
            if (res.report.contains("speed") && res.report["speed"].is_object())
              for (const char* k : {"waited_ms", "exclusive_ms", "prepare_ms"})
                fig["lock"][k] = res.report["speed"].value(k, nlohmann::json());
          }
        }
        if (res.report.contains("cross_compile") && res.report["cross_compile"].is_object()) {
          cross_ms += res.report["cross_compile"].value("ms", 0.0);
          ++crossed;
          for (const auto& tr : verify::cross_compile_results(res.report))
            ++m.cross_results[tr.target + " " + std::string(to_string(tr.result))];
        }
        write_sample(e, label, res.key, v, fig,
                     res.verdict == verify::Verdict::passed ? std::string() : res.detail);
      });
      if (!id.ok()) break;
    }
    p.step(std::chrono::milliseconds(50));
  }
  meters.stop(m, e.gpu_indices);
  finish_stats(m, times, cpu_total);
  for (const auto& [k, x] : phase_sum) {
    m.phase_total_ms[k] = x;
    m.phase_mean_ms[k] = x / std::max(1, phase_n[k]);
  }
  m.context_on_path = on_path;
  if (crossed > 0) m.cross_ms_mean = cross_ms / crossed;
  if (m.timed > 0) {
    m.exclusive_ms_mean = exclusive_ms / m.timed;
    m.waited_ms_mean = waited_ms / m.timed;
    m.prepare_ms_mean = prepare_ms / m.timed;
  }
  if (locked > 0) m.reader_waited_ms_mean = reader_waited_ms / locked;
  print(m);
  if (timing)
    std::printf(
        "  timing: %d samples timed, on average %.0f ms of exclusive GPU, %.0f ms waiting for "
        "it, %.0f ms preparing (the GPU shared); every sample waited %.0f ms behind timing "
        "sections on average\n",
        m.timed, m.exclusive_ms_mean, m.waited_ms_mean, m.prepare_ms_mean, m.reader_waited_ms_mean);
  if (!targets.empty()) {
    std::string results;
    for (const auto& [k, count] : m.cross_results)
      results += (results.empty() ? "" : ", ") + k + " " + std::to_string(count);
    std::printf("  cross_compile: %d samples, %.0f ms each on average; %s\n", crossed,
                m.cross_ms_mean, results.c_str());
  }
  std::printf("  startup_s=%.1f (workers importing torch and triton; not in the wall)\n", startup);
  return m;
}

}  // namespace

int run_corpus_bench(const CorpusBenchOptions& opts) {
  Bench e;
  e.o = opts;
  auto& o = e.o;
  if (o.work_dir.empty())
    o.work_dir =
        (fs::temp_directory_path() / ("kforge-bench-real-" + std::to_string(::getpid()))).string();
  fs::create_directories(o.work_dir);
  ::chmod(o.work_dir.c_str(), 0755);
  if (!o.config.empty()) {
    auto reader = ConfigReader::load_file(o.config);
    Status read = reader.ok() ? Status{} : Status(reader.error());
    if (read.ok()) {
      verify::read_config((*reader)->root().child("verifier"), e.base);
      read = (*reader)->finish();
    }
    if (!read.ok()) {
      std::fprintf(stderr, "kforge-bench-verify: %s\n", read.error().message.c_str());
      return 1;
    }
  }
  int kernels = 0;
  auto samples = load_corpus(o, &kernels);
  if (samples.empty()) {
    std::fprintf(stderr, "kforge-bench-verify: no samples in %s\n", o.corpus.c_str());
    return 1;
  }
  if (!o.emit.empty()) {
    std::ofstream f(o.emit, std::ios::trunc);
    for (const auto& s : samples)
      f << nlohmann::json{{"key", s.key},
                          {"code", s.code},
                          {"kernel_wrapper", s.wrapper},
                          {"unitest_code", s.test}}
               .dump()
        << "\n";
    f.close();
    if (!f) {
      std::fprintf(stderr, "kforge-bench-verify: %s: cannot write\n", o.emit.c_str());
      return 1;
    }
    std::printf("%zu samples written to %s\n", samples.size(), o.emit.c_str());
    return 0;
  }
  auto devs = verify::resolve_devices(o.devices, verify::system_probe());
  if (!devs.ok()) {
    std::fprintf(stderr, "kforge-bench-verify: %s\n", devs.error().message.c_str());
    return 1;
  }
  e.devices = *devs;
  for (const auto& d : e.devices)
    if (d.vendor != verify::Vendor::cpu) e.gpu_indices.push_back(d.index);
  e.gpu = !e.gpu_indices.empty();
  if (!o.samples_out.empty()) e.samples_out.open(o.samples_out, std::ios::trunc);
  std::string devnames;
  for (const auto& d : e.devices)
    devnames += (devnames.empty() ? "" : ",") + d.id + (d.name.empty() ? "" : " (" + d.name + ")");
  unsigned cores = verify::usable_cores();
  std::printf(
      "kforge-bench-verify --corpus %s: %zu samples (%d copies, %d kernels per copy renamed), "
      "devices %s, %u cores, timeout %.0f s, autotune %s in kforge, full in the plain runs\n",
      o.corpus.c_str(), samples.size(), o.copies, kernels, devnames.c_str(), cores, o.timeout_s,
      o.autotune.c_str());
  if (!e.gpu)
    std::printf(
        "NOTE: no GPU found: the figures measure the machinery only (samples need torch)\n");
  std::fflush(stdout);

  Measure naive, warm, cached, queues8, no_battery, no_bounds, cross1, cross_all, timed;
  std::vector<Measure> sweep;
  // The figures as key=value: after each measurement (prefixed "so far: ", so a run cut short
  // still leaves them) and once at the end (the last line).
  auto figures = [&](bool partial) {
    std::string best_w;
    double best = 0, auto_rate = o.workers == "auto" ? warm.rate : 0;
    int auto_workers = o.workers == "auto" ? warm.workers : 0;
    for (std::size_t i = 0; i < sweep.size(); ++i) {
      if (sweep[i].rate > best) best = sweep[i].rate, best_w = o.sweep[i];
      if (o.sweep[i] == "auto") auto_rate = sweep[i].rate, auto_workers = sweep[i].workers;
    }
    if (!sweep.empty() && o.workers == "auto" && warm.rate > best)
      best = warm.rate, best_w = "auto";

    auto ph = [&](const char* k) {
      auto it = warm.phase_mean_ms.find(k);
      return it == warm.phase_mean_ms.end() ? -1.0 : it->second;
    };
    auto tot = [&](const char* k) {
      auto it = warm.phase_total_ms.find(k);
      return it == warm.phase_total_ms.end() ? 0.0 : it->second;
    };
    // The share of the machine's CPU that compiling took during the warm run.
    double compile_cpu_share = warm.wall_s > 0
                                   ? 100.0 * (tot("compile_cpu") + tot("compile_child_cpu")) /
                                         1000.0 / (warm.wall_s * cores)
                                   : 0;
    std::printf(
        "%ssamples=%zu copies=%d cores=%u gpus=%zu naive_procs=%d naive_samples_per_s=%.3f "
        "naive_mean_s=%.2f naive_p95_s=%.2f naive_cpu_busy_pct=%.0f naive_gpu_busy_pct=%.0f "
        "warm_workers=%d warm_samples_per_s=%.3f warm_mean_s=%.2f warm_p95_s=%.2f "
        "warm_cpu_busy_pct=%.0f warm_cpu_s_per_sample=%.2f warm_gpu_busy_pct=%.0f speedup=%.2f "
        "cached_samples_per_s=%.3f cached_speedup=%.2f import_ms=%.0f tests_ms=%.0f "
        "compile_ms=%.0f "
        "compile_cpu_ms=%.0f compile_child_cpu_ms=%.0f compiles=%.1f launcher_ms=%.0f "
        "launcher_builds=%.2f run_ms=%.0f mutant_ms=%.0f "
        "mutant_compiles=%.0f context_ms=%.0f context_cpu_ms=%.0f context_on_path=%d "
        "compile_cpu_share_pct=%.0f "
        "best_workers=%s best_samples_per_s=%.3f auto_workers=%d auto_samples_per_s=%.3f "
        "auto_vs_best_pct=%.1f hw_queues_default_samples_per_s=%.3f hw_queues_speedup=%.2f "
        "no_battery_samples_per_s=%.3f battery_throughput_pct=%.1f "
        "cross1_samples_per_s=%.3f cross1_ms_per_sample=%.0f cross1_throughput_pct=%.1f "
        "cross_all_samples_per_s=%.3f cross_all_ms_per_sample=%.0f "
        "cross_all_throughput_pct=%.1f timing_samples_per_s=%.3f timing_throughput_pct=%.1f "
        "timing_timed=%d timing_exclusive_ms_per_sample=%.0f timing_waited_ms_per_sample=%.0f "
        "timing_reader_waited_ms_per_sample=%.0f no_bounds_samples_per_s=%.3f "
        "bounds_throughput_pct=%.1f\n",
        partial ? "so far: " : "", samples.size(), o.copies, cores, e.gpu_indices.size(),
        o.naive_procs, naive.rate, naive.mean_s, naive.p95_s, naive.cpu_busy_pct,
        naive.gpu_busy_pct, warm.workers, warm.rate, warm.mean_s, warm.p95_s, warm.cpu_busy_pct,
        warm.cpu_s_per_sample, warm.gpu_busy_pct, naive.rate > 0 ? warm.rate / naive.rate : 0.0,
        cached.rate, warm.rate > 0 && cached.rate > 0 ? cached.rate / warm.rate : 0.0, ph("import"),
        ph("tests"), ph("compile"), ph("compile_cpu"), ph("compile_child_cpu"), ph("compiles"),
        ph("launcher"), ph("launcher_builds"), ph("run"), ph("mutant"), tot("mutant_compiles"),
        ph("context"), ph("context_cpu"), warm.context_on_path, compile_cpu_share,
        best_w.empty() ? "-" : best_w.c_str(), best, auto_workers, auto_rate,
        best > 0 && auto_rate > 0 ? 100.0 * (best - auto_rate) / best : 0.0, queues8.rate,
        queues8.rate > 0 ? warm.rate / queues8.rate : 0.0, no_battery.rate,
        no_battery.rate > 0 ? 100.0 * warm.rate / no_battery.rate : 0.0, cross1.rate,
        cross1.cross_ms_mean, warm.rate > 0 ? 100.0 * cross1.rate / warm.rate : 0.0, cross_all.rate,
        cross_all.cross_ms_mean, warm.rate > 0 ? 100.0 * cross_all.rate / warm.rate : 0.0,
        timed.rate, warm.rate > 0 ? 100.0 * timed.rate / warm.rate : 0.0, timed.timed,
        timed.exclusive_ms_mean, timed.waited_ms_mean, timed.reader_waited_ms_mean, no_bounds.rate,
        no_bounds.rate > 0 ? 100.0 * warm.rate / no_bounds.rate : 0.0);
    std::fflush(stdout);
  };
  if (o.naive_procs > 0) {
    naive = run_naive(e, samples,
                      "plain python x" + std::to_string(o.naive_procs) + " (full autotune)");
  }
  std::string cache;
  warm = run_pool(e, samples, o.workers, "kforge warm w=" + o.workers, cache);
  figures(true);
  if (o.cached) {
    cached = run_pool(e, samples, o.workers, "kforge warm, cache filled", cache);
    figures(true);
  }
  if (o.hw_queues_ab) {
    std::string c;
    queues8 = run_pool(e, samples, o.workers, "kforge warm, driver's queues", c, true);
    figures(true);
  }
  if (o.mutants_ab) {
    std::string c;
    no_battery = run_pool(e, samples, o.workers, "kforge warm, no output mutants", c, false, true);
    figures(true);
  }
  if (o.bounds_ab) {
    std::string c;
    no_bounds = run_pool(e, samples, o.workers, "kforge warm, no bounds check", c, false, false, {},
                         false, true);
    figures(true);
  }
  if (o.timing_ab) {
    std::string c;
    timed = run_pool(e, samples, o.workers, "kforge warm, speed label", c, false, false, {}, true);
    figures(true);
  }
  if (!o.cross_compile.empty()) {
    // Cold caches, as the warm run: the AMD compiles are not in the cache the warm run filled.
    std::string c;
    cross1 = run_pool(e, samples, o.workers, "kforge warm, cross-compile " + o.cross_compile[0], c,
                      false, false, {o.cross_compile[0]});
    figures(true);
    if (o.cross_compile.size() > 1) {
      std::string c2, all;
      for (const auto& t : o.cross_compile) all += (all.empty() ? "" : ",") + t;
      cross_all = run_pool(e, samples, o.workers, "kforge warm, cross-compile " + all, c2, false,
                           false, o.cross_compile);
      figures(true);
    }
  }
  for (const auto& w : o.sweep) {
    std::string c;
    sweep.push_back(run_pool(e, samples, w, "sweep w=" + w, c));
    figures(true);
  }
  std::error_code ec;
  fs::remove_all(o.work_dir, ec);
  figures(false);
  return 0;
}

}  // namespace kforge::bench
