#pragma once
// Prompts: versioned template files with {{placeholders}}, each stage's output schema beside it.
//
//   prompts/<version>/pipeline.yaml         the version's stages, in order, each with its kind:
//                                             stages:
//                                               - {name: analyze, kind: analysis}
//                                               - {name: generate, kind: code}
//                                               - {name: repair, kind: repair}
//   prompts/<version>/<stage>.md            a stage's template
//   prompts/<version>/<stage>.schema.json   the JSON schema the stage's answer must satisfy
//   prompts/retry.md                        appended after an answer that did not parse or was
//                                           rejected, with {{reason}}
//   prompts/evidence.md                     the verifier's evidence for a repair stage, in blocks
//
// A stage's kind (store::StageKind) says what its answer holds, and so what the scheduler checks
// and what comes next: `analysis` stages come first (their answers are the {{analysis}} of the
// stages after them), then one `code` stage (kernel_wrapper and unitest_code, which go to the
// verifier), and at most one `repair` stage, named `repair` (store::kRepairStage), which a job
// reaches after a verdict that is not verified. A new stage is a template, a schema and a line in
// pipeline.yaml; nothing in C++ names stages.
//
// A prompt's identity is its version name plus the SHA-256 of its text. A run records the
// identities (and kinds) of every template it uses when it is created; a daemon whose templates
// differ refuses to go on with that run (a tagged output set never mixes prompt texts).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"
#include "kforge/store/states.hpp"

namespace kforge::pipeline {

// The placeholders a template may use: code, description_1, description_2, kernel_signatures,
// key, analysis (only in a stage after an analysis stage: their answers' fields in one JSON
// object) and reason (only in retry.md). A repair stage may also use kernel_wrapper and
// unitest_code (the previous round's), evidence, round and repair_rounds.
struct Template {
  std::string name;                                // the stage's name in pipeline.yaml, or "retry"
  store::StageKind kind = store::StageKind::code;  // (retry.md: unused)
  std::string version;                             // "v2", or "common" for retry.md
  std::filesystem::path path;
  std::string text;
  std::string sha256;  // of text
  std::vector<std::string> placeholders;
  nlohmann::json schema;      // null for retry.md
  std::string schema_sha256;  // of the schema file's bytes; empty for retry.md
};

// prompts/evidence.md: named blocks of text with placeholders, each used when the verdict has
// that piece of evidence (see repair.hpp). A block starts with a line "<!-- evidence: NAME -->".
struct EvidenceTemplate {
  std::filesystem::path path;
  std::string sha256;                                       // of the file's text
  std::vector<std::pair<std::string, std::string>> blocks;  // name, text; in file order
  const std::string* block(std::string_view name) const;
};

// One pipeline version: its stages before the verifier in order (analysis stages, then the code
// stage), the shared retry template, and the repair stage when the version has one.
struct PipelineSpec {
  std::string version;
  std::vector<Template> stages;
  Template retry;
  std::optional<Template> repair;  // the stage of kind repair
  EvidenceTemplate evidence;       // set when repair is

  // The stage of that name, the repair stage included; nullptr when there is none.
  const Template* stage(std::string_view name) const;
  // The stage after `name` before the verifier, or nullptr when `name` is the code stage.
  const Template* next(std::string_view name) const;
  const std::string& first_stage() const { return stages.front().name; }
  // The stages of a kind before `name` (all of them when `name` is not a stage before the
  // verifier), in order.
  std::vector<const Template*> before(std::string_view name, store::StageKind kind) const;
  // {"analyze": {"version": "v2", "sha256": "...", "schema_sha256": "...", "kind": "analysis"},
  //  ..., "retry": {"version": "common", "sha256": "..."}}: what a run records. with_repair (a
  //  run with repair rounds) adds "repair": {"version", "sha256", "schema_sha256", "kind",
  //  "evidence_sha256"}; the version must have a repair stage then. The stages in the spec's
  //  order, which the run keeps (its analyses are read back in that order, run_prompts.hpp).
  nlohmann::ordered_json identities(bool with_repair = false) const;
  // "" when `recorded` (a run's prompts_json) matches; else what changed, e.g.
  // "prompts/v2/analyze.md changed since the run was created (sha256 1a2b3c4d... now 5e6f...)".
  // The repair template is checked when the run recorded it.
  std::string mismatch(const nlohmann::json& recorded) const;
};

class PromptLibrary {
 public:
  // Reads every version directory under `dir`. Errors name the file (and line): a missing or
  // malformed pipeline.yaml (an unknown kind, stages out of order, a template it does not name),
  // a missing schema, a schema that is not JSON, an unknown placeholder.
  static Result<PromptLibrary> load(const std::filesystem::path& dir);
  // The prompts directory: `configured` if not empty, else the data directory's prompts/.
  static Result<std::filesystem::path> locate(const std::string& configured);

  // Errors: kind "usage", naming the versions that exist.
  Result<const PipelineSpec*> pipeline(const std::string& version) const;
  std::vector<std::string> versions() const;
  // Every template's text as a request's JSON body carries it (escaped), concatenated: the
  // dictionary the store compresses requests against (store::use_dictionary), where the
  // templates are most of every request's bytes.
  std::string dictionary() const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::map<std::string, PipelineSpec> specs_;
};

// The {{name}} placeholders of a template, in order of first use. A placeholder is `{{`, an
// identifier (letters, digits, '_'), `}}`, with optional spaces inside the braces.
std::vector<std::string> placeholders_of(std::string_view text);

// Replaces each placeholder by its value. Values are inserted verbatim and never scanned again
// (code containing "{{code}}" stays as it is). Error (kind "prompt"): a placeholder without a
// value, naming `what`.
Result<std::string> render(std::string_view text, const std::map<std::string, std::string>& values,
                           std::string_view what);

}  // namespace kforge::pipeline
