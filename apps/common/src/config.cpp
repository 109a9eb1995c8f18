#include "kforge/app/config.hpp"

#include "kforge/core/names.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace kforge::app {

std::optional<std::filesystem::path> resolve_config_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return std::filesystem::path(explicit_path);
  if (const char* env = std::getenv("KFORGE_CONFIG"); env != nullptr && *env != '\0')
    return std::filesystem::path(env);
  for (const char* p : {"kforge.yaml", "/etc/kforge/kforge.yaml"}) {
    std::error_code ec;
    if (std::filesystem::exists(p, ec)) return std::filesystem::path(p);
  }
  return std::nullopt;
}

namespace {

std::vector<std::string> process_env_names() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    out.emplace_back(*e, eq != nullptr ? static_cast<std::size_t>(eq - *e) : std::strlen(*e));
  }
  return out;
}

}  // namespace

Result<Config> load_config(const std::string& explicit_path, EnvLookup env,
                           std::optional<std::vector<std::string>> env_names) {
  auto path = resolve_config_path(explicit_path);
  // Every name a section looks up passes here: what is left of the environment's KFORGE_*
  // names afterwards overrides nothing.
  auto looked_up = std::make_shared<std::vector<std::string>>();
  EnvLookup with_alias = [env, looked_up](const std::string& name) -> std::optional<std::string> {
    looked_up->push_back(name);
    if (name == "KFORGE_STORE_PATH") {
      if (auto v = env("KFORGE_STORE_PATH")) return v;
      return env("KFORGE_DB");
    }
    return env(name);
  };
  std::unique_ptr<ConfigReader> reader;
  if (path) {
    KF_TRY(reader, ConfigReader::load_file(*path, with_alias));
  } else {
    KF_TRY(reader, ConfigReader::load_string("{}", "(defaults)", with_alias));
  }
  Config c;
  c.source = path ? path->string() : "(defaults)";
  ConfigNode root = reader->root();
  {
    ConfigNode n = root.child("log");
    n.get("level", c.log.level);
    n.get("file", c.log.file);
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
    bool ok = false;
    for (const char* l : kLevels) ok = ok || c.log.level == l;
    if (!ok)
      n.invalid("level",
                "'" + c.log.level + "' is not one of trace, debug, info, warn, error, off");
  }
  store::read_config(root.child("store"), c.store);
  report::read_config(root.child("report"), c.report);
  verify::read_config(root.child("verifier"), c.verifier);
  llm::read_config(root.child("llm"), c.llm);
  pipeline::read_config(root.child("pipeline"), c.pipeline);
  pipeline::read_config(root.child("daemon"), c.daemon);
  score::read_config(root.child("score"), c.score);
  KF_CHECK(reader->finish());
  std::vector<std::string> known = *looked_up;
  known.insert(known.end(), kExtraEnv.begin(), kExtraEnv.end());
  for (const auto& name : env_names ? *env_names : process_env_names()) {
    if (name.rfind("KFORGE_", 0) != 0) continue;
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    if (std::any_of(kExtraEnvPrefixes.begin(), kExtraEnvPrefixes.end(),
                    [&](const std::string& p) { return name.rfind(p, 0) == 0; }))
      continue;
    std::string w = name + " is set but is not a kforge variable, so it is ignored";
    auto near = nearest_names(name, known);
    if (!near.empty()) w += " (did you mean " + near.front() + "?)";
    c.warnings.push_back(std::move(w));
  }
  // Verifier samples can neither read nor write the daemon's own files: the database (with its
  // WAL, shared memory and lock files, and the directory holding them) and this configuration.
  if (!c.store.path.empty() && c.store.path != ":memory:") {
    for (const char* suffix : {"", "-wal", "-shm", "-journal", ".lock"})
      c.verifier.hide.push_back(c.store.path + suffix);
    auto dir = std::filesystem::absolute(c.store.path).parent_path();
    if (dir != dir.root_path()) c.verifier.hide.push_back(dir.string());
  }
  if (path) c.verifier.hide.push_back(std::filesystem::absolute(*path).string());
  return c;
}

}  // namespace kforge::app

namespace kforge::app {

Result<std::unique_ptr<store::Db>> open_store(const Config& c, IfMissing if_missing) {
  std::error_code ec;
  if (if_missing == IfMissing::refuse && c.store.path != ":memory:" &&
      !std::filesystem::exists(c.store.path, ec))
    return fail("io", "database " + c.store.path + " does not exist (store.path in " + c.source +
                          ", or KFORGE_DB); kforge import FILE creates it");
  return store::Db::open({.path = c.store.path, .busy_timeout_ms = c.store.busy_timeout_ms});
}

}  // namespace kforge::app
