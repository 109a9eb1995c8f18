#include "kforge/pipeline/prompt.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <set>

#include <yaml-cpp/yaml.h>

#include "kforge/core/fs.hpp"
#include "kforge/core/paths.hpp"
#include "kforge/core/sha256.hpp"
#include "kforge/store/vocabulary.hpp"

namespace kforge::pipeline {
namespace {

using store::StageKind;

constexpr const char* kSpecFile = "pipeline.yaml";

// The evidence blocks every evidence.md must define, and the placeholders they may use: the
// verdict's own, and one per quality flag a repair round is asked to fix (named as the flag:
// store/vocabulary.hpp; the verifier's own failures and a slow label have no block), and
// unstable_test_voided: an unstable test whose mutant runs the harness voided for a reason of
// its own (the kernel faulted in its bounds replay) with no control failed; unstable_test_lost: an
// unstable test whose mutant runs' process ended without their report, twice (issue 52).
using store::Flag;
constexpr std::array<std::string_view, 18> kEvidenceBlocks = {"verdict",
                                                              "failing_test",
                                                              "message",
                                                              "traceback",
                                                              "stderr",
                                                              "differential",
                                                              to_string(Flag::mutant_survived),
                                                              to_string(Flag::no_kernel_launch),
                                                              to_string(Flag::weak_test),
                                                              to_string(Flag::weak_inputs),
                                                              to_string(Flag::constant_output),
                                                              to_string(Flag::out_of_bounds),
                                                              to_string(Flag::cross_compile_failed),
                                                              to_string(Flag::tampered),
                                                              to_string(Flag::unstable_test),
                                                              "unstable_test_voided",
                                                              "unstable_test_lost",
                                                              to_string(Flag::kernel_not_used)};
const std::set<std::string>& evidence_placeholders() {
  static const std::set<std::string> s = {
      "verdict",     "detail",    "test",           "section",     "line",
      "source_line", "exception", "message",        "traceback",   "stderr",
      "survivors",   "targets",   "kernel_mutants", "bounds",      "differential",
      "tampering",   "controls",  "origin",         "void_reason", "lost"};
  return s;
}

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

// Whether a template has a schema beside it (<name>.schema.json) that its answers must meet.
enum class Schema { none, required };

Result<Template> load_template(const std::filesystem::path& dir, const std::string& version,
                               const std::string& name, Schema schema,
                               const std::set<std::string>& allowed,
                               StageKind kind = StageKind::code) {
  Template t;
  t.name = name;
  t.kind = kind;
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
  if (schema == Schema::required) {
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

Result<EvidenceTemplate> load_evidence(const std::filesystem::path& dir) {
  EvidenceTemplate e;
  e.path = dir / "evidence.md";
  KF_TRY(std::string text, read_file(e.path));
  e.sha256 = sha256_hex(text);
  const std::string marker = "<!-- evidence: ";
  std::size_t at = 0;
  int line = 0;
  std::string name;
  int name_line = 0;
  std::string body;
  auto flush = [&]() -> Status {
    if (name.empty()) return {};
    while (!body.empty() && (body.back() == '\n' || body.back() == ' ')) body.pop_back();
    for (const auto& f : scan_placeholders(body))
      if (evidence_placeholders().count(f.name) == 0)
        return fail("prompt",
                    e.path.string() + ":" + std::to_string(name_line + line_at(body, f.begin)) +
                        ": unknown placeholder {{" + f.name + "}} in block '" + name + "'");
    if (e.block(name) != nullptr)
      return fail("prompt", e.path.string() + ":" + std::to_string(name_line) + ": block '" + name +
                                "' is defined twice");
    e.blocks.emplace_back(name, body);
    return {};
  };
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    std::string l = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    ++line;
    if (l.rfind(marker, 0) == 0) {
      KF_CHECK(flush());
      std::size_t end = l.find(" -->", marker.size());
      if (end == std::string::npos)
        return fail("prompt", e.path.string() + ":" + std::to_string(line) +
                                  ": a block marker is \"<!-- evidence: NAME -->\"");
      name = l.substr(marker.size(), end - marker.size());
      name_line = line;
      body.clear();
    } else if (!name.empty()) {
      body += l + "\n";
    }
  }
  KF_CHECK(flush());
  for (auto b : kEvidenceBlocks)
    if (e.block(b) == nullptr)
      return fail("prompt", e.path.string() + ": no block '" + std::string(b) +
                                "' (a line \"<!-- evidence: " + std::string(b) + " -->\")");
  return e;
}

// One line of pipeline.yaml's `stages`.
struct StageLine {
  std::string name;
  StageKind kind;
  int line;
};

// prompts/<version>/pipeline.yaml: the stages in order, each with its kind. Errors name the file
// and line.
Result<std::vector<StageLine>> load_spec(const std::filesystem::path& file) {
  auto where = [&](const YAML::Node& n) {
    return file.string() + ":" + std::to_string(n.Mark().line + 1) + ": ";
  };
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    return fail("prompt", file.string() +
                              ": cannot be read (every version lists its stages and their kinds "
                              "there)");
  } catch (const YAML::Exception& e) {
    return fail("prompt", file.string() + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  const std::string shape =
      "stages: a list of {name: STAGE, kind: " + names_of(store::kStageKindNames) + "}";
  if (!root.IsMap() || !root["stages"] || !root["stages"].IsSequence() ||
      root["stages"].size() == 0)
    return fail("prompt", file.string() + ": expected " + shape);
  for (const auto& kv : root)
    if (kv.first.as<std::string>() != "stages")
      return fail("prompt", where(kv.first) + "unknown key '" + kv.first.as<std::string>() + "' (" +
                                shape + ")");
  std::vector<StageLine> out;
  for (const auto& item : root["stages"]) {
    if (!item.IsMap() || !item["name"] || !item["kind"] || item.size() != 2 ||
        !item["name"].IsScalar() || !item["kind"].IsScalar())
      return fail("prompt", where(item) + "expected {name: STAGE, kind: KIND}");
    StageLine l{item["name"].as<std::string>(), StageKind::code, item.Mark().line + 1};
    auto kind = store::parse_stage_kind(item["kind"].as<std::string>());
    if (!kind.ok()) return fail("prompt", where(item["kind"]) + kind.error().message);
    l.kind = *kind;
    // Not a name the prompts directory or jobs.stage gives another meaning.
    bool identifier =
        !l.name.empty() && l.name != "retry" && l.name != "evidence" && !store::step_of(l.name);
    for (char c : l.name)
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_') identifier = false;
    if (!identifier)
      return fail("prompt", where(item["name"]) + "'" + l.name +
                                "' is not a stage name (letters, digits and _; not retry, "
                                "evidence, verify or done)");
    for (const auto& o : out)
      if (o.name == l.name)
        return fail("prompt", where(item["name"]) + "stage '" + l.name + "' is listed twice");
    out.push_back(std::move(l));
  }
  // analysis*, code, then at most one repair (named kRepairStage).
  auto at = [&](const StageLine& l) { return file.string() + ":" + std::to_string(l.line) + ": "; };
  int code = 0;
  int repair = 0;
  for (const auto& l : out) {
    switch (l.kind) {
      case StageKind::analysis:
        if (code > 0)
          return fail("prompt", at(l) + "analysis stage '" + l.name +
                                    "' comes after the code stage (analysis stages come first)");
        break;
      case StageKind::code:
        if (++code > 1)
          return fail("prompt", at(l) + "a second code stage '" + l.name +
                                    "' (a pipeline has one: its answer is what the verifier runs)");
        break;
      case StageKind::repair:
        if (code == 0)
          return fail("prompt", at(l) + "repair stage '" + l.name + "' before the code stage");
        if (++repair > 1) return fail("prompt", at(l) + "a second repair stage '" + l.name + "'");
        if (l.name != store::kRepairStage)
          return fail("prompt", at(l) + "the repair stage is named '" +
                                    std::string(store::kRepairStage) + "', not '" + l.name +
                                    "' (the verifier sends jobs back to it by that name)");
        break;
    }
  }
  if (code == 0) return fail("prompt", file.string() + ": no stage of kind code");
  return out;
}

}  // namespace

const std::string* EvidenceTemplate::block(std::string_view name) const {
  for (const auto& [n, text] : blocks)
    if (n == name) return &text;
  return nullptr;
}

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
  if (repair && repair->name == name) return &*repair;
  return nullptr;
}

std::vector<const Template*> PipelineSpec::before(std::string_view name, StageKind kind) const {
  std::vector<const Template*> out;
  for (const auto& s : stages) {
    if (s.name == name) break;
    if (s.kind == kind) out.push_back(&s);
  }
  return out;
}

const Template* PipelineSpec::next(std::string_view name) const {
  for (std::size_t i = 0; i + 1 < stages.size(); ++i)
    if (stages[i].name == name) return &stages[i + 1];
  return nullptr;
}

nlohmann::ordered_json PipelineSpec::identities(bool with_repair) const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& s : stages)
    j[s.name] = {{"version", s.version},
                 {"sha256", s.sha256},
                 {"schema_sha256", s.schema_sha256},
                 {"kind", store::to_string(s.kind)}};
  j["retry"] = {{"version", retry.version}, {"sha256", retry.sha256}};
  if (with_repair && repair)
    j[repair->name] = {{"version", repair->version},
                       {"sha256", repair->sha256},
                       {"schema_sha256", repair->schema_sha256},
                       {"kind", store::to_string(repair->kind)},
                       {"evidence_sha256", evidence.sha256}};
  return j;
}

