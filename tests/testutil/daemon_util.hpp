#pragma once

#include <algorithm>
// Helpers for the end-to-end tests: a fake provider on loopback, a database with the corpus
// imported through the real CLI, and the real kforged as a child process that can be killed.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/store/db.hpp"
#include "testutil.hpp"

namespace kforge::pipeline::e2e {

using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

inline fs::path fake_triton_dir() {
  return test::source_dir() / "tests" / "verify" / "fake_triton";
}
// Four kernels the stand-in Triton runs on the CPU; with fake_llm_cpu.json their samples pass
// (vector_add.py, vector_sub.py), fail (vector_scale.py) or are rejected at generation
// (vector_neg.py: no test function).
inline fs::path cpu_corpus() {
  return test::source_dir() / "tests" / "data" / "corpus_cpu.json";
}

inline json load_json(const fs::path& p) {
  return json::parse(test::read_text(p));
}

inline json script(const std::string& name, double latency_ms = 0) {
  json s = load_json(test::source_dir() / "tests" / "pipeline" / name);
  if (latency_ms > 0) s["defaults"] = {{"latency_ms", latency_ms}};
  return s;
}

// A child process with stdout and stderr in a log file.
class Proc {
 public:
  Proc(const std::vector<std::string>& argv, const std::vector<std::string>& env,
       const fs::path& log)
      : log_(log) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    SpawnOptions o;
    o.argv = argv;
    o.env = test::environment_with(env);
    if (fd >= 0) o.fds = {{fd, 1}, {fd, 2}};
    o.new_session = false;
    auto pid = default_env().spawn(o);
    if (fd >= 0) ::close(fd);
    EXPECT_TRUE(pid.ok()) << (pid.ok() ? "" : pid.error().message);
    pid_ = pid.ok() ? *pid : -1;
  }
  ~Proc() {
    if (pid_ > 0 && !exited_) {
      default_env().kill(pid_, SIGKILL);
      wait(10s);
    }
  }
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  void signal(int sig) { default_env().kill(pid_, sig); }
  // The exit code, -SIGNAL when killed, or nullopt if still running after `timeout`.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    auto until = std::chrono::steady_clock::now() + timeout;
    if (pid_ <= 0) return std::nullopt;  // never started
    while (!exited_) {
      if (auto end = default_env().wait(pid_, WaitMode::no_hang)) {
        const int st = end->status;
        exited_ = true;
        status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
        break;
      }
      if (std::chrono::steady_clock::now() >= until) return std::nullopt;
      std::this_thread::sleep_for(10ms);
    }
    return status_;
  }
  void kill9() {
    signal(SIGKILL);
    wait(10s);
  }
  pid_t pid() const { return pid_; }
  std::string log() const { return test::read_text(log_); }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
};

struct Options {
  int max_in_flight = 16;
  std::int64_t lease_ms = 60'000;
  std::int64_t grace_ms = 10'000;
  std::string owner;
  std::string prompts_dir;
  std::string http_listen;  // empty: none
  std::int64_t idle_poll_ms = 50;
  std::int64_t status_interval_ms = 200;
  bool verify = false;  // run the verifier pool (CPU, /usr/bin/python3) in the daemon
  // With verify: the stand-in Triton (tests/verify/fake_triton) on verifier.python_path, so
  // samples written for it (tests/data/corpus_cpu.json) pass on the CPU.
  bool fake_triton = false;
  int verify_backlog = 0;  // pipeline.verify_backlog (0: off)
  std::string llm_extra;   // more lines of the llm section (indented), e.g. "  mode: batch\n"
};

// A temp dir with a database (the tests' corpus, tests/data/corpus_small.json, imported through
// the CLI) and a config file pointing at a fake provider.
class Site {
 public:
  explicit Site(const json& fake_script) {
    auto s = fake_llm::FakeLlmServer::start(fake_script);
    if (!s.ok()) throw std::runtime_error(s.error().message);
    fake_ = std::move(*s);
    db_ = dir_ / "kforge.db";
    write_config(Options{});
  }

