#pragma once
// The whole configuration: each library's section, read from one YAML file
// (config/kforge.yaml documents every key) with KFORGE_* environment overrides.

#include <filesystem>
#include <optional>
#include <string>

#include "kforge/core/config.hpp"
#include "kforge/llm/config.hpp"
#include "kforge/pipeline/config.hpp"
#include "kforge/report/config.hpp"
#include "kforge/store/config.hpp"
#include "kforge/verify/config.hpp"

namespace kforge::app {

struct LogConfig {
  std::string level = "info";  // trace|debug|info|warn|error|off
  std::string file;            // empty: stderr (journald under systemd)
};

struct Config {
  std::string source;  // the file it came from, or "(defaults)"
  LogConfig log;
  store::StoreConfig store;
  report::ReportConfig report;
  verify::VerifierConfig verifier;
  llm::LlmConfig llm;
  pipeline::PipelineConfig pipeline;
  pipeline::DaemonConfig daemon;
};

// Which file to read: `explicit_path` if given; else $KFORGE_CONFIG; else ./kforge.yaml, then
// /etc/kforge/kforge.yaml if they exist; else none (defaults and environment only).
std::optional<std::filesystem::path> resolve_config_path(const std::string& explicit_path);

// Reads and validates. KFORGE_DB is an alias for KFORGE_STORE_PATH.
Result<Config> load_config(const std::string& explicit_path, EnvLookup env = process_env());

}  // namespace kforge::app

#include "kforge/store/db.hpp"

namespace kforge::app {

// Opens (and migrates) the database the configuration names.
Result<std::unique_ptr<store::Db>> open_store(const Config& c);

}  // namespace kforge::app
