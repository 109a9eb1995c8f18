// kforge-bench-batch: the same 4,000-sample v2 run in interactive mode and in batch mode.
//
// Each mode runs the whole v2 pipeline (analyze, then generate: 8,000 LLM calls) through the
// real kforged against the fake provider (its server in this process), the verifier off, no
// kill. Batch mode (llm.mode batch) groups the ready requests into batch files through the
// fake's Files and Batch API. Figures per mode:
//   calls            good answers recorded (llm_calls rows with status ok)
//   http_requests    HTTP requests the daemon sent to the provider (chat completions, or
//                    uploads, creates, polls, lists and downloads)
//   batches          batches created
//   cost_usd         the run's LLM cost at gpt-4o-mini's prices ($0.15 / $0.60 per million
//                    prompt / completion tokens; batch answers at the 0.5 batch multiplier)
//   cpu_s            the daemon's CPU time (user + system, every thread)
//   peak_rss_mb      the daemon's peak resident memory
//   db_growth_mb     the database's growth (file, WAL and shared memory) from run create to
//                    the end of the run
//   db_live_mb       of the database file, the pages in use at the end (page_count less the
//                    free list): what a VACUUM would leave
//   wall_s           start of the daemon to the last job past its LLM stages
//   lines_paid       batch lines the fake answered (what a provider bills)
//   lines_per_request  lines_paid over the distinct requests (custom_ids) answered: exactly 1
//                    in a clean run (a request paid twice shows above 1)
// --modes import: `kforge batch import` of a result file answering the run's first stage (one
// line per sample): lines_imported, results_file_mb, and the import's cpu_s, peak_rss_mb, wall_s.
// The last line of each mode: key=value pairs. With several --samples (e.g. 2000,8000), each
// mode runs at each size, and a last line per mode gives how the daemon's peak memory grows
// with the requests in flight (batch mode: every request of a stage in flight at once):
//   mode=M rss_growth_kb_per_request=(peak at the largest - peak at the smallest) / the extra
//   LLM calls

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "daemon_bench.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/store/db.hpp"

[[noreturn]] void kforge::bench::die(const std::string& msg) {
  kforge::bench::kill_daemons();
  std::fprintf(stderr, "kforge-bench-batch: %s\n", msg.c_str());
  std::exit(1);
}

namespace {

using kforge::bench::Daemon;
using kforge::bench::Db;
using kforge::bench::die;
using kforge::bench::fake_script;
using kforge::bench::read;
using kforge::bench::run;
using kforge::bench::write_corpus;

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double file_mb(const fs::path& db) {
  double b = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    fs::path p = db.string() + suffix;
    std::error_code ec;
    if (fs::exists(p, ec)) b += static_cast<double>(fs::file_size(p, ec));
  }
  return b / 1e6;
}

struct Figures {
  std::int64_t calls = 0, http = 0, batches = 0, stages = 0, failed = 0, paid = 0;
  double per_request = 0;
  double cost = 0, cpu = 0, rss = 0, db_mb = 0, live_mb = 0, wall = 0;
};

