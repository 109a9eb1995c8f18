// kforge debug TAG KEY --out DIR: a folder with everything about one sample, to re-run by hand.

#include <cstdio>

#include "commands.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/report/debug.hpp"

namespace kforge::cli {
namespace {

struct DebugArgs {
  std::string tag;
  std::string key;
  std::string out;
  bool failed = false;
};

}  // namespace

Command add_debug(CLI::App& root, Globals& g) {
  auto args = std::make_shared<DebugArgs>();
  CLI::App* cmd = root.add_subcommand(
      "debug", "Write a debug folder for a sample (or every failed sample) of a run");
  cmd->add_option("tag", args->tag, "The run's tag")->required();
  cmd->add_option("key", args->key, "The sample's key (or --failed)");
  cmd->add_option("--out", args->out, "The directory to write the folders into")->required();
  cmd->add_flag("--failed", args->failed,
                "One folder for each finished sample that is not verified");
  cmd->footer(
      "Each folder holds the code, each stage's prompt and raw response, the analysis, wrapper "
      "and test, the exact script the verifier ran with its verdict and stderr, every attempt, "
      "and run.sh, which re-runs the script with the verifier's Python (verifier.python, "
      "verifier.python_path on PYTHONPATH).");
  return {cmd, [args, &g]() -> int {
            if (args->key.empty() == !args->failed)
              return report(Error("usage", "debug: give either a sample KEY or --failed"));
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
            const report::DebugPython py{cfg.verifier.python, cfg.verifier.python_path};
            if (!args->failed) {
              KF_TRY_OR_REPORT(auto dir,
                               report::write_debug(*db, args->tag, args->key, args->out, py));
              std::printf("%s\n", printable(dir.string()).c_str());
              return kOk;
            }
            KF_TRY_OR_REPORT(auto dirs, report::write_debug_failed(*db, args->tag, args->out, py));
            for (const auto& d : dirs) std::printf("%s\n", printable(d.string()).c_str());
            if (!g.quiet)
              std::fprintf(stderr, "wrote %zu debug folders under %s\n", dirs.size(),
                           args->out.c_str());
            return kOk;
          }};
}

}  // namespace kforge::cli
