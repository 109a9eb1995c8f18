// kforge-bench-verify: warm workers against a fresh interpreter per sample, at equal
// parallelism, over generated variants of real Triton kernels (autotuned ones among them), and
// the number of warm workers per GPU that gives the most samples per second.
//
// Without a GPU with torch and triton it runs a CPU-only variant over pure Python samples,
// labelled as such: it exercises the machinery, the GPU figures need scripts/gpu/check.
//
// With --corpus FILE it runs the real-kernel benchmark instead (verify_corpus.hpp,
// scripts/gpu/bench-real).

#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "kforge/core/fs.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/targets.hpp"
#include "verify_corpus.hpp"

namespace fs = std::filesystem;
using namespace kforge;
using namespace kforge::verify;

namespace {

struct Template {
  std::string name;
  std::string text;
  bool autotuned = false;
};

std::vector<Template> load_templates(const fs::path& dir) {
  std::vector<Template> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".py") continue;
    auto text = read_file(e.path());
    if (!text.ok()) continue;
    out.push_back(
        {e.path().stem().string(), *text, text->find("@triton.autotune") != std::string::npos});
  }
  std::sort(out.begin(), out.end(),
            [](const Template& a, const Template& b) { return a.name < b.name; });
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

// Splits a template at its "# ---- kernel_wrapper ----" and "# ---- unitest_code ----" lines.
VerifyRequest instantiate(const Template& t, int id) {
  char scale[32];
  std::snprintf(scale, sizeof scale, "%.6f", 1.0 + id / 64.0);
  std::string text = replace_all(replace_all(t.text, "@ID@", std::to_string(id)), "@SCALE@", scale);
  const std::string w = "# ---- kernel_wrapper ----\n", u = "# ---- unitest_code ----\n";
  auto pw = text.find(w), pu = text.find(u);
  VerifyRequest r;
  r.key = t.name + "-" + std::to_string(id);
  r.code = text.substr(0, pw);
  r.kernel_wrapper = text.substr(pw + w.size(), pu - pw - w.size());
  r.unitest_code = text.substr(pu + u.size());
  return r;
}

struct Measure {
  double samples_per_s = 0;
  double wall_s = 0;
  double mean_sample_s = 0;
  double startup_s = 0;
  double mean_cpu_s = 0;
  std::map<std::string, int> verdicts;
  int workers = 0;
};

