#include "kforge/pipeline/prompt.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include "kforge/core/fs.hpp"
#include "kforge/core/paths.hpp"
#include "kforge/core/sha256.hpp"

namespace kforge::pipeline {
namespace {

constexpr std::array<std::string_view, 2> kStageOrder = {"analyze", "generate"};

struct Found {
  std::string name;
  std::size_t begin;  // offset of "{{"
  std::size_t end;    // one past "}}"
};

std::vector<Found> scan_placeholders(std::string_view t) {
  std::vector<Found> out;
  std::size_t i = 0;
  while ((i = t.find("{{", i)) != std::string_view::npos) {
    std::size_t j = i + 2;
    while (j < t.size() && t[j] == ' ') ++j;
    std::size_t name_begin = j;
    while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) != 0 || t[j] == '_'))
      ++j;
    std::size_t name_end = j;
    while (j < t.size() && t[j] == ' ') ++j;
    if (name_end > name_begin && t.substr(j, 2) == "}}") {
      out.push_back(Found{std::string(t.substr(name_begin, name_end - name_begin)), i, j + 2});
      i = j + 2;
    } else {
      ++i;
    }
  }
  return out;
}

int line_at(std::string_view t, std::size_t offset) {
  return 1 + static_cast<int>(std::count(t.begin(), t.begin() + static_cast<long>(offset), '\n'));
}

std::string short_sha(const std::string& s) {
  return s.size() > 12 ? s.substr(0, 12) : s;
}

Result<Template> load_template(const std::filesystem::path& dir, const std::string& version,
                               const std::string& name, bool with_schema,
                               const std::set<std::string>& allowed) {
  Template t;
  t.name = name;
  t.version = version;
  t.path = version == "common" ? dir / (name + ".md") : dir / version / (name + ".md");
  KF_TRY(t.text, read_file(t.path));
  t.sha256 = sha256_hex(t.text);
  for (const auto& f : scan_placeholders(t.text)) {
    if (allowed.count(f.name) == 0) {
      std::string known;
      for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
      return fail("prompt", t.path.string() + ":" + std::to_string(line_at(t.text, f.begin)) +
                                ": unknown placeholder {{" + f.name + "}} (this template may use " +
                                known + ")");
    }
    if (std::find(t.placeholders.begin(), t.placeholders.end(), f.name) == t.placeholders.end())
      t.placeholders.push_back(f.name);
  }
  if (with_schema) {
    auto schema_path = dir / version / (name + ".schema.json");
    auto bytes = read_file(schema_path);
    if (!bytes.ok())
      return fail("prompt", t.path.string() + ": its output schema " + schema_path.string() +
                                " cannot be read: " + bytes.error().message);
    t.schema = nlohmann::json::parse(*bytes, nullptr, false);
    if (t.schema.is_discarded() || !t.schema.is_object())
      return fail("prompt", schema_path.string() + ": not a JSON object (a JSON schema)");
    t.schema_sha256 = sha256_hex(*bytes);
  }
  return t;
}

}  // namespace

std::vector<std::string> placeholders_of(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& f : scan_placeholders(text))
    if (std::find(out.begin(), out.end(), f.name) == out.end()) out.push_back(f.name);
  return out;
}

Result<std::string> render(std::string_view text, const std::map<std::string, std::string>& values,
                           std::string_view what) {
  std::string out;
  out.reserve(text.size() + 8192);
  std::size_t at = 0;
  for (const auto& f : scan_placeholders(text)) {
    auto it = values.find(f.name);
    if (it == values.end())
      return fail("prompt", std::string(what) + ":" + std::to_string(line_at(text, f.begin)) +
                                ": no value for {{" + f.name + "}}");
    out.append(text.substr(at, f.begin - at));
    out.append(it->second);
    at = f.end;
  }
  out.append(text.substr(at));
  return out;
}

const Template* PipelineSpec::stage(std::string_view name) const {
  for (const auto& s : stages)
    if (s.name == name) return &s;
  return nullptr;
}

const Template* PipelineSpec::next(std::string_view name) const {
  for (std::size_t i = 0; i + 1 < stages.size(); ++i)
    if (stages[i].name == name) return &stages[i + 1];
  return nullptr;
}

nlohmann::json PipelineSpec::identities() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& s : stages)
    j[s.name] = {{"version", s.version}, {"sha256", s.sha256}, {"schema_sha256", s.schema_sha256}};
  j["retry"] = {{"version", retry.version}, {"sha256", retry.sha256}};
  return j;
}

