#pragma once
// Shared test helpers: temp directories, running the real binaries, corpus paths.

#include <filesystem>
#include <string>
#include <vector>

namespace kforge::test {

// A fresh directory under $TMPDIR, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct ProcResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// Runs argv (argv[0] a path) with extra environment entries ("K=V"), stdin from /dev/null,
// capturing stdout and stderr. Waits at most timeout_s; kills the process after that.
// Through default_env().run().
ProcResult run_process(const std::vector<std::string>& argv,
                       const std::vector<std::string>& env = {}, int timeout_s = 120);

// This process's environment with `extra` ("K=V") added, each replacing a variable of its name.
std::vector<std::string> environment_with(const std::vector<std::string>& extra);

std::filesystem::path source_dir();
std::filesystem::path build_dir();
// A built binary of this project, e.g. "apps/kforge/kforge".
std::filesystem::path binary(const std::string& relative);
// The tests' own corpus: tests/data/corpus_small.json, kSmallCorpusRecords records copied from
// TritonBench-G (same format), always present.
std::filesystem::path small_corpus();
inline constexpr int kSmallCorpusRecords = 40;
// All 184 records of TritonBench-G with their code only (fields file, repo, output):
// tests/data/tritonbench_g_code.json, always present. Tests never read anything outside the
// repository.
std::filesystem::path tritonbench_g_code();
inline constexpr int kTritonBenchGRecords = 184;

void write_text(const std::filesystem::path& p, const std::string& text);
std::string read_text(const std::filesystem::path& p);

}  // namespace kforge::test