Measure measure(VerifierConfig cfg, int workers, const std::vector<VerifyRequest>& reqs,
                const std::string& label) {
  Measure m;
  PoolOptions o;
  o.config = cfg;
  o.total_workers = workers;
  auto t0 = std::chrono::steady_clock::now();
  auto pool = Pool::create(o);
  if (!pool.ok()) {
    std::fprintf(stderr, "kforge-bench-verify: %s\n", pool.error().message.c_str());
    std::exit(1);
  }
  auto& p = **pool;
  m.workers = p.slots();
  // Warm workers import torch and triton once; that start-up is reported, not timed per sample.
  auto ready = [&] {
    int n = 0;
    for (const auto& d : p.devices()) n += d.ready_workers;
    return n >= p.slots();
  };
  auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  while (!ready() && std::chrono::steady_clock::now() < give_up)
    p.step(std::chrono::milliseconds(50));
  auto t1 = std::chrono::steady_clock::now();
  m.startup_s = std::chrono::duration<double>(t1 - t0).count();
  std::vector<double> durations, cpu;
  std::size_t next = 0, done = 0;
  while (done < reqs.size()) {
    while (next < reqs.size() && p.accepting()) {
      auto id = p.submit(reqs[next++], [&](VerifyResult&& r) {
        ++done;
        ++m.verdicts[to_string(r.verdict) + (r.flags.empty() ? "" : "+" + r.flags[0])];
        // Worker time per sample: the real run and its mutant run (whichever process it had).
        std::int64_t ms = r.duration_ms;
        if (r.report.contains("mutant"))
          ms += r.report["mutant"].value("duration_ms", std::int64_t{0});
        durations.push_back(static_cast<double>(ms) / 1000.0);
        auto c = r.report.value("pool", nlohmann::json::object()).value("cpu_ms", -1);
        if (c >= 0) cpu.push_back(c / 1000.0);
        if (r.verdict != Verdict::passed)
          std::fprintf(stderr, "  %s %s: %s: %s\n", label.c_str(), r.key.c_str(),
                       to_string(r.verdict), r.detail.c_str());
      });
      if (!id.ok()) break;
    }
    p.step(std::chrono::milliseconds(50));
  }
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  m.samples_per_s = static_cast<double>(reqs.size()) / m.wall_s;
  m.mean_sample_s = durations.empty() ? 0
                                      : std::accumulate(durations.begin(), durations.end(), 0.0) /
                                            static_cast<double>(durations.size());
  m.mean_cpu_s =
      cpu.empty() ? 0
                  : std::accumulate(cpu.begin(), cpu.end(), 0.0) / static_cast<double>(cpu.size());
  std::string v;
  for (const auto& [k, n] : m.verdicts) v += " " + k + "=" + std::to_string(n);
  std::printf(
      "%-26s workers=%-3d samples=%zu wall_s=%.2f samples_per_s=%.3f mean_sample_s=%.3f "
      "mean_cpu_s=%.3f startup_s=%.2f%s\n",
      label.c_str(), m.workers, reqs.size(), m.wall_s, m.samples_per_s, m.mean_sample_s,
      m.mean_cpu_s, m.startup_s, v.c_str());
  std::fflush(stdout);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge-bench-verify: warm workers vs a fresh interpreter per sample"};
  int samples = 64;
  int workers = 0;
  std::string sweep;
  std::string python = "python3";
  std::string work_dir;
  std::string autotune = "single";
  bool force_cpu = false;
  bool ablation = true;
  bool with_fresh = true;
  std::int64_t uid_base = 61000;
  bool pidns_ab = false;
  int pidns_trivial = 64;
  int ballast_mb = 0;
  std::string pidns_cases = "prestart_on,prestart_off,samples";
  // An option given twice takes its last value, so scripts/gpu/bench-real's BENCH_ARGS, which
  // come after a phase's own options, can override them (e.g. --cached false).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("--samples", samples, "Distinct samples (kernels) per measurement")
      ->check(CLI::Range(8, 100000));
  app.add_option("--workers", workers,
                 "Workers per GPU for the warm/fresh comparison (default: 8 GPU, 2 CPU)");
  app.add_option("--sweep", sweep,
                 "Warm workers per GPU to try besides --workers (default: 4,12,16 on GPU)");
  app.add_option("--python", python, "The Python that has torch and triton");
  app.add_option("--work-dir", work_dir, "Scratch directory (default: a temp dir)");
  app.add_option("--autotune", autotune, "single or full")
      ->check(CLI::IsMember({"single", "full"}));
  app.add_flag("--cpu", force_cpu, "Run the CPU-only variant even where a GPU is present");
  app.add_option("--fresh", with_fresh,
                 "Measure the fresh interpreter too (false: warm workers only, for long runs)");
  app.add_option("--ablation", ablation,
                 "Also measure warm workers without prestarting, and without prestarting with "
                 "the mutant run in a process of its own (the earlier design), and a second "
                 "warm run over a filled Triton cache");
  app.add_option("--sandbox-uid-base", uid_base,
                 "verifier.sandbox_uid_base (0: samples keep the uid)");
  app.add_option("--pid-namespace-ab", pidns_ab,
                 "Also measure the sandbox's PID namespace per sample: the same runs with "
                 "verifier.pid_namespace off and on, in this run (prints the added ms per sample)");
  app.add_option("--worker-ballast-mb", ballast_mb,
                 "CPU variant: each worker holds this many MiB of touched memory (a stand-in for "
                 "torch's footprint, so forks of a worker cost what they cost on a GPU machine)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--pidns-trivial", pidns_trivial,
                 "Trivial samples per run in the PID namespace A/B (default 64)")
      ->check(CLI::Range(4, 100000));
  app.add_option("--pidns-cases", pidns_cases,
                 "Which PID namespace A/B runs, in order: prestart_on (the default design), "
                 "prestart_off (set-up on the sample's clock), samples (the workload)");
  bench::CorpusBenchOptions real;
  std::string exclude = "chunk_retention_ops.py", device_list;
  app.add_option("--corpus", real.corpus,
                 "Real-kernel benchmark over this corpus (JSON Lines or list of records with "
                 "key, code, kernel_wrapper, unitest_code; e.g. TritonBench_G_gold_tests.jsonl)");
  app.add_option("--copies", real.copies, "--corpus: copies, kernels renamed in each")
      ->check(CLI::Range(1, 1000));
  app.add_option("--exclude", exclude, "--corpus: record keys to leave out (comma-separated)");
  app.add_option("--limit", real.limit, "--corpus: the first N records only");
  app.add_option("--timeout", real.timeout_s, "--corpus: seconds per sample (each run)")
      ->check(CLI::PositiveNumber);
  app.add_option("--naive-procs", real.naive_procs,
                 "--corpus: plain `python sample.py` processes at once for the baseline (0: "
                 "none)");
  app.add_option("--cached", real.cached,
                 "--corpus: a second kforge pass over the Triton cache the first one filled");
  app.add_option("--hw-queues-ab", real.hw_queues_ab,
                 "--corpus: once more with a cold cache and the driver's default hardware queues "
                 "per GPU context (verifier.gpu_hw_queues 0), against the default of 1");
  app.add_option("--mutants-ab", real.mutants_ab,
                 "--corpus: once more, cold, without the output mutants (verifier.mutants: []): "
                 "throughput with and without the battery");
  app.add_option("--bounds-ab", real.bounds_ab,
                 "--corpus: once more, cold, without the out-of-bounds check "
                 "(verifier.bounds_check: false): throughput with and without it");
  app.add_option("--timing-ab", real.timing_ab,
                 "--corpus: once more, cold, with the speed label (verifier.timing.enabled): "
                 "throughput with and without it, and the exclusive GPU time per sample");
  app.add_option("--cross-compile", real.cross_compile,
                 "--corpus: once more with the first TARGET cross-compiled after each passing "
                 "sample (e.g. hip:gfx942), and once with every TARGET given: the cost per "
                 "sample")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->type_name("TARGET");
  app.add_option("--devices", device_list, "--corpus: cuda:N list (default: detect)");
  app.add_option("--samples-out", real.samples_out, "--corpus: per-sample JSON Lines");
  app.add_option("--emit", real.emit,
                 "--corpus: write the renamed samples to this JSON Lines file and stop");
  app.add_option("--config", real.config,
                 "--corpus: a kforge configuration whose verifier: section every kforge run "
                 "starts from (read strictly)");
  app.add_option("--mix", real.mix,
                 "--corpus: more samples (JSON Lines), spread evenly among the corpus's");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  if (!real.corpus.empty()) {
    auto split = [](const std::string& text) {
      std::vector<std::string> out;
      std::stringstream ss(text);
      for (std::string v; std::getline(ss, v, ',');)
        if (!v.empty() && v != "none") out.push_back(v);
      return out;
    };
    std::vector<std::string> targets;
    if (auto bad = verify::parse_targets(real.cross_compile, "--cross-compile", targets)) {
      std::fprintf(stderr, "kforge-bench-verify: %s\n", bad->c_str());
      return 2;
    }
    real.cross_compile = targets;
    real.exclude = split(exclude);
    real.devices = split(device_list);
    real.sweep = split(sweep);
    real.workers = workers > 0 ? std::to_string(workers) : "auto";
    real.python = python;
    real.sandbox_uid_base = uid_base;
    real.work_dir = work_dir;
    real.autotune = autotune;
    return bench::run_corpus_bench(real);
  }

  VerifierConfig base;
  base.python = python;
  base.autotune = value_of(verify::kAutotuneNames, autotune).value_or(verify::Autotune::single);
  base.timeout_s = 300;
  base.worker_start_timeout_s = 300;
  base.queue_capacity = 16;
  base.sandbox_uid_base = uid_base;
  // Warm workers against a fresh interpreter, as recorded: no speed label (its cost has its
  // own measurements, --corpus --timing-ab).
  base.timing.enabled = verify::TimingOn::none;
  if (work_dir.empty())
    work_dir = (fs::temp_directory_path() / ("kforge-bench-verify-" + std::to_string(::getpid())))
                   .string();
  fs::create_directories(work_dir);

  // Is there a GPU with torch and triton? Asked of the harness, in its own process.
  auto harness = find_harness(base);
  if (!harness.ok()) {
    std::fprintf(stderr, "kforge-bench-verify: %s\n", harness.error().message.c_str());
    return 1;
  }
  auto info = system_probe().run({python, "-s", *harness, "info", "--cuda"});
  auto j = info.ok() ? nlohmann::json::parse(*info, nullptr, false) : nlohmann::json();
  bool gpu = !force_cpu && j.is_object() && j.value("cuda", false) && j.value("triton", false);
  auto devices = resolve_devices({}, system_probe());
  int gpus = 0;
  for (const auto& d : devices.value_or({})) gpus += d.vendor != Vendor::cpu ? 1 : 0;
  if (gpu && gpus == 0) gpus = 1;
  std::string variant = gpu ? "gpu" : "cpu-only";
  std::printf("kforge-bench-verify: variant=%s python=%s info=%s gpus=%d\n", variant.c_str(),
              python.c_str(), info.ok() ? info->c_str() : info.error().message.c_str(), gpus);
  if (!gpu)
    std::printf(
        "NOTE: CPU-only variant (no GPU with torch+triton here): pure Python samples, no "
        "Triton kernels; GPU figures come from scripts/gpu/check on the GPU machine\n");
  auto templates = load_templates(fs::path(KFORGE_BENCH_DIR) / "verify" / (gpu ? "gpu" : "cpu"));
  std::vector<VerifyRequest> reqs;
  int autotuned = 0;
  for (int i = 0; i < samples; ++i) {
    const auto& t = templates[static_cast<std::size_t>(i) % templates.size()];
    reqs.push_back(instantiate(t, i));
    autotuned += t.autotuned ? 1 : 0;
  }
  Template trivial{"trivial",
                   read_file(fs::path(KFORGE_BENCH_DIR) / "verify" / "trivial.py").value_or(""),
                   false};

  if (gpu) {
    base.devices = {};
    base.preload = {"torch", "triton", "triton.language", "numpy"};
    base.memory_cap_mb = 16384;
    base.disk_cap_mb = 1024;
  } else {
    base.devices = {"cpu"};
    base.preload = {"json"};
    if (ballast_mb > 0) {
      base.preload.push_back("kforge_bench_ballast");
      base.python_path.push_back((fs::path(KFORGE_BENCH_DIR) / "verify").string());
      base.env["KFORGE_BENCH_BALLAST_MB"] = std::to_string(ballast_mb);
      // The samples' processes share the worker's pages, which their resident size counts.
      base.memory_cap_mb = std::max<std::int64_t>(base.memory_cap_mb, ballast_mb + 2048);
    }
  }
  int per_gpu = workers > 0 ? workers : (gpu ? 8 : 2);
  int units = gpu ? gpus : 1;
  int run_no = 0;
  auto cfg_for = [&](const std::string& mode) {
    VerifierConfig c = base;
    c.mode = mode == "fresh" ? verify::PoolMode::fresh : verify::PoolMode::warm;
    c.work_dir = work_dir + "/w" + std::to_string(run_no);
    c.triton_cache_dir = work_dir + "/cache-" + std::to_string(run_no++);  // cold for each run
    return c;
  };
  auto describe = [](const VerifierConfig& c) {
    return " (prestart=" + std::string(c.prestart ? "on" : "off") +
           ", mutant_run=" + std::string(verify::to_string(c.mutant_run)) + ")";
  };
  // Per-sample overhead: trivial samples, one worker, warm and fresh.
  std::vector<VerifyRequest> trivials;
  for (int i = 0; i < 16; ++i) trivials.push_back(instantiate(trivial, 1000 + i));
  auto ow = measure(cfg_for("warm"), 1, trivials, "overhead warm (1 worker)");
  Measure of;
  if (with_fresh) of = measure(cfg_for("fresh"), 1, trivials, "overhead fresh (1 worker)");

  auto warm_cfg = cfg_for("warm");
  auto warm = measure(warm_cfg, per_gpu * units, reqs, "warm" + describe(warm_cfg));
  auto fresh_cfg = cfg_for("fresh");
  Measure fresh;
  if (with_fresh)
    fresh =
        measure(fresh_cfg, per_gpu * units, reqs,
                "fresh (mutant_run=" + std::string(verify::to_string(fresh_cfg.mutant_run)) + ")");
  Measure warm_cached, no_prestart, earlier;
  if (ablation) {
    // The same samples again over the cache the warm run filled: an A/B pair's second run.
    auto c = warm_cfg;
    c.work_dir += "-again";
    warm_cached = measure(c, per_gpu * units, reqs, "warm, Triton cache filled");
    c = cfg_for("warm");
    c.prestart = false;
    no_prestart = measure(c, per_gpu * units, reqs, "warm" + describe(c));
    c = cfg_for("warm");
    c.prestart = false;
    c.mutant_run = verify::MutantRun::new_process;
    earlier = measure(c, per_gpu * units, reqs, "warm" + describe(c));
  }
  std::vector<int> sweep_values;
  if (sweep == "none") {
    // only --workers
  } else if (!sweep.empty()) {
    std::stringstream ss(sweep);
    for (std::string v; std::getline(ss, v, ',');) sweep_values.push_back(std::stoi(v));
  } else if (gpu) {
    sweep_values = {4, 12, 16};
  }
  int best = per_gpu;
  double best_rate = warm.samples_per_s;
  for (int w : sweep_values) {
    if (w == per_gpu) continue;
    auto m = measure(cfg_for("warm"), w * units, reqs, "sweep warm w=" + std::to_string(w));
    if (m.samples_per_s > best_rate) {
      best_rate = m.samples_per_s;
      best = w;
    }
  }
  if (pidns_ab) {
    // What the PID namespace adds per sample: one worker, trivial samples, without prestarting
    // (the namespace's set-up on the sample's clock), then the whole set with the default design
    // (set-up overlapped). Three settings alternate, so drift hits them alike: the namespace off,
    // on with a fork of the worker as its init (verifier.sandbox_init "fork", the design before
    // kforge-sandbox-init), and on with kforge-sandbox-init started by posix_spawn (the default).
    auto cost = [&](bool prestart, int w, const std::vector<VerifyRequest>& rs,
                    const std::string& what) {
      const char* names[3] = {"off", "on, init fork", "on, init spawn"};
      Measure by[3];
      for (int round = 0; round < 2; ++round)
        for (int v = 0; v < 3; ++v) {
          auto c = cfg_for("warm");
          c.prestart = prestart;
          c.pid_namespace = v > 0;
          c.sandbox_init = v == 1 ? "fork" : "";
          auto m = measure(
              c, w, rs,
              "pidns " + std::string(names[v]) + " " + what + " #" + std::to_string(round + 1));
          by[v].wall_s += m.wall_s;
          by[v].mean_sample_s += m.mean_sample_s / 2;
          by[v].mean_cpu_s += m.mean_cpu_s / 2;
        }
      double n = 2.0 * static_cast<double>(rs.size());
      // Worker time per sample: wall per sample times the workers sharing it.
      auto per = [&](int v) { return by[v].wall_s / n * w * 1000; };
      for (int v = 1; v < 3; ++v)
        std::printf(
            "pid_namespace_cost %s, init %s: added_ms_per_sample=%.1f (worker wall: %.1f -> "
            "%.1f ms) added_sample_ms=%.1f added_cpu_ms=%.1f\n",
            what.c_str(), v == 1 ? "fork" : "spawn", per(v) - per(0), per(0), per(v),
            (by[v].mean_sample_s - by[0].mean_sample_s) * 1000,
            (by[v].mean_cpu_s - by[0].mean_cpu_s) * 1000);
      std::fflush(stdout);
    };
    std::vector<VerifyRequest> more;
    for (int i = 0; i < pidns_trivial; ++i) more.push_back(instantiate(trivial, 2000 + i));
    std::stringstream cases(pidns_cases);
    for (std::string c; std::getline(cases, c, ',');) {
      if (c == "prestart_on")
        cost(true, 1, more, "trivial, 1 worker, prestart on");
      else if (c == "prestart_off")
        cost(false, 1, more, "trivial, 1 worker, prestart off");
      else if (c == "samples")
        cost(true, per_gpu * units, reqs,
             "samples, " + std::to_string(per_gpu * units) + " workers");
      else
        std::fprintf(stderr,
                     "--pidns-cases: unknown case '%s' (prestart_on, prestart_off, samples)\n",
                     c.c_str());
    }
  }
  std::error_code ec;
  fs::remove_all(work_dir, ec);
  std::printf(
      "variant=%s samples=%d autotuned=%d autotune=%s workers_per_gpu=%d warm_samples_per_s=%.3f "
      "fresh_samples_per_s=%.3f speedup=%.2f warm_mean_sample_s=%.3f fresh_mean_sample_s=%.3f "
      "warm_overhead_ms=%.0f fresh_overhead_ms=%.0f warm_startup_s=%.1f best_workers_per_gpu=%d "
      "best_samples_per_s=%.3f warm_cached_samples_per_s=%.3f warm_no_prestart_samples_per_s=%.3f "
      "warm_earlier_design_samples_per_s=%.3f\n",
      variant.c_str(), samples, autotuned, autotune.c_str(), per_gpu, warm.samples_per_s,
      fresh.samples_per_s, fresh.samples_per_s > 0 ? warm.samples_per_s / fresh.samples_per_s : 0.0,
      warm.mean_sample_s, fresh.mean_sample_s, ow.mean_sample_s * 1000, of.mean_sample_s * 1000,
      warm.startup_s, best, best_rate, warm_cached.samples_per_s, no_prestart.samples_per_s,
      earlier.samples_per_s);
  return 0;
}
