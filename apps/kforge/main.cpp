// kforge: the command-line tool. Exceptions are caught here, once.

#include <cstdio>
#include <iostream>
#include <vector>

#include "commands.hpp"
#include "kforge/core/log.hpp"

namespace kforge::cli {

int report(const Error& e) {
  std::fprintf(stderr, "kforge: error: %s\n", e.message.c_str());
  return e.kind == "usage" ? kUsage : kFailure;
}

Result<app::Config> load(const Globals& g) {
  KF_TRY(app::Config c, app::load_config(g.config_path));
  // The CLI logs warnings and errors only, to stderr; the daemon honours log.level.
  setup_logging(g.quiet ? "error" : "warn");
  return c;
}

}  // namespace kforge::cli

int main(int argc, char** argv) {
  using namespace kforge::cli;
  CLI::App app{"kforge: turn raw Triton kernels into verified training samples.", "kforge"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("kforge ") + KFORGE_VERSION);
  Globals g;
  app.add_option("-c,--config", g.config_path,
                 "Configuration file (default: $KFORGE_CONFIG, "
                 "./kforge.yaml, /etc/kforge/kforge.yaml)");
  app.add_flag("-q,--quiet", g.quiet, "Print only errors and results");
  std::vector<Command> commands;
  commands.push_back(add_import(app, g));
  commands.push_back(add_status(app, g));
  commands.push_back(add_compare(app, g));
  commands.push_back(add_export(app, g));
  commands.push_back(add_debug(app, g));
  commands.push_back(add_retry(app, g));
  commands.push_back(add_verify(app, g));
  commands.push_back(add_run(app, g));
  commands.push_back(add_corpus(app, g));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }
  try {
    for (const auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return kUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kforge: fatal: %s\n", e.what());
    return kFailure;
  }
}