std::string PipelineSpec::mismatch(const nlohmann::json& recorded) const {
  nlohmann::json now = identities();
  auto file_of = [&](const std::string& key) {
    if (key == "retry") return std::string("prompts/retry.md");
    return "prompts/" + version + "/" + key + ".md";
  };
  for (const auto& [key, id] : now.items()) {
    if (!recorded.is_object() || !recorded.contains(key))
      return file_of(key) + " was not part of the run when it was created";
    const auto& r = recorded[key];
    auto field = [&](const char* f) {
      return r.is_object() && r.contains(f) && r[f].is_string() ? r[f].get<std::string>()
                                                                : std::string();
    };
    if (field("version") != id["version"].get<std::string>())
      return file_of(key) + ": the run was created with version '" + field("version") + "'";
    if (field("sha256") != id["sha256"].get<std::string>())
      return file_of(key) + " changed since the run was created (sha256 " +
             short_sha(field("sha256")) + "... now " + short_sha(id["sha256"].get<std::string>()) +
             "...)";
    if (id.contains("schema_sha256") &&
        field("schema_sha256") != id["schema_sha256"].get<std::string>())
      return "prompts/" + version + "/" + key + ".schema.json changed since the run was created";
  }
  if (recorded.is_object())
    for (const auto& [key, id] : recorded.items())
      if (!now.contains(key)) return file_of(key) + " no longer exists";
  return "";
}

Result<std::filesystem::path> PromptLibrary::locate(const std::string& configured) {
  std::error_code ec;
  if (!configured.empty()) {
    if (!std::filesystem::is_directory(configured, ec))
      return fail("config", "pipeline.prompts_dir: '" + configured + "' is not a directory");
    return std::filesystem::path(configured);
  }
  auto data = find_data_dir("prompts/retry.md");
  if (!data)
    return fail("config",
                "cannot find the prompts directory (set pipeline.prompts_dir or KFORGE_DATA_DIR)");
  return *data / "prompts";
}

Result<PromptLibrary> PromptLibrary::load(const std::filesystem::path& dir) {
  PromptLibrary lib;
  lib.dir_ = dir;
  KF_TRY(Template retry, load_template(dir, "common", "retry", false, {"reason"}));
  std::error_code ec;
  std::vector<std::filesystem::path> subdirs;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.is_directory()) subdirs.push_back(e.path());
  if (ec) return fail("io", dir.string() + ": " + ec.message());
  std::sort(subdirs.begin(), subdirs.end());
  for (const auto& sub : subdirs) {
    std::string version = sub.filename().string();
    std::set<std::string> md;
    for (const auto& e : std::filesystem::directory_iterator(sub, ec))
      if (e.path().extension() == ".md") md.insert(e.path().stem().string());
    if (md.empty()) continue;
    for (const auto& m : md)
      if (std::find(kStageOrder.begin(), kStageOrder.end(), m) == kStageOrder.end())
        return fail("prompt", (sub / (m + ".md")).string() +
                                  ": unknown stage (a version holds analyze.md and generate.md)");
    if (md.count("generate") == 0)
      return fail("prompt", sub.string() + ": no generate.md (every version ends with generate)");
    PipelineSpec spec;
    spec.version = version;
    spec.retry = retry;
    std::set<std::string> allowed = {"code", "description_1", "description_2", "kernel_signatures",
                                     "key"};
    for (auto stage : kStageOrder) {
      std::string s(stage);
      if (md.count(s) == 0) continue;
      KF_TRY(Template t, load_template(dir, version, s, true, allowed));
      spec.stages.push_back(std::move(t));
      if (s == "analyze") allowed.insert("analysis");
    }
    lib.specs_.emplace(version, std::move(spec));
  }
  if (lib.specs_.empty()) return fail("prompt", dir.string() + ": no prompt versions found");
  return lib;
}

Result<const PipelineSpec*> PromptLibrary::pipeline(const std::string& version) const {
  auto it = specs_.find(version);
  if (it == specs_.end()) {
    std::string known;
    for (const auto& v : versions()) known += (known.empty() ? "" : ", ") + v;
    return fail("usage", "unknown pipeline '" + version + "' (prompts in " + dir_.string() +
                             " define: " + known + ")");
  }
  return &it->second;
}

std::vector<std::string> PromptLibrary::versions() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : specs_) v.push_back(k);
  return v;
}

}  // namespace kforge::pipeline