Figures run_mode(const std::string& mode, int samples, int in_flight, const std::string& corpus,
                 const fs::path& build, const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path kforge = build / "apps" / "kforge" / "kforge";
  fs::path kforged = build / "apps" / "kforged" / "kforged";
  fs::path db = dir / "kforge.db";
  auto fake = kforge::fake_llm::FakeLlmServer::start(fake_script());
  if (!fake.ok()) die(fake.error().message);
  bool batch = mode == "batch";
  std::ofstream(dir / "kforge.yaml")
      << "log:\n  level: info\nstore:\n  path: " << db.string()
      << "\nllm:\n  base_url: " << (*fake)->base_url()
      << "\n  model: fake-model\n  api_key_env: \"\"\n  max_in_flight: " << in_flight
      << "\n  adaptive: false\n  mode: " << mode
      << "\n  batch:\n    collect_ms: 2000\n    poll_ms: 1000"
      << "\n  prices:\n    fake-model: {prompt_per_mtok: 0.15, completion_per_mtok: 0.60}"
      << "\npipeline:\n  max_in_flight: " << (batch ? samples : in_flight)
      << "\ndaemon:\n  http_listen: \"\"\n  verify: false\n";
  fs::path config = dir / "kforge.yaml";
  write_corpus(corpus, dir / "corpus.jsonl", samples);
  if (run({kforge.string(), "-c", config.string(), "import", (dir / "corpus.jsonl").string()}) != 0)
    die("import failed");
  if (run({kforge.string(), "-c", config.string(), "run", "create", "bench", "--pipeline", "v2",
           "--repair-rounds", "0"}) != 0)
    die("run create failed");
  double db_before = file_mb(db);
  Db d(db);
  const std::string past_sql =
      "SELECT count(*) FROM jobs WHERE state IN ('verify_queued', 'failed', 'done')";
  Daemon daemon;
  auto t0 = Clock::now();
  daemon.start(kforged, config, dir / "kforged.log");
  while (d.count(past_sql) < samples) {
    std::this_thread::sleep_for(20ms);
    if (seconds(Clock::now() - t0) > std::max(1200.0, samples * 0.06))
      die("no progress: see " + (dir / "kforged.log").string());
  }
  Figures f;
  f.wall = seconds(Clock::now() - t0);
  int st = daemon.stop(SIGTERM);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("the daemon did not exit 0 on SIGTERM");
  json s = (*fake)->stats();
  std::int64_t lines = s["batch"]["lines"].get<std::int64_t>();
  // Chat requests over HTTP are the requests the fake counted that were not batch lines.
  f.http = s["requests"].get<std::int64_t>() - lines + s["batch"]["files"].get<std::int64_t>() +
           s["batch"]["created"].get<std::int64_t>() + s["batch"]["polls"].get<std::int64_t>() +
           s["batch"]["lists"].get<std::int64_t>() + s["batch"]["downloads"].get<std::int64_t>();
  f.batches = s["batch"]["created"].get<std::int64_t>();
  f.paid = lines;
  if (!s["batch"]["lines_by_custom_id"].empty())
    f.per_request =
        static_cast<double>(lines) / static_cast<double>(s["batch"]["lines_by_custom_id"].size());
  f.calls = d.count("SELECT count(*) FROM llm_calls WHERE status = 'ok'");
  f.stages = d.count("SELECT count(*) FROM stage_outputs");
  f.failed = d.count("SELECT count(*) FROM jobs WHERE state = 'failed'");
  {
    kforge::store::OpenOptions o;
    o.path = db.string();
    o.migrate = false;
    auto h = kforge::store::Db::open(o);
    auto q = (*h)->prepare("SELECT coalesce(sum(cost_usd), 0) FROM llm_calls");
    (void)q->step();
    f.cost = q->real(0);
    auto pragma = [&](const char* sql) {
      auto p = (*h)->prepare(sql);
      (void)p->step();
      return static_cast<double>(p->int64(0));
    };
    f.live_mb = (pragma("PRAGMA page_count") - pragma("PRAGMA freelist_count")) *
                pragma("PRAGMA page_size") / 1e6;
  }
  f.cpu = daemon.cpu_s();
  f.rss = daemon.peak_mb();
  f.db_mb = file_mb(db) - db_before;
  return f;
}

// `kforge batch import` of a result file answering every request of a run's first stage: the
// run's requests exported (kforge batch export), each answered by the fake provider's chat
// endpoint as `vllm run-batch` would, the file imported; the import's peak memory and CPU.
Figures run_import(int samples, const std::string& corpus, const fs::path& build,
                   const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path kforge = build / "apps" / "kforge" / "kforge";
  fs::path db = dir / "kforge.db";
  auto fake = kforge::fake_llm::FakeLlmServer::start(fake_script());
  if (!fake.ok()) die(fake.error().message);
  std::ofstream(dir / "kforge.yaml") << "log:\n  level: info\nstore:\n  path: " << db.string()
                                     << "\nllm:\n  base_url: " << (*fake)->base_url()
                                     << "\n  model: fake-model\n  api_key_env: \"\"\n";
  fs::path config = dir / "kforge.yaml";
  write_corpus(corpus, dir / "corpus.jsonl", samples);
  if (run({kforge.string(), "-c", config.string(), "import", (dir / "corpus.jsonl").string()}) != 0)
    die("import failed");
  if (run({kforge.string(), "-c", config.string(), "run", "create", "bench", "--pipeline", "v2",
           "--repair-rounds", "0"}) != 0)
    die("run create failed");
  fs::path requests = dir / "requests.jsonl", results = dir / "results.jsonl";
  if (run({kforge.string(), "-c", config.string(), "batch", "export", "bench", "--out",
           requests.string()}) != 0)
    die("batch export failed");
  {
    httplib::Client http("127.0.0.1", (*fake)->port());
    std::ifstream in(requests);
    std::ofstream out(results, std::ios::binary);
    for (std::string line; std::getline(in, line);) {
      json l = json::parse(line);
      auto r = http.Post("/v1/chat/completions", l["body"].dump(), "application/json");
      if (!r) die("the fake provider did not answer");
      out << json{{"id", "vllm-" + l["custom_id"].get<std::string>().substr(0, 8)},
                  {"custom_id", l["custom_id"]},
                  {"response",
                   {{"status_code", r->status},
                    {"request_id", "r"},
                    {"body", json::parse(r->body)}}},
                  {"error", nullptr}}
                 .dump()
          << "\n";
    }
  }
  Figures f;
  auto t0 = Clock::now();
  kforge::SpawnOptions o;
  o.argv = {kforge.string(), "-c", config.string(), "batch", "import", "bench", results.string()};
  o.fds = {{2, 2}};
  o.new_session = false;
  auto pid = kforge::default_env().spawn(o);
  if (!pid.ok()) die(pid.error().message);
  auto end = kforge::default_env().wait(*pid, kforge::WaitMode::block);
  if (!end || !WIFEXITED(end->status) || WEXITSTATUS(end->status) != 0) die("batch import failed");
  f.wall = seconds(Clock::now() - t0);
  f.cpu = static_cast<double>(end->cpu_ms) / 1000.0;
  f.rss = static_cast<double>(end->maxrss_kb) / 1024.0;
  f.db_mb = static_cast<double>(fs::file_size(results)) / 1e6;  // the result file
  Db d(db);
  f.calls = d.count("SELECT count(*) FROM llm_calls WHERE status = 'ok'");
  f.stages = d.count("SELECT count(*) FROM stage_outputs");
  f.failed = d.count("SELECT count(*) FROM jobs WHERE state = 'failed'");
  return f;
}

