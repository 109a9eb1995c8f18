#pragma once
// The whole configuration: each library's section, read from one YAML file
// (config/kforge.yaml documents every key) with KFORGE_* environment overrides.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/config.hpp"
#include "kforge/llm/config.hpp"
#include "kforge/pipeline/config.hpp"
#include "kforge/report/config.hpp"
#include "kforge/score/config.hpp"
#include "kforge/store/config.hpp"
#include "kforge/verify/config.hpp"

namespace kforge::app {

struct LogConfig {
  std::string level = "info";  // trace|debug|info|warn|error|off
  std::string file;            // empty: stderr (journald under systemd)
};

struct Config {
  std::string source;  // the file it came from, or "(defaults)"
  // Problems that do not stop the load, one line each: e.g. a KFORGE_* variable that names no
  // key ("KFORGE_LLM_MODLE is not a kforge variable (did you mean KFORGE_LLM_MODEL?)").
  std::vector<std::string> warnings;
  LogConfig log;
  store::StoreConfig store;
  report::ReportConfig report;
  verify::VerifierConfig verifier;
  llm::LlmConfig llm;
  pipeline::PipelineConfig pipeline;
  pipeline::DaemonConfig daemon;
  score::ScoreConfig score;  // kforged's scoring endpoint
};

// Which file to read: `explicit_path` if given; else $KFORGE_CONFIG; else ./kforge.yaml, then
// /etc/kforge/kforge.yaml if they exist; else none (defaults and environment only).
std::optional<std::filesystem::path> resolve_config_path(const std::string& explicit_path);

// Reads and validates. KFORGE_DB is an alias for KFORGE_STORE_PATH. `env_names` lists the
// environment's variable names (default: the process's), checked for KFORGE_* names that are
// neither a key's override nor one of kExtraEnv.
Result<Config> load_config(const std::string& explicit_path, EnvLookup env = process_env(),
                           std::optional<std::vector<std::string>> env_names = std::nullopt);

// KFORGE_* variables read outside the configuration sections, and those of kforge's own
// scripts, tests and benchmarks (also any KFORGE_TEST_*, KFORGE_BENCH_* or KFORGE_SEC_*):
// neither is warned about.
inline const std::vector<std::string> kExtraEnv = {
    "KFORGE_CONFIG",        "KFORGE_DB",         "KFORGE_DATA_DIR",
    "KFORGE_VERIFY_DEVICE", "KFORGE_SOURCE_DIR", "KFORGE_BUILD_DIR",
    "KFORGE_GPU_PYTHON",    "KFORGE_PKG_DIR",    "KFORGE_WITH_BROWSER"};
inline const std::vector<std::string> kExtraEnvPrefixes = {"KFORGE_TEST_", "KFORGE_BENCH_",
                                                           "KFORGE_SEC_"};

}  // namespace kforge::app

#include "kforge/store/db.hpp"

namespace kforge::app {

// What open_store does when the database file does not exist yet.
enum class IfMissing { create, refuse };

// Opens (and migrates) the database the configuration names. IfMissing::refuse: a missing file
// is an error (kind "usage") naming the path and where it came from, and nothing is created;
// commands that only read use it, so a misspelt KFORGE_DB never leaves an empty database behind.
Result<std::unique_ptr<store::Db>> open_store(const Config& c,
                                              IfMissing if_missing = IfMissing::create);

}  // namespace kforge::app
