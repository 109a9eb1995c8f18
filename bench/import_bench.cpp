// kforge-bench-import [--mb N] [--dir D]: generates a corpus of about N MB (default 200) as a JSON
// list, imports it into a fresh database and reports time and peak resident memory. The baseline
// in the same run is the memory a whole-file parse (nlohmann::json::parse of the same file)
// needs, which is what a non-streaming importer would hold.
//
// Last line: records=… file_mb=… import_s=… records_per_s=… mb_per_s=… peak_rss_mb=…
//            dom_parse_rss_mb=…

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "kforge/core/env.hpp"
#include "kforge/corpus/importer.hpp"

namespace {

double& last_secs() {
  static double s = 0;
  return s;
}

long vm_hwm_kb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Runs fn in a child process and returns the child's peak RSS in MB, so one measurement does
// not inflate the other.
template <class Fn>
double child_peak_mb(Fn fn) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  // The benchmark has no other thread when it forks, so the child may allocate.
  auto pid = kforge::default_env().fork_call([&]() -> int {
    close(fds[0]);
    double secs = fn();
    long kb = vm_hwm_kb();
    char buf[64];
    int n = std::snprintf(buf, sizeof buf, "%ld %.3f", kb, secs);
    (void)!write(fds[1], buf, static_cast<std::size_t>(n));
    return 0;
  });
  close(fds[1]);
  char buf[64] = {};
  (void)!read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  if (pid.ok()) kforge::default_env().wait(*pid, kforge::WaitMode::block);
  long kb = 0;
  double secs = 0;
  std::sscanf(buf, "%ld %lf", &kb, &secs);
  last_secs() = secs;
  return static_cast<double>(kb) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  double target_mb = 200;
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "kforge-bench-import";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mb") == 0) target_mb = std::stod(argv[i + 1]);
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
  }
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto corpus = dir / "corpus.json";
  std::int64_t records = 0;
  {
    std::ofstream out(corpus);
    out << "[\n";
    std::string body;
    for (int i = 0; i < 60; ++i)
      body += "    acc += tl.load(x_ptr + offs + " + std::to_string(i) + ", mask=mask)\\n";
    std::uint64_t written = 2;
    const auto target = static_cast<std::uint64_t>(target_mb * 1024 * 1024);
    while (written < target) {
      std::string rec =
          std::string(records ? ",\n" : "") + "{\"file\": \"k" + std::to_string(records) +
          ".py\", \"output\": \"@triton.jit\\ndef kernel_" + std::to_string(records) +
          "(x_ptr, n, BLOCK: tl.constexpr):\\n" + body +
          "\", \"simp_instru\": \"A kernel.\", \"comp_instru\": \"A kernel that sums.\", "
          "\"star\": " +
          std::to_string(records % 1000) + "}";
      out << rec;
      written += rec.size();
      ++records;
    }
    out << "\n]\n";
  }
  double file_mb = static_cast<double>(std::filesystem::file_size(corpus)) / (1024.0 * 1024.0);
  std::printf("generated %lld records, %.1f MB\n", static_cast<long long>(records), file_mb);

  double import_rss = child_peak_mb([&]() -> double {
    kforge::store::OpenOptions o;
    o.path = (dir / "k.db").string();
    auto db = kforge::store::Db::open(o);
    if (!db.ok()) return -1;
    kforge::corpus::ImportOptions opts;
    auto m = kforge::corpus::parse_field_map(
        "code=output,description_1=simp_instru,description_2=comp_instru");
    opts.map = *m;
    opts.map.key = "file";
    auto t0 = std::chrono::steady_clock::now();
    auto r = kforge::corpus::import_file(**db, corpus, opts);
    auto t1 = std::chrono::steady_clock::now();
    if (!r.ok()) {
      std::fprintf(stderr, "import failed: %s\n", r.error().message.c_str());
      return -1;
    }
    return std::chrono::duration<double>(t1 - t0).count();
  });
  double import_s = last_secs();
  double dom_rss = child_peak_mb([&]() -> double {
    std::ifstream in(corpus);
    auto t0 = std::chrono::steady_clock::now();
    auto j = nlohmann::json::parse(in);
    auto t1 = std::chrono::steady_clock::now();
    return j.size() > 0 ? std::chrono::duration<double>(t1 - t0).count() : 0;
  });
  std::printf("import: %.2f s, peak RSS %.1f MB; whole-file parse baseline: peak RSS %.1f MB\n",
              import_s, import_rss, dom_rss);
  std::printf(
      "records=%lld file_mb=%.1f import_s=%.2f records_per_s=%.0f mb_per_s=%.1f peak_rss_mb=%.1f "
      "dom_parse_rss_mb=%.1f\n",
      static_cast<long long>(records), file_mb, import_s, static_cast<double>(records) / import_s,
      file_mb / import_s, import_rss, dom_rss);
  std::filesystem::remove_all(dir);
  return import_s > 0 ? 0 : 1;
}
