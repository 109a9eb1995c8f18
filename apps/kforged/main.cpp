// kforged: the pipeline daemon. It opens (and migrates) the database named by the configuration
// and serves until SIGTERM or SIGINT.

#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>

#include "kforge/app/config.hpp"
#include "kforge/core/log.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kforged: the kforge pipeline daemon.", "kforged"};
  std::string config_path;
  bool check = false;
  app.add_option("-c,--config", config_path, "Configuration file");
  app.add_flag("--check-config", check, "Validate the configuration and exit");
  app.set_version_flag("--version", std::string("kforged ") + KFORGE_VERSION);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  auto cfg = kforge::app::load_config(config_path);
  if (!cfg.ok()) {
    std::fprintf(stderr, "kforged: error: %s\n", cfg.error().message.c_str());
    return 1;
  }
  if (check) {
    std::printf("%s: ok\n", cfg->source.c_str());
    return 0;
  }
  kforge::setup_logging(cfg->log.level, cfg->log.file);
  auto db = kforge::app::open_store(*cfg);
  if (!db.ok()) {
    spdlog::error("{}", db.error().message);
    return 1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  spdlog::info("kforged ready (config {}, database {})", cfg->source, cfg->store.path);
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("received signal {}, exiting", sig);
  return 0;
}