  void write_config(const Options& o) {
    std::string y;
    y += "log:\n  level: debug\n";
    y += "store:\n  path: " + db_.string() + "\n";
    y += "llm:\n  base_url: " + fake_->base_url() +
         "\n  model: fake-model\n  api_key_env: \"\"\n  max_in_flight: " +
         std::to_string(o.max_in_flight) +
         "\n  adaptive: false\n  backoff_base_ms: 20\n  backoff_max_ms: 200\n"
         "  request_timeout_ms: 20000\n";
    y += o.llm_extra;
    y += "pipeline:\n  max_in_flight: " + std::to_string(o.max_in_flight) +
         "\n  lease_ms: " + std::to_string(o.lease_ms) +
         "\n  retry_backoff_ms: 50\n  retry_backoff_max_ms: 200\n  idle_poll_ms: " +
         std::to_string(o.idle_poll_ms) +
         "\n  verify_backlog: " + std::to_string(o.verify_backlog) + "\n";
    if (!o.prompts_dir.empty()) y += "  prompts_dir: " + o.prompts_dir + "\n";
    y += "daemon:\n  http_listen: \"" + o.http_listen +
         "\"\n  shutdown_grace_ms: " + std::to_string(o.grace_ms) +
         "\n  status_interval_ms: " + std::to_string(o.status_interval_ms) +
         "\n  verify: " + (o.verify ? "true" : "false") + "\n";
    if (!o.owner.empty()) y += "  owner: " + o.owner + "\n";
    // Samples in the order they were leased (verifier.order: input): the daemon's tests say which
    // sample runs while which waits (tests/verify/order_test.cpp and the kforge verify tests
    // test the default, cost).
    if (o.verify)
      y += "verifier:\n  devices: [cpu]\n  cpu_workers: 2\n  python: /usr/bin/python3\n"
           "  timeout_s: 30\n  memory_cap_mb: 1024\n  order: input\n  work_dir: \"" +
           (dir_ / "verify-work").string() + "\"\n";
    if (o.verify && o.fake_triton)
      y += "  python_path: [\"" + fake_triton_dir().string() +
           "\"]\n  preload: [triton, triton.language]\n";
    test::write_text(config(), y);
  }

  fs::path config() const { return dir_ / "kforge.yaml"; }
  const fs::path& db_path() const { return db_; }
  fake_llm::FakeLlmServer& fake() { return *fake_; }
  const test::TempDir& dir() const { return dir_; }

  test::ProcResult kforge(std::vector<std::string> args) {
    std::vector<std::string> argv = {test::binary("apps/kforge/kforge").string(), "-c",
                                     config().string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv);
  }

  // Imports the tests' corpus, or another file of the same format.
  void import_corpus(const fs::path& file = test::small_corpus()) {
    auto r = kforge({"import", file.string(), "--map",
                     "code=output,description_1=simp_instru,description_2=comp_instru", "--key",
                     "file"});
    if (r.exit_code != 0) throw std::runtime_error("import failed: " + r.err);
  }