std::string PipelineSpec::mismatch(const nlohmann::json& recorded) const {
  const std::string repair_name(store::kRepairStage);
  bool with_repair = recorded.is_object() && recorded.contains(repair_name);
  nlohmann::ordered_json now = identities(with_repair);
  auto file_of = [&](const std::string& key) {
    if (key == retry.name) return "prompts/" + retry.name + ".md";
    return "prompts/" + version + "/" + key + ".md";
  };
  if (with_repair && !repair) return file_of(repair_name) + " no longer exists";
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
    if (id.contains("evidence_sha256") &&
        field("evidence_sha256") != id["evidence_sha256"].get<std::string>())
      return "prompts/evidence.md changed since the run was created";
    // A run recorded before stages had kinds has none; one that has must match.
    if (id.contains("kind") && !field("kind").empty() &&
        field("kind") != id["kind"].get<std::string>())
      return "prompts/" + version + "/" + kSpecFile + ": stage '" + key + "' is now of kind " +
             id["kind"].get<std::string>() + ", the run was created with kind " + field("kind");
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
  KF_TRY(Template retry, load_template(dir, "common", "retry", Schema::none, {"reason"}));
  std::error_code ec;
  std::optional<EvidenceTemplate> evidence;  // read once, for the first version with repair.md
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
    if (md.empty() && !std::filesystem::exists(sub / kSpecFile)) continue;
    KF_TRY(auto lines, load_spec(sub / kSpecFile));
    for (const auto& m : md)
      if (std::none_of(lines.begin(), lines.end(), [&](const StageLine& l) { return l.name == m; }))
        return fail("prompt", (sub / (m + ".md")).string() + ": not a stage of " +
                                  (sub / kSpecFile).string());
    PipelineSpec spec;
    spec.version = version;
    spec.retry = retry;
    std::set<std::string> allowed = {"code", "description_1", "description_2", "kernel_signatures",
                                     "key"};
    for (const auto& l : lines) {
      if (l.kind == StageKind::repair) {
        for (const char* p :
             {"kernel_wrapper", "unitest_code", "evidence", "round", "repair_rounds"})
          allowed.insert(p);
        KF_TRY(Template t, load_template(dir, version, l.name, Schema::required, allowed, l.kind));
        spec.repair = std::move(t);
        if (!evidence) {
          KF_TRY(EvidenceTemplate e, load_evidence(dir));
          evidence = std::move(e);
        }
        spec.evidence = *evidence;
        continue;
      }
      KF_TRY(Template t, load_template(dir, version, l.name, Schema::required, allowed, l.kind));
      spec.stages.push_back(std::move(t));
      if (l.kind == StageKind::analysis) allowed.insert("analysis");
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

std::string PromptLibrary::dictionary() const {
  std::string out;
  auto add = [&](const std::string& text) {
    std::string s = nlohmann::json(text).dump();  // as a request's JSON body carries it
    out.append(s, 1, s.size() - 2);
  };
  for (const auto& [version, spec] : specs_) {
    for (const auto& t : spec.stages) add(t.text);
    if (spec.repair) add(spec.repair->text);
    for (const auto& [name, text] : spec.evidence.blocks) add(text);
  }
  if (!specs_.empty()) add(specs_.begin()->second.retry.text);
  return out;
}

std::vector<std::string> PromptLibrary::versions() const {
  std::vector<std::string> v;
  for (const auto& [k, s] : specs_) v.push_back(k);
  return v;
}

}  // namespace kforge::pipeline
