// kforge-bench-pipeline: the pipeline daemon's own cost, measured end to end.
//
// A 4,000-sample v2 run (analyze, then generate: 8,000 LLM calls) through the real kforged
// against the fake provider at zero latency, the verifier off. Half way through, the daemon is
// killed with SIGKILL and started again. Figures:
//   wall_s                      from the first start to the last job past its LLM stages, the
//                               restart included (the harness's own bookkeeping at the kill
//                               excluded)
//   overhead_per_stage_ms       the daemon processes' CPU time (user + system, every thread:
//                               scheduler, LLM client, SQLite) per stage call
//   restart_to_first_request_s  from exec of the restarted daemon to the first request the
//                               provider receives
//   duplicate_requests          requests the restarted daemon sent although the killed one had
//                               stored their answer (must be 0)
//   peak_rss_mb                 the larger of the two daemons' peak resident memory
// Extra keys: resent_lost_in_flight (answers the provider sent to the dead daemon, asked again),
// scheduler_busy_ms_per_stage (the scheduler thread's own work, from /metrics), stages.

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
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
  std::fprintf(stderr, "kforge-bench-pipeline: %s\n", msg.c_str());
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

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

double metric(int port, const std::string& name) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get("/metrics");
  if (!res) return -1;
  std::istringstream in(res->body);
  std::string line;
  double sum = 0;
  bool found = false;
  while (std::getline(in, line)) {
    if (line.rfind(name, 0) != 0) continue;
    char next = line.size() > name.size() ? line[name.size()] : ' ';
    if (next != ' ' && next != '{') continue;
    sum += std::stod(line.substr(line.rfind(' ') + 1));
    found = true;
  }
  return found ? sum : -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge-bench-pipeline: a 4,000-sample v2 run with a kill -9 half way."};
  int samples = 4000;
  int in_flight = 64;
  std::string corpus = (fs::path(KFORGE_BENCH_SOURCE_DIR).parent_path() / "shared" / "corpus" /
                        "TritonBench_G_v1.json")
                           .string();
  fs::path build = KFORGE_BENCH_BUILD_DIR;
  std::string keep;
  app.add_option("--samples", samples, "Samples (two LLM calls each)")->capture_default_str();
  app.add_option("--in-flight", in_flight, "pipeline and llm max_in_flight")->capture_default_str();
  app.add_option("--corpus", corpus, "TritonBench-G JSON to build the samples from");
  app.add_option("--keep", keep, "Work in this directory and keep it (default: a temp dir)");
  CLI11_PARSE(app, argc, argv);

  fs::path dir = keep.empty() ? fs::temp_directory_path() /
                                    ("kforge-bench-pipeline-" + std::to_string(::getpid()))
                              : fs::path(keep);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path kforge = build / "apps" / "kforge" / "kforge";
  fs::path kforged = build / "apps" / "kforged" / "kforged";
  fs::path db = dir / "kforge.db";

  auto fake = kforge::fake_llm::FakeLlmServer::start(fake_script());
  if (!fake.ok()) die(fake.error().message);
  int port = free_port();
  std::ofstream(dir / "kforge.yaml")
      << "log:\n  level: info\nstore:\n  path: " << db.string()
      << "\nllm:\n  base_url: " << (*fake)->base_url()
      << "\n  model: fake-model\n  api_key_env: \"\"\n  max_in_flight: " << in_flight
      << "\n  adaptive: false\npipeline:\n  max_in_flight: " << in_flight
      << "\ndaemon:\n  http_listen: 127.0.0.1:" << port << "\n  verify: false\n";
  fs::path config = dir / "kforge.yaml";

  write_corpus(corpus, dir / "corpus.jsonl", samples);
  auto t_import = Clock::now();
  if (run({kforge.string(), "-c", config.string(), "import", (dir / "corpus.jsonl").string()}) != 0)
    die("import failed");
  if (run({kforge.string(), "-c", config.string(), "run", "create", "bench", "--pipeline", "v2"}) !=
      0)
    die("run create failed");
  std::printf("prepared %d samples in %.1f s (import and run create)\n", samples,
              seconds(Clock::now() - t_import));
  Db d(db);
  const std::int64_t stages_total = 2LL * samples;
  const std::string ok_sql = "SELECT count(*) FROM stage_outputs WHERE status = 'ok'";
  const std::string past_sql =
      "SELECT count(*) FROM jobs WHERE state IN ('verify_queued', 'failed', 'done')";

  // First daemon, killed half way.
  Daemon first;
  auto t0 = Clock::now();
  first.start(kforged, config, dir / "kforged.1.log");
  while (d.count(ok_sql) < stages_total / 2) {
    std::this_thread::sleep_for(5ms);
    if (seconds(Clock::now() - t0) > 600)
      die("no progress: see " + (dir / "kforged.1.log").string());
  }
  double busy1 = metric(port, "kforge_scheduler_busy_seconds_total");
  double stages1 = metric(port, "kforge_stage_outputs_total");
  first.stop(SIGKILL);
  auto t_kill = Clock::now();
  while ((*fake)->stats()["in_flight"].get<int>() > 0) std::this_thread::sleep_for(1ms);
  json before = (*fake)->stats();
  auto durable = d.durable();
  std::int64_t requests_before = before["requests"];
  std::int64_t done_at_kill = d.count(ok_sql);
  std::printf("killed the daemon after %.2f s with %lld of %lld stages done, %zu answers stored\n",
              seconds(t_kill - t0), static_cast<long long>(done_at_kill),
              static_cast<long long>(stages_total), durable.size());

  // Restart: time to the provider's first new request.
  Daemon second;
  auto t_restart = Clock::now();
  second.start(kforged, config, dir / "kforged.2.log");
  double restart_s = -1;
  while (seconds(Clock::now() - t_restart) < 60) {
    if ((*fake)->stats()["requests"].get<std::int64_t>() > requests_before) {
      restart_s = seconds(Clock::now() - t_restart);
      break;
    }
    std::this_thread::sleep_for(1ms);
  }
  while (d.count(past_sql) < samples) {
    std::this_thread::sleep_for(20ms);
    if (seconds(Clock::now() - t_restart) > 600)
      die("no progress: see " + (dir / "kforged.2.log").string());
  }
  auto t_end = Clock::now();
  double busy2 = -1, stages2 = -1;
  for (int i = 0; i < 30 && (stages2 < 0 || busy2 < 0); ++i) {
    std::this_thread::sleep_for(1100ms);  // the metrics page is refreshed every second
    busy2 = metric(port, "kforge_scheduler_busy_seconds_total");
    stages2 = metric(port, "kforge_stage_outputs_total");
  }
  int st = second.stop(SIGTERM);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) die("the daemon did not exit 0 on SIGTERM");

  json after = (*fake)->stats();
  std::int64_t duplicates = 0, resent = 0;
  for (const auto& [hash, n] : after["answered_by_hash"].items()) {
    std::int64_t was = before["answered_by_hash"].value(hash, std::int64_t{0});
    if (n.get<std::int64_t>() <= was || was == 0) continue;
    if (durable.count(hash))
      duplicates += n.get<std::int64_t>() - was;
    else
      resent += n.get<std::int64_t>() - was;
  }
  std::int64_t stages = d.count("SELECT count(*) FROM stage_outputs");
  std::int64_t failed = d.count("SELECT count(*) FROM jobs WHERE state = 'failed'");
  double wall = seconds(t_kill - t0) + seconds(t_end - t_restart);
  double cpu = first.cpu_s() + second.cpu_s();
  double overhead_ms = 1000.0 * cpu / static_cast<double>(stages);
  double busy_ms = 1000.0 * (busy1 + busy2) / (stages1 + stages2);
  double rss = std::max(first.peak_mb(), second.peak_mb());
  std::printf(
      "%lld stage outputs (%lld jobs failed), %lld provider requests, %.1f s of daemon CPU\n",
      static_cast<long long>(stages), static_cast<long long>(failed),
      static_cast<long long>(after["requests"].get<std::int64_t>()), cpu);
  std::printf("daemon 1: %.1f MB peak RSS, %.1f s CPU; daemon 2: %.1f MB, %.1f s CPU\n",
              first.peak_mb(), first.cpu_s(), second.peak_mb(), second.cpu_s());
  std::printf(
      "wall_s=%.2f overhead_per_stage_ms=%.3f restart_to_first_request_s=%.3f "
      "duplicate_requests=%lld peak_rss_mb=%.1f resent_lost_in_flight=%lld "
      "scheduler_busy_ms_per_stage=%.3f stages=%lld\n",
      wall, overhead_ms, restart_s, static_cast<long long>(duplicates), rss,
      static_cast<long long>(resent), busy_ms, static_cast<long long>(stages));
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