void print_figures(const std::string& mode, int samples, const Figures& f) {
  if (mode == "import") {
    std::printf(
        "mode=import samples=%d lines_imported=%lld results_file_mb=%.1f cpu_s=%.2f "
        "peak_rss_mb=%.1f wall_s=%.2f stages=%lld failed=%lld\n",
        samples, static_cast<long long>(f.calls), f.db_mb, f.cpu, f.rss, f.wall,
        static_cast<long long>(f.stages), static_cast<long long>(f.failed));
    std::fflush(stdout);
    return;
  }
  std::printf(
      "mode=%s samples=%d calls=%lld http_requests=%lld batches=%lld cost_usd=%.4f "
      "cpu_s=%.2f peak_rss_mb=%.1f db_growth_mb=%.1f db_live_mb=%.1f wall_s=%.2f stages=%lld "
      "failed=%lld lines_paid=%lld lines_per_request=%.4f\n",
      mode.c_str(), samples, static_cast<long long>(f.calls), static_cast<long long>(f.http),
      static_cast<long long>(f.batches), f.cost, f.cpu, f.rss, f.db_mb, f.live_mb, f.wall,
      static_cast<long long>(f.stages), static_cast<long long>(f.failed),
      static_cast<long long>(f.paid), f.per_request);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge-bench-batch: a 4,000-sample v2 run, interactive and in batch mode."};
  std::vector<int> sizes = {4000};
  int in_flight = 64;
  std::string corpus = (fs::path(KFORGE_BENCH_SOURCE_DIR).parent_path() / "shared" / "corpus" /
                        "TritonBench_G_v1.json")
                           .string();
  fs::path build = KFORGE_BENCH_BUILD_DIR;
  std::string keep;
  std::vector<std::string> modes = {"interactive", "batch"};
  app.add_option("--samples", sizes, "Samples (two LLM calls each); several: a run at each size")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--in-flight", in_flight, "interactive: pipeline and llm max_in_flight")
      ->capture_default_str();
  app.add_option("--corpus", corpus, "TritonBench-G JSON to build the samples from");
  app.add_option("--modes", modes,
                 "Modes to run: interactive, batch; import (kforge batch import of a result "
                 "file answering every request of the first stage)")
      ->delimiter(',');
  app.add_option("--keep", keep, "Work in this directory and keep it (default: a temp dir)");
  app.add_option("--build", build,
                 "The build directory whose apps/kforged/kforged and apps/kforge/kforge run "
                 "(default: the one this benchmark was built in)");
  CLI11_PARSE(app, argc, argv);
  fs::path base = keep.empty() ? fs::temp_directory_path() /
                                     ("kforge-bench-batch-" + std::to_string(::getpid()))
                               : fs::path(keep);
  for (const auto& mode : modes) {
    std::vector<std::pair<std::int64_t, double>> peaks;  // calls, peak RSS (MB)
    for (int samples : sizes) {
      fs::path dir = base / (mode + "-" + std::to_string(samples));
      Figures f = mode == "import" ? run_import(samples, corpus, build, dir)
                                   : run_mode(mode, samples, in_flight, corpus, build, dir);
      print_figures(mode, samples, f);
      peaks.emplace_back(f.calls, f.rss);
    }
    if (peaks.size() < 2) continue;
    auto [lo, hi] = std::minmax_element(peaks.begin(), peaks.end());
    double extra = static_cast<double>(hi->first - lo->first);
    std::printf(
        "mode=%s rss_growth_kb_per_request=%.2f (peak %.1f MB at %lld calls, %.1f MB at %lld)\n",
        mode.c_str(), extra > 0 ? (hi->second - lo->second) * 1024.0 / extra : 0.0, lo->second,
        static_cast<long long>(lo->first), hi->second, static_cast<long long>(hi->first));
    std::fflush(stdout);
  }
  if (keep.empty()) fs::remove_all(base);
  return 0;
}
