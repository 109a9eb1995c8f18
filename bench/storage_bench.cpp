// kforge-bench-storage: the bytes a v2 run with repair rounds adds to the database.
//
// Imports N samples (TritonBench-G's records repeated, each made distinct, as
// kforge-bench-pipeline does), creates a v2 run with R repair rounds, and runs it through the
// real kforged against the fake provider (zero latency; the verifier off). This program plays the
// verifier: it leases each job waiting for verification and stores, through the pipeline's own
// store_job_verdict, a failed verdict with the evidence a real one carries (the assembled script,
// a traceback, the harness report) for rounds below R and a passed one at round R, so every
// sample goes through analyze, generate and R repairs: N * (2 + R) LLM calls. Figures, each
// after a full WAL checkpoint:
//   import_bytes     the database after the import
//   run_bytes        what the run added (file growth; the database is fresh, nothing is freed)
//   bytes_per_call   run_bytes over the LLM calls the run stored
// and the space each table and index takes (SQLite's dbstat), printed before the last line.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "daemon_bench.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/verify_queue.hpp"
#include "kforge/store/db.hpp"

[[noreturn]] void kforge::bench::die(const std::string& msg) {
  kforge::bench::kill_daemons();
  std::fprintf(stderr, "kforge-bench-storage: %s\n", msg.c_str());
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

template <class T>
T ok(kforge::Result<T> r, const char* what) {
  if (!r.ok()) die(std::string(what) + ": " + r.error().message);
  return std::move(r).value();
}
void ok(const kforge::Status& s, const char* what) {
  if (!s.ok()) die(std::string(what) + ": " + s.error().message);
}

// The wrapper and test of the fake provider's generations (bench/fake_llm/v2_fixed.yaml), which
// the verdicts below assemble into their scripts.
std::string generated(const char* field) {
  static const json script = fake_script();
  for (const auto& rule : script["rules"])
    if (rule.value("name", "") == "generate") return rule["reply_json"].value(field, "");
  die("bench/fake_llm/v2_fixed.yaml has no rule named generate");
}

// What the verifier would have stored for the sample's round: the assembled script, a failing
// test's traceback and the harness's report (round < rounds), or a pass (the last round).
kforge::verify::VerifyResult verdict(const std::string& key, const std::string& code, int round,
                                     int rounds) {
  static const std::string wrapper = generated("kernel_wrapper"), test = generated("unitest_code");
  kforge::verify::VerifyResult r;
  r.key = key;
  r.duration_ms = 900;
  r.device = "cuda:0";
  r.script = "# Assembled by the kforge verifier harness for " + key + "\n" + code + "\n" +
             wrapper + "\n" + test + "\n";
  if (round >= rounds) {
    r.verdict = kforge::verify::Verdict::passed;
    r.detail = "1 test passed";
    r.report = {{"tests", {{{"name", "test_bench"}, {"outcome", "passed"}}}}};
    return r;
  }
  r.verdict = kforge::verify::Verdict::failed;
  r.detail = "test_bench: AssertionError: Tensor-likes are not close! Mismatched elements: 8 / 8";
  r.stderr_tail =
      "Traceback (most recent call last):\n  File \"script.py\", line 41, in test_bench\n"
      "    torch.testing.assert_close(bench(x), x)\n"
      "AssertionError: Tensor-likes are not close!\n\nMismatched elements: 8 / 8 (100.0%)\n"
      "Greatest absolute difference: 2.31 at index (3,) (up to 1e-05 allowed)\n"
      "Greatest relative difference: 1.0 at index (3,) (up to 1.3e-06 allowed)\n";
  r.report = {{"tests",
               {{{"name", "test_bench"},
                 {"outcome", "failed"},
                 {"exception", "AssertionError"},
                 {"message", "Tensor-likes are not close!"},
                 {"line", 41},
                 {"source_line", "    torch.testing.assert_close(bench(x), x)"},
                 {"section", "test"}}}},
              {"launches", {{"kforge_bench_kernel", 1}}}};
  return r;
}

std::int64_t count(kforge::store::Db& db, const std::string& sql) {
  auto s = ok(db.prepare(sql), "prepare");
  return ok(s.step(), sql.c_str()) ? s.int64(0) : 0;
}

std::unique_ptr<kforge::store::Db> open(const fs::path& p) {
  kforge::store::OpenOptions o;
  o.path = p.string();
  o.migrate = false;
  return ok(kforge::store::Db::open(o), "open");
}

// The database's bytes after a full checkpoint (file; the WAL is then empty).
std::int64_t bytes(const fs::path& p) {
  {
    auto db = open(p);
    ok(db->exec("PRAGMA wal_checkpoint(TRUNCATE)"), "checkpoint");
  }
  std::error_code ec;
  auto wal = fs::file_size(p.string() + "-wal", ec);
  return static_cast<std::int64_t>(fs::file_size(p)) + (ec ? 0 : static_cast<std::int64_t>(wal));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kforge-bench-storage: the bytes a v2 run with repair rounds adds."};
  int samples = 4000;
  int rounds = 2;
  int in_flight = 64;
  std::string corpus = (fs::path(KFORGE_BENCH_SOURCE_DIR).parent_path() / "shared" / "corpus" /
                        "TritonBench_G_v1.json")
                           .string();
  fs::path build = KFORGE_BENCH_BUILD_DIR;
  std::string keep;
  app.add_option("--samples", samples, "Samples")->capture_default_str();
  app.add_option("--repair-rounds", rounds, "Repair rounds (every sample uses all)")
      ->capture_default_str();
  app.add_option("--in-flight", in_flight, "pipeline and llm max_in_flight")->capture_default_str();
  app.add_option("--corpus", corpus, "TritonBench-G JSON to build the samples from");
  app.add_option("--build", build, "Build directory with kforge and kforged")
      ->capture_default_str();
  app.add_option("--keep", keep, "Work in this directory and keep it (default: a temp dir)");
  CLI11_PARSE(app, argc, argv);

  fs::path dir = keep.empty() ? fs::temp_directory_path() /
                                    ("kforge-bench-storage-" + std::to_string(::getpid()))
                              : fs::path(keep);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::path kforge = build / "apps" / "kforge" / "kforge";
  fs::path kforged = build / "apps" / "kforged" / "kforged";
  fs::path dbp = dir / "kforge.db";

  auto fake = ok(kforge::fake_llm::FakeLlmServer::start(fake_script()), "fake provider");
  std::ofstream(dir / "kforge.yaml")
      << "log:\n  level: warn\nstore:\n  path: " << dbp.string()
      << "\nllm:\n  base_url: " << fake->base_url()
      << "\n  model: fake-model\n  api_key_env: \"\"\n"
         "  max_in_flight: "
      << in_flight << "\n  adaptive: false\npipeline:\n"
      << "  max_in_flight: " << in_flight << "\ndaemon:\n  http_listen: \"\"\n  verify: false\n";
  fs::path config = dir / "kforge.yaml";

  write_corpus(corpus, dir / "corpus.jsonl", samples);
  if (run({kforge.string(), "-c", config.string(), "import", (dir / "corpus.jsonl").string()}) != 0)
    die("import failed");
  std::int64_t import_bytes = bytes(dbp);
  if (run({kforge.string(), "-c", config.string(), "run", "create", "bench", "--pipeline", "v2",
           "--repair-rounds", std::to_string(rounds)}) != 0)
    die("run create failed");
  std::int64_t created_bytes = bytes(dbp);

  Daemon daemon;
  daemon.start(kforged, config, dir / "kforged.log");

  // The verifier's part, on this process's own connection.
  auto db = open(dbp);
  const auto& q = kforge::pipeline::pipeline_queries();
  const std::string owner = "kforge-bench-storage";
  auto t0 = Clock::now();
  std::int64_t verdicts = 0;
  while (count(*db, "SELECT count(*) FROM jobs WHERE state IN ('done', 'failed', 'cancelled')") <
         samples) {
    if (Clock::now() - t0 > 1800s)
      die("no end after 30 min: see " + (dir / "kforged.log").string());
    if (daemon.exited()) die("kforged exited: see " + (dir / "kforged.log").string());
    bool leased = false;
    while (true) {
      auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
      auto tx = ok(kforge::store::Transaction::begin(*db), "begin");
      kforge::verify::VerifyJob job;
      {
        auto* s = ok(db->cached(q["vstage_lease"]), "lease");
        s->bind(1, owner).bind(2, now + 600'000).bind(3, now);
        if (!ok(s->step(), "lease")) break;
        job.job_id = s->int64(0);
        job.run_id = s->int64(1);
        job.sample_id = s->int64(2);
        job.round = static_cast<int>(s->int64(3));
        (void)s->step();
        s->reset();
      }
      std::string key, code;
      {
        auto* s = ok(db->cached(q["vstage_sample"]), "sample");
        s->bind(1, job.sample_id);
        if (ok(s->step(), "sample")) {
          key = s->text(0);
          code = s->text(1);
        }
        s->reset();
      }
      {
        auto* s = ok(db->cached(q["vstage_next_attempt"]), "attempt");
        s->bind(1, job.job_id);
        job.attempt = ok(s->step(), "attempt") ? static_cast<int>(s->int64(0)) : 1;
        s->reset();
      }
      ok(kforge::pipeline::store_job_verdict(*db, owner, job, verdict(key, code, job.round, rounds),
                                             now),
         "store verdict");
      ok(tx.commit(), "commit");
      ++verdicts;
      leased = true;
    }
    if (!leased) std::this_thread::sleep_for(20ms);
  }
  double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  daemon.stop(SIGTERM);

  std::int64_t calls = count(*db, "SELECT count(*) FROM llm_calls");
  std::int64_t outputs = count(*db, "SELECT count(*) FROM stage_outputs");
  std::int64_t repairs = count(*db, "SELECT count(*) FROM stage_outputs WHERE stage = 'repair'");
  std::int64_t failed = count(*db, "SELECT count(*) FROM jobs WHERE state <> 'done'");
  std::printf("space by table and index (dbstat, MB):\n");
  {
    auto s = ok(db->prepare("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                            "ORDER BY 2 DESC LIMIT 12"),
                "dbstat");
    while (ok(s.step(), "dbstat"))
      std::printf("  %-32s %9.2f\n", s.text(0).c_str(), static_cast<double>(s.int64(1)) / 1e6);
  }
  if (count(*db, "SELECT count(*) FROM sqlite_master WHERE name = 'texts'") > 0) {
    auto s = ok(db->prepare("SELECT count(*), sum(size), sum(length(body)), "
                            "sum(codec = 'zstd') FROM texts"),
                "texts");
    if (ok(s.step(), "texts"))
      std::printf("texts: %lld distinct (%lld zstd), %.2f MB of text stored as %.2f MB\n",
                  static_cast<long long>(s.int64(0)), static_cast<long long>(s.int64(3)),
                  static_cast<double>(s.int64(1)) / 1e6, static_cast<double>(s.int64(2)) / 1e6);
  }
  db.reset();
  std::int64_t final_bytes = bytes(dbp);
  std::int64_t run_bytes = final_bytes - created_bytes;
  std::printf(
      "%d samples, %d repair rounds: %lld LLM calls, %lld stage outputs (%lld repairs), "
      "%lld verdicts, %lld jobs not done, %.1f s\n",
      samples, rounds, static_cast<long long>(calls), static_cast<long long>(outputs),
      static_cast<long long>(repairs), static_cast<long long>(verdicts),
      static_cast<long long>(failed), wall);
  std::printf(
      "import_bytes=%lld run_bytes=%lld bytes_per_call=%.0f db_bytes=%lld import_mb=%.1f "
      "run_mb=%.1f calls=%lld samples=%d repair_rounds=%d\n",
      static_cast<long long>(import_bytes), static_cast<long long>(run_bytes),
      calls > 0 ? static_cast<double>(run_bytes) / static_cast<double>(calls) : 0.0,
      static_cast<long long>(final_bytes), static_cast<double>(import_bytes) / 1e6,
      static_cast<double>(run_bytes) / 1e6, static_cast<long long>(calls), samples, rounds);
  if (keep.empty()) fs::remove_all(dir);
  return 0;
}
