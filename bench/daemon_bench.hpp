#pragma once
// What the benchmarks that drive the real kforged share: files, child processes (the daemon
// with its CPU and memory, the CLI), a read-only look at the database and the 4,000-sample
// corpus made from TritonBench-G's records. Each program defines kforge::bench::die (its name
// in the message).

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kforge/core/env.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/fake_llm/server.hpp"
#include "kforge/store/db.hpp"

namespace kforge::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Prints the message with the program's name and exits 1.
[[noreturn]] void die(const std::string& msg);

inline std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs argv[0] with argv (stdout to /dev/null, stderr kept), returns its exit status (-1:
// killed or not started).
inline int run(const std::vector<std::string>& argv) {
  SpawnOptions o;
  o.argv = argv;
  o.fds = {{2, 2}};
  o.new_session = false;
  auto pid = default_env().spawn(o);
  if (!pid.ok()) return -1;
  auto end = default_env().wait(*pid, WaitMode::block);
  int st = end ? end->status : -1;
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// The kforged children started and not yet stopped. Each program's die() calls kill_daemons()
// first, so a benchmark that fails half way leaves no daemon running (holding its port and
// database).
inline std::set<pid_t>& live_daemons() {
  static std::set<pid_t> pids;
  return pids;
}
inline void kill_daemons() {
  for (pid_t p : live_daemons()) {
    default_env().kill(p, SIGKILL);
    default_env().wait(p, WaitMode::block);
  }
  live_daemons().clear();
}

// A kforged child, started and reaped through the Env: its exit status, CPU time and peak
// memory come from Env::wait.
struct Daemon {
  pid_t pid = -1;
  ExitInfo usage;
  void start(const fs::path& bin, const fs::path& config, const fs::path& log) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    SpawnOptions o;
    o.argv = {bin.string(), "-c", config.string()};
    if (fd >= 0) o.fds = {{fd, 1}, {fd, 2}};
    o.new_session = false;
    auto p = default_env().spawn(o);
    if (fd >= 0) ::close(fd);
    pid = p.ok() ? *p : -1;
    if (pid > 0) live_daemons().insert(pid);
  }
  int stop(int sig) {
    default_env().kill(pid, sig);
    if (auto end = default_env().wait(pid, WaitMode::block)) usage = *end;
    live_daemons().erase(pid);
    return usage.status;
  }
  // Whether it has exited on its own (then reaped).
  bool exited() {
    auto end = default_env().wait(pid, WaitMode::no_hang);
    if (!end) return false;
    usage = *end;
    live_daemons().erase(pid);
    return true;
  }
  double cpu_s() const { return static_cast<double>(usage.cpu_ms) / 1000.0; }
  double peak_mb() const { return static_cast<double>(usage.maxrss_kb) / 1024.0; }
};

// The database, opened without migrating, for counts.
class Db {
 public:
  explicit Db(const fs::path& p) {
    kforge::store::OpenOptions o;
    o.path = p.string();
    o.migrate = false;
    auto db = kforge::store::Db::open(o);
    if (!db.ok()) die(db.error().message);
    db_ = std::move(*db);
  }
  std::int64_t count(const std::string& sql) {
    auto s = db_->prepare(sql);
    if (!s.ok()) die(s.error().message);
    auto row = s->step();
    if (!row.ok()) die(row.error().message);
    return *row ? s->int64(0) : 0;
  }
  std::set<std::string> durable() {
    std::set<std::string> out;
    auto s = db_->prepare("SELECT kf_text(request_text) FROM llm_calls WHERE status = 'ok'");
    while (*s->step()) out.insert(kforge::sha256_hex(s->text(0)));
    return out;
  }

 private:
  std::unique_ptr<kforge::store::Db> db_;
};

// n records (key, code, descriptions) made distinct from the records of `source` (a JSON list,
// TritonBench-G's), or from a synthetic one where there is none.
inline void write_corpus(const fs::path& source, const fs::path& out, int n) {
  json records = json::array();
  if (!source.empty() && fs::exists(source)) records = json::parse(read(source));
  if (records.empty())
    records.push_back({{"file", "synthetic.py"},
                       {"output", "import torch\nimport triton\nimport triton.language as tl\n"},
                       {"simp_instru", "a kernel"},
                       {"comp_instru", "a kernel"}});
  std::ofstream o(out, std::ios::binary);
  for (int i = 0; i < n; ++i) {
    const json& r = records[static_cast<std::size_t>(i) % records.size()];
    std::string code = r.value("output", "") +
                       "\n\n@triton.jit\ndef kforge_bench_kernel(x_ptr, n, BLOCK: tl.constexpr):"
                       "\n    pid = tl.program_id(0)\n\n# kforge-bench sample " +
                       std::to_string(i) + "\n";
    json rec = {{"key", "bench-" + std::to_string(i)},
                {"code", code},
                {"description_1", r.value("simp_instru", "")},
                {"description_2", r.value("comp_instru", "")}};
    o << rec.dump() << "\n";
  }
}

// The fake provider's fixed answers to the corpus above (bench/fake_llm/v2_fixed.yaml: an
// analysis naming kforge_bench_kernel, one wrapper and test for every generation).
inline json fake_script() {
  auto s = fake_llm::load_script(fs::path(KFORGE_BENCH_SOURCE_DIR) / "bench" / "fake_llm" /
                                 "v2_fixed.yaml");
  if (!s.ok()) die("the fake provider's script: " + s.error().message);
  return std::move(s).value();
}

}  // namespace kforge::bench
