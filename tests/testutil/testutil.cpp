#include "testutil.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "kforge/core/env.hpp"

extern char** environ;

namespace kforge::test {

TempDir::TempDir() {
  std::random_device rd;
  auto base = std::filesystem::temp_directory_path();
  for (int i = 0; i < 100; ++i) {
    auto p = base / ("kforge-test-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
    if (std::filesystem::create_directory(p)) {
      path_ = p;
      return;
    }
  }
  throw std::runtime_error("cannot create temp dir");
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  auto name = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    bool replaced = false;
    for (const auto& x : extra) replaced = replaced || name(x) == name(kv);
    if (!replaced) out.push_back(std::move(kv));
  }
  out.insert(out.end(), extra.begin(), extra.end());
  return out;
}

ProcResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       int timeout_s) {
  RunOptions o;
  o.timeout = std::chrono::seconds(timeout_s);
  if (!env.empty()) o.env = environment_with(env);
  auto done = default_env().run(argv, o);
  ProcResult r;
  if (!done.ok()) {  // timed out (and killed), or could not start
    r.signal = done.error().kind == "timeout" ? SIGKILL : 0;
    r.err = done.error().message;
    return r;
  }
  r.exit_code = done->exit_code;
  if (WIFSIGNALED(done->wait_status)) r.signal = WTERMSIG(done->wait_status);
  r.out = std::move(done->out);
  r.err = std::move(done->err);
  return r;
}

std::filesystem::path source_dir() {
  return KFORGE_TEST_SOURCE_DIR;
}
std::filesystem::path build_dir() {
  return KFORGE_TEST_BUILD_DIR;
}
std::filesystem::path binary(const std::string& relative) {
  return build_dir() / relative;
}

std::filesystem::path small_corpus() {
  return source_dir() / "tests" / "data" / "corpus_small.json";
}

std::filesystem::path tritonbench_g_code() {
  return source_dir() / "tests" / "data" / "tritonbench_g_code.json";
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace kforge::test
