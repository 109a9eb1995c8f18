// kforge status [TAG] [--watch] [--json]: samples, runs, jobs by state and stage, progress,
// rate, ETA, tokens, cost and recent errors by kind. The data and both its renderings are the
// pipeline library's (kforge/pipeline/status.hpp); this is the command line and --watch.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/core/env.hpp"
#include "kforge/pipeline/status.hpp"

namespace kforge::cli {
namespace {

struct StatusArgs {
  std::string tag;
  bool json = false;
  bool create = false;  // make (and migrate) the database where there is none
  bool watch = false;
  double interval_s = 2;
};

std::string this_host() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

bool pid_alive(std::int64_t pid) {
  return default_env().alive(static_cast<pid_t>(pid));
}

}  // namespace

Command add_status(CLI::App& root, Globals& g) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = root.add_subcommand("status", "Show samples, runs and their progress");
  cmd->add_option("tag", args->tag, "Only this run");
  cmd->add_flag("--json", args->json, "Print one JSON object (for scripts)");
  cmd->add_flag("--create", args->create,
                "Create and migrate the database where there is none (the package's install "
                "does this as the service user); without it a missing database is an error");
  cmd->add_flag("--watch", args->watch,
                "Redraw every --interval seconds while a run shown is generating or verifying; "
                "stop when each is finished or waits for something not running (with --json: "
                "one JSON line each time)");
  cmd->add_option("--interval", args->interval_s, "Seconds between redraws with --watch")
      ->check(CLI::Range(0.1, 3600.0));
  return {cmd, [args, &g]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg, args->create ? app::IfMissing::create
                                                                        : app::IfMissing::refuse));
            std::optional<std::string> tag;
            if (!args->tag.empty()) tag = args->tag;
            bool tty = ::isatty(1) != 0;
            while (true) {
              pipeline::StatusSources from{cfg.pipeline.prompts_dir, system_clock().wall_ms(),
                                           this_host(), pid_alive};
              KF_TRY_OR_REPORT(auto st, pipeline::collect_status(*db, from, tag));
              if (args->json) {
                // ASCII only: a C1 control (U+009B, a CSI) is escaped too, as \u009b.
                std::printf("%s\n",
                            pipeline::to_json(st)
                                .dump(-1, ' ', true, nlohmann::json::error_handler_t::replace)
                                .c_str());
              } else {
                // Keys, answers and errors came from models and crawls: the text puts each
                // through printable(), so no escape sequence of theirs reaches the terminal.
                if (args->watch && tty) std::printf("\033[H\033[2J");
                std::fputs(pipeline::status_text(st).c_str(), stdout);
                if (args->watch)
                  std::printf("\n(every %.1f s; Ctrl-C to stop)\n", args->interval_s);
              }
              if (args->watch && !pipeline::working(st)) {
                // Nothing shown can move on by itself: say why instead of redrawing forever.
                std::fprintf(args->json ? stderr : stdout, "%sstopped watching: %s\n",
                             args->json ? "kforge: " : "\n", pipeline::why_stopped(st).c_str());
                std::fflush(stdout);
                return kOk;
              }
              std::fflush(stdout);
              if (!args->watch) return kOk;
              system_clock().sleep_for(
                  std::chrono::milliseconds(static_cast<std::int64_t>(args->interval_s * 1000)));
            }
          }};
}

}  // namespace kforge::cli
