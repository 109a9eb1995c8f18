#include "kforge/core/config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "kforge/core/fs.hpp"
#include "kforge/core/names.hpp"

namespace kforge {
namespace {

bool parse_int(const std::string& s, std::int64_t& out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto r = std::from_chars(b, e, out);
  return r.ec == std::errc() && r.ptr == e && !s.empty();
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      return "a mapping";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Null:
      return "null";
    default:
      return "'" + n.Scalar() + "'";
  }
}

bool has_prefix(const std::string& path, const std::string& prefix) {
  return path == prefix ||
         (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
          path[prefix.size()] == '.');
}

}  // namespace

bool parse_bool(const std::string& s, bool& out) {
  std::string l = s;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  if (l == "true" || l == "yes" || l == "on" || l == "1") {
    out = true;
    return true;
  }
  if (l == "false" || l == "no" || l == "off" || l == "0") {
    out = false;
    return true;
  }
  return false;
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

std::string env_name_for(std::string_view key_path) {
  std::string out = "KFORGE_";
  for (char c : key_path) {
    out.push_back(c == '.' || c == '-'
                      ? '_'
                      : static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  return out;
}

nlohmann::json yaml_to_json(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      nlohmann::json o = nlohmann::json::object();
      for (const auto& kv : n) o[kv.first.Scalar()] = yaml_to_json(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      nlohmann::json a = nlohmann::json::array();
      for (const auto& v : n) a.push_back(yaml_to_json(v));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted
      std::int64_t i;
      double d;
      bool b;
      if (parse_int(s, i)) return i;
      if (parse_double(s, d)) return d;
      if (s == "true" || s == "false") return parse_bool(s, b) && b;
      if (s == "null" || s == "~") return nullptr;
      return s;
    }
    default:
      return nullptr;
  }
}

// --- ConfigNode --------------------------------------------------------------

std::string ConfigNode::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::optional<YAML::Node> ConfigNode::lookup(std::string_view key) {
  reader_->declared_.push_back(key_path(key));
  if (!node_ || !node_.IsMap()) return std::nullopt;
  YAML::Node v = node_[std::string(key)];
  if (!v.IsDefined()) return std::nullopt;
  return v;
}

std::optional<std::string> ConfigNode::env_for(std::string_view key) {
  return reader_->env_(env_name_for(key_path(key)));
}

template <class T>
void ConfigNode::get_scalar(std::string_view key, T& out, const char* type_name) {
  auto convert = [&](const std::string& s, T& dst) -> bool {
    if constexpr (std::is_same_v<T, std::string>) {
      dst = s;
      return true;
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
      return parse_int(s, dst);
    } else if constexpr (std::is_same_v<T, double>) {
      return parse_double(s, dst);
    } else {
      return parse_bool(s, dst);
    }
  };
  if (auto n = lookup(key)) {
    if (!n->IsScalar()) {
      reader_->error_at(&*n, key_path(key),
                        std::string("expected ") + type_name + ", got " + describe(*n));
    } else {
      T v{};
      if (convert(n->Scalar(), v))
        out = v;
      else
        reader_->error_at(&*n, key_path(key),
                          std::string("expected ") + type_name + ", got " + describe(*n));
    }
  }
  if (auto e = env_for(key)) {
    T v{};
    if (convert(*e, v))
      out = v;
    else
      reader_->errors_.push_back("environment " + env_name_for(key_path(key)) + ": expected " +
                                 type_name + ", got '" + *e + "'");
  }
}

void ConfigNode::get(std::string_view key, std::string& out) {
  get_scalar(key, out, "a string");
}
void ConfigNode::get(std::string_view key, std::int64_t& out) {
  get_scalar(key, out, "an integer");
}
void ConfigNode::get(std::string_view key, int& out) {
  std::int64_t v = out;
  get_scalar(key, v, "an integer");
  out = static_cast<int>(v);
}
void ConfigNode::get(std::string_view key, double& out) {
  get_scalar(key, out, "a number");
}
void ConfigNode::get(std::string_view key, bool& out) {
  get_scalar(key, out, "a boolean");
}

void ConfigNode::get(std::string_view key, std::vector<std::string>& out) {
  if (auto n = lookup(key)) {
    if (n->IsNull()) {
      out.clear();
    } else if (!n->IsSequence()) {
      reader_->error_at(&*n, key_path(key), "expected a list of strings, got " + describe(*n));
    } else {
      std::vector<std::string> v;
      for (const auto& item : *n) {
        if (!item.IsScalar()) {
          reader_->error_at(&item, key_path(key), "expected a string, got " + describe(item));
          return;
        }
        v.push_back(item.Scalar());
      }
      out = std::move(v);
    }
  }
  if (auto e = env_for(key)) {  // comma-separated
    std::vector<std::string> v;
    std::string cur;
    for (char c : *e) {
      if (c == ',') {
        if (!cur.empty()) v.push_back(cur);
        cur.clear();
      } else {
        cur.push_back(c);
      }
    }
    if (!cur.empty()) v.push_back(cur);
    out = std::move(v);
  }
}

void ConfigNode::get(std::string_view key, std::map<std::string, std::string>& out) {
  reader_->declared_trees_.push_back(key_path(key));
  if (auto n = lookup(key)) {
    if (n->IsNull()) {
      out.clear();
    } else if (!n->IsMap()) {
      reader_->error_at(&*n, key_path(key), "expected a mapping of strings, got " + describe(*n));
    } else {
      std::map<std::string, std::string> m;
      for (const auto& kv : *n) {
        if (!kv.second.IsScalar()) {
          reader_->error_at(&kv.second, key_path(key) + "." + kv.first.Scalar(),
                            "expected a string, got " + describe(kv.second));
          return;
        }
        m[kv.first.Scalar()] = kv.second.Scalar();
      }
      out = std::move(m);
    }
  }
  if (auto e = env_for(key)) {  // a JSON object of strings, e.g. {"X-Team": "a"}
    auto j = nlohmann::json::parse(*e, nullptr, false);
    std::map<std::string, std::string> m;
    bool ok = j.is_object();
    if (ok)
      for (const auto& [k, v] : j.items()) {
        if (!v.is_string()) {
          ok = false;
          break;
        }
        m[k] = v.get<std::string>();
      }
    if (!ok)
      reader_->errors_.push_back("environment " + env_name_for(key_path(key)) +
                                 ": expected a JSON object of strings");
    else
      out = std::move(m);
  }
}

void ConfigNode::get_json(std::string_view key, nlohmann::json& out) {
  reader_->declared_trees_.push_back(key_path(key));
  if (auto n = lookup(key)) out = yaml_to_json(*n);
  if (auto e = env_for(key)) {
    auto j = nlohmann::json::parse(*e, nullptr, false);
    if (j.is_discarded())
      reader_->errors_.push_back("environment " + env_name_for(key_path(key)) + ": not valid JSON");
    else
      out = std::move(j);
  }
}

ConfigNode ConfigNode::child(std::string_view key) {
  auto n = lookup(key);
  if (n && !n->IsMap() && !n->IsNull()) {
    reader_->error_at(&*n, key_path(key), "expected a mapping, got " + describe(*n));
    return ConfigNode(reader_, YAML::Node(), key_path(key));
  }
  return ConfigNode(reader_, n ? *n : YAML::Node(), key_path(key));
}

namespace {

template <class T>
std::string bound_text(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  } else {
    return std::to_string(v);
  }
}

std::string with_note(std::string msg, std::string_view note) {
  if (!note.empty()) msg += " (" + std::string(note) + ")";
  return msg;
}

}  // namespace

void ConfigNode::get_at_least(std::string_view key, int& out, int min, std::string_view note) {
  get(key, out);
  if (out < min) invalid(key, with_note("must be >= " + bound_text(min), note));
}
void ConfigNode::get_at_least(std::string_view key, std::int64_t& out, std::int64_t min,
                              std::string_view note) {
  get(key, out);
  if (out < min) invalid(key, with_note("must be >= " + bound_text(min), note));
}
void ConfigNode::get_at_least(std::string_view key, double& out, double min,
                              std::string_view note) {
  get(key, out);
  if (!(out >= min)) invalid(key, with_note("must be >= " + bound_text(min), note));
}
void ConfigNode::get_above(std::string_view key, double& out, double bound, std::string_view note) {
  get(key, out);
  if (!(out > bound)) invalid(key, with_note("must be > " + bound_text(bound), note));
}
void ConfigNode::get_between(std::string_view key, int& out, int lo, int hi,
                             std::string_view note) {
  get(key, out);
  if (out < lo || out > hi)
    invalid(key, with_note("must be between " + bound_text(lo) + " and " + bound_text(hi), note));
}
void ConfigNode::get_between(std::string_view key, double& out, double lo, double hi,
                             std::string_view note) {
  get(key, out);
  if (!(out >= lo && out <= hi))
    invalid(key, with_note("must be between " + bound_text(lo) + " and " + bound_text(hi), note));
}

void ConfigNode::invalid(std::string_view key, const std::string& message) {
  std::optional<YAML::Node> n;
  if (node_ && node_.IsMap() && node_[std::string(key)].IsDefined()) n = node_[std::string(key)];
  reader_->error_at(n ? &*n : nullptr, key_path(key), message);
}

// --- ConfigReader ------------------------------------------------------------

Result<std::unique_ptr<ConfigReader>> ConfigReader::load_string(const std::string& text,
                                                                const std::string& file,
                                                                EnvLookup env) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return fail("config", file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (root.IsDefined() && !root.IsNull() && !root.IsMap())
    return fail("config", file + ":1: the top level must be a mapping");
  return std::unique_ptr<ConfigReader>(new ConfigReader(root, file, std::move(env)));
}

Result<std::unique_ptr<ConfigReader>> ConfigReader::load_file(const std::filesystem::path& file,
                                                              EnvLookup env) {
  KF_TRY(std::string text, read_file(file));
  return load_string(text, file.string(), std::move(env));
}

ConfigNode ConfigReader::root() {
  return ConfigNode(this, root_, "");
}

void ConfigReader::error_at(const YAML::Node* n, const std::string& key_path,
                            const std::string& message) {
  std::string where = file_;
  if (n != nullptr && n->Mark().line >= 0) where += ":" + std::to_string(n->Mark().line + 1);
  errors_.push_back(where + ": " + key_path + ": " + message);
}

void ConfigReader::check_unknown(const YAML::Node& n, const std::string& prefix) {
  if (!n.IsMap()) return;
  for (const auto& kv : n) {
    std::string path = prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    bool tree = std::any_of(declared_trees_.begin(), declared_trees_.end(),
                            [&](const std::string& t) { return has_prefix(path, t); });
    if (tree) continue;
    bool known = std::find(declared_.begin(), declared_.end(), path) != declared_.end();
    if (!known) {
      // The nearest key of the same section, as the environment's names get.
      std::vector<std::string> siblings;
      const std::string head = prefix.empty() ? "" : prefix + ".";
      for (const auto* list : {&declared_, &declared_trees_})
        for (const auto& d : *list) {
          if (d.size() <= head.size() || d.compare(0, head.size(), head) != 0) continue;
          std::string name = d.substr(head.size(), d.find('.', head.size()) - head.size());
          if (std::find(siblings.begin(), siblings.end(), name) == siblings.end())
            siblings.push_back(name);
        }
      auto near = nearest_names(kv.first.Scalar(), siblings);
      errors_.push_back(file_ + ":" + std::to_string(kv.first.Mark().line + 1) + ": " + path +
                        ": unknown key" +
                        (near.empty() ? "" : " (did you mean " + head + near.front() + "?)"));
      continue;
    }
    check_unknown(kv.second, path);
  }
}

Status ConfigReader::finish() {
  check_unknown(root_, "");
  if (errors_.empty()) return {};
  if (errors_.size() == 1) return fail("config", errors_.front());
  // Every one, a line each: a file with three mistakes is fixed in one go.
  std::string msg = std::to_string(errors_.size()) + " errors in the configuration:";
  for (const auto& e : errors_) msg += "\n  " + e;
  return fail("config", msg);
}

}  // namespace kforge