  void create_run(const std::string& tag, const std::string& pipeline,
                  std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"run", "create", tag, "--pipeline", pipeline};
    a.insert(a.end(), extra.begin(), extra.end());
    // Tests that are not about repair rounds see one verdict per sample.
    if (std::find(extra.begin(), extra.end(), "--repair-rounds") == extra.end())
      a.insert(a.end(), {"--repair-rounds", "0"});
    auto r = kforge(a);
    if (r.exit_code != 0) throw std::runtime_error("run create failed: " + r.err);
  }

  std::unique_ptr<Proc> start_daemon(std::vector<std::string> env = {}) {
    return std::make_unique<Proc>(
        std::vector<std::string>{test::binary("apps/kforged/kforged").string(), "-c",
                                 config().string()},
        env, dir_ / ("kforged." + std::to_string(++daemons_) + ".log"));
  }

  std::unique_ptr<store::Db> open_db() {
    store::OpenOptions o;
    o.path = db_.string();
    o.migrate = false;
    auto db = store::Db::open(o);
    if (!db.ok()) throw std::runtime_error(db.error().message);
    return std::move(*db);
  }

  std::int64_t scalar(const std::string& sql) {
    auto db = open_db();
    auto s = db->prepare(sql);
    if (!s.ok()) throw std::runtime_error(s.error().message);
    auto row = s->step();
    if (!row.ok()) throw std::runtime_error(row.error().message);
    return *row ? s->int64(0) : 0;
  }

  // Waits until `sql` (a count) reaches `n` or the timeout passes; returns the last value.
  std::int64_t wait_for(const std::string& sql, std::int64_t n,
                        std::chrono::milliseconds timeout = 60s) {
    auto until = std::chrono::steady_clock::now() + timeout;
    std::int64_t v = 0;
    while (std::chrono::steady_clock::now() < until) {
      v = scalar(sql);
      if (v >= n) return v;
      std::this_thread::sleep_for(20ms);
    }
    return v;
  }

  // Rows of a query as strings joined with '|'.
  std::vector<std::string> rows(const std::string& sql, int cols) {
    auto db = open_db();
    auto s = db->prepare(sql);
    if (!s.ok()) throw std::runtime_error(s.error().message);
    std::vector<std::string> out;
    while (*s->step()) {
      std::string row;
      for (int c = 0; c < cols; ++c) {
        std::string v = s->text(c);
        row += (c ? "|" : "") + v;
      }
      out.push_back(row);
    }
    return out;
  }

  // SHA-256 of every request body the database holds a good answer for (the client's store).
  std::set<std::string> durable_answers() {
    std::set<std::string> out;
    auto db = open_db();
    auto s = db->prepare("SELECT kf_text(request_text) FROM llm_calls WHERE status = 'ok'");
    while (*s->step()) out.insert(sha256_hex(s->text(0)));
    return out;
  }

 private:
  test::TempDir dir_;
  std::unique_ptr<fake_llm::FakeLlmServer> fake_;
  fs::path db_;
  int daemons_ = 0;
};

// Every job ended: done, failed or cancelled.
inline const char* kEnded =
    "SELECT count(*) FROM jobs WHERE state IN ('done', 'failed', 'cancelled')";

// Every job past its LLM stages.
inline const char* kPastLlm =
    "SELECT count(*) FROM jobs WHERE state IN ('verify_queued', 'failed', 'done', 'cancelled')";

// The corpus most daemon tests run: tests/data/corpus_small.json (every sample the fault scripts
// name is in it).
inline constexpr int kN = test::kSmallCorpusRecords;

// Jobs of a run by final state, keyed by sample: "key|state|stage|error_kind".
inline std::vector<std::string> final_states(Site& s, const std::string& tag) {
  return s.rows(
      "SELECT s.key, j.state, j.stage, coalesce(j.error_kind, '') FROM jobs j "
      "JOIN samples s ON s.id = j.sample_id JOIN runs r ON r.id = j.run_id "
      "WHERE r.tag = '" +
          tag + "' ORDER BY s.key",
      4);
}

// Every stage output of a run: "key|stage|attempt|status|error_kind|parsed_json".
inline std::vector<std::string> outputs(Site& s, const std::string& tag) {
  return s.rows(
      "SELECT s.key, o.stage, o.attempt, o.status, coalesce(o.error_kind, ''), "
      "coalesce(kf_text(o.parsed_text), '') FROM stage_outputs o JOIN samples s ON s.id = "
      "o.sample_id JOIN runs r ON r.id = o.run_id WHERE r.tag = '" +
          tag + "' ORDER BY s.key, o.stage DESC, o.attempt",
      6);
}

// A loopback port free at the time of asking (for the daemon's metrics listener).
inline int free_port() {
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

}  // namespace kforge::pipeline::e2e
