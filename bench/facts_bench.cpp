// kforge-bench-facts: the kernel facts of every .py file under a directory, as JSON lines.
//
//   kforge-bench-facts DIR [--jit-decorator triton_dist.jit]...
//
// One line per file, in path order: {"path": "<relative>", "kernels": [{"name", "line",
// "params": [[name, is_constexpr], ...], "autotune": [...], "heuristics": [...]}]} or
// {"path": ..., "error": {"kind", "message"}}; then a last line of key=value figures (files,
// bytes, kernels, refused, seconds).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "kforge/pipeline/facts.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

int main(int argc, char** argv) {
  CLI::App app{"Kernel facts of every .py file under a directory, as JSON lines"};
  std::string dir;
  kforge::pipeline::FactsOptions opts;
  app.add_option("dir", dir, "the crawl's root")->required()->check(CLI::ExistingDirectory);
  app.add_option("--jit-decorator", opts.jit_decorators, "an extra jit decorator (repeatable)");
  CLI11_PARSE(app, argc, argv);

  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".py") files.push_back(e.path());
  std::sort(files.begin(), files.end());

  std::size_t bytes = 0, kernels = 0, refused = 0;
  std::chrono::steady_clock::duration spent{};
  for (const auto& path : files) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string code = ss.str();
    bytes += code.size();
    auto t0 = std::chrono::steady_clock::now();
    auto facts = kforge::pipeline::extract_facts(code, opts);
    spent += std::chrono::steady_clock::now() - t0;
    json line = {{"path", fs::relative(path, dir).generic_string()}};
    if (!facts.ok()) {
      ++refused;
      line["error"] = {{"kind", facts.error().kind}, {"message", facts.error().message}};
    } else {
      json ks = json::array();
      for (const auto& k : facts->kernels) {
        json ps = json::array(), tuned = json::array(), heur = json::array();
        for (const auto& p : k.params) {
          ps.push_back({p.name, p.is_constexpr});
          if (p.set_by_autotune) tuned.push_back(p.name);
          if (p.set_by_heuristics) heur.push_back(p.name);
        }
        ks.push_back({{"name", k.name},
                      {"line", k.line},
                      {"params", ps},
                      {"autotune", tuned},
                      {"heuristics", heur}});
      }
      kernels += facts->kernels.size();
      line["kernels"] = ks;
    }
    std::cout << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }
  std::printf("files=%zu bytes=%zu kernels=%zu refused=%zu seconds=%.3f\n", files.size(), bytes,
              kernels, refused, std::chrono::duration<double>(spent).count());
  return 0;
}
