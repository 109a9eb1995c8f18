#pragma once
// Strict YAML configuration reading.
//
// Each library owns its section: it declares every key it knows with ConfigNode::get(), which
// type-checks the value and applies the environment override KFORGE_<SECTION>_<KEY> (dots become
// underscores, upper case). After all sections have read, ConfigReader::finish() reports the
// first problem as "FILE:LINE: KEY: message": a wrong type, or a key no section declared.
//
// Not thread-safe; used once at start-up (and on SIGHUP, with a fresh reader).

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "kforge/core/enum_names.hpp"
#include "kforge/core/result.hpp"

namespace kforge {

using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Looks names up in the process environment.
EnvLookup process_env();

class ConfigReader;

class ConfigNode {
 public:
  // Each get() leaves `out` unchanged when the key is absent from both file and environment.
  void get(std::string_view key, std::string& out);
  void get(std::string_view key, std::int64_t& out);
  void get(std::string_view key, int& out);
  void get(std::string_view key, double& out);
  void get(std::string_view key, bool& out);
  void get(std::string_view key, std::vector<std::string>& out);
  void get(std::string_view key, std::map<std::string, std::string>& out);
  // A free-form value (mapping, sequence or scalar) converted to JSON; the whole subtree counts
  // as declared. Absent: out unchanged.
  void get_json(std::string_view key, nlohmann::json& out);
  // A sub-mapping. Absent: an empty node whose gets only consult the environment.
  ConfigNode child(std::string_view key);

  // Range-checked reads: get(), then the value (read, or the default when absent) is checked
  // and an error recorded at the key's line: "must be >= MIN", "must be > BOUND", "must be
  // between LO and HI", each followed by " (NOTE)" when a note is given.
  void get_at_least(std::string_view key, int& out, int min, std::string_view note = {});
  void get_at_least(std::string_view key, std::int64_t& out, std::int64_t min,
                    std::string_view note = {});
  void get_at_least(std::string_view key, double& out, double min, std::string_view note = {});
  void get_above(std::string_view key, double& out, double bound, std::string_view note = {});
  void get_between(std::string_view key, int& out, int lo, int hi, std::string_view note = {});
  void get_between(std::string_view key, double& out, double lo, double hi,
                   std::string_view note = {});

  // A closed set of names read into an enum through its table (enum_names.hpp): absent, `out`
  // is unchanged; a name not in the table is an error at the key's line, "'NAME' is not one of
  // a, b, c".
  template <class E, std::size_t N>
  void get_enum(std::string_view key, E& out, const EnumName<E> (&names)[N]) {
    std::string s(name_of(names, out));
    get(key, s);
    if (auto v = value_of(names, s))
      out = *v;
    else
      invalid(key, "'" + s + "' is not one of " + names_of(names));
  }

  // Records a semantic error (e.g. a value out of range) at this key's line.
  void invalid(std::string_view key, const std::string& message);

  const std::string& path() const { return path_; }

 private:
  friend class ConfigReader;
  ConfigNode(ConfigReader* r, YAML::Node n, std::string path)
      : reader_(r), node_(std::move(n)), path_(std::move(path)) {}
  std::string key_path(std::string_view key) const;
  std::optional<YAML::Node> lookup(std::string_view key);
  std::optional<std::string> env_for(std::string_view key);
  template <class T>
  void get_scalar(std::string_view key, T& out, const char* type_name);

  ConfigReader* reader_;
  YAML::Node node_;
  std::string path_;
};

class ConfigReader {
 public:
  // Parses a YAML file. A syntax error is reported with its line.
  static Result<std::unique_ptr<ConfigReader>> load_file(const std::filesystem::path& file,
                                                         EnvLookup env = process_env());
  // Parses YAML text (file names it in messages).
  static Result<std::unique_ptr<ConfigReader>> load_string(const std::string& text,
                                                           const std::string& file,
                                                           EnvLookup env = process_env());

  ConfigNode root();
  // The first error, or an unknown key, as "FILE:LINE: KEY: message" (kind "config").
  Status finish();
  const std::string& file() const { return file_; }

 private:
  friend class ConfigNode;
  ConfigReader(YAML::Node root, std::string file, EnvLookup env)
      : root_(std::move(root)), file_(std::move(file)), env_(std::move(env)) {}
  void error_at(const YAML::Node* n, const std::string& key_path, const std::string& message);
  void check_unknown(const YAML::Node& n, const std::string& prefix);

  YAML::Node root_;
  std::string file_;
  EnvLookup env_;
  std::vector<std::string> declared_;        // key paths read by some section
  std::vector<std::string> declared_trees_;  // key paths whose whole subtree is free-form
  std::vector<std::string> errors_;
};

// A configuration boolean as the reader takes one, from the file or the environment: true, yes,
// on, 1 or false, no, off, 0, in any case. False (out unchanged) for anything else.
bool parse_bool(const std::string& s, bool& out);

// The environment variable that overrides a key path: "llm.max_in_flight" ->
// KFORGE_LLM_MAX_IN_FLIGHT.
std::string env_name_for(std::string_view key_path);

// Converts a YAML node to JSON (scalars typed as YAML 1.2 core schema would).
nlohmann::json yaml_to_json(const YAML::Node& n);

}  // namespace kforge
