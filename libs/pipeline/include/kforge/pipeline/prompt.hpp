#pragma once
// Prompts: versioned template files with {{placeholders}}, each stage's output schema beside it.
//
//   prompts/<version>/<stage>.md            the template (stages: analyze, generate)
//   prompts/<version>/<stage>.schema.json   the JSON schema the stage's answer must satisfy
//   prompts/<version>/repair.md             optional: the repair stage, after a verdict that is
//                                           not verified (with repair.schema.json)
//   prompts/retry.md                        appended after an answer that did not parse or was
//                                           rejected, with {{reason}}
//   prompts/evidence.md                     the verifier's evidence for repair.md, in blocks
//
// A prompt's identity is its version name plus the SHA-256 of its text. A run records the
// identities of every template it uses when it is created; a daemon whose templates differ
// refuses to go on with that run (a tagged output set never mixes prompt texts).

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/core/result.hpp"

namespace kforge::pipeline {

// The placeholders a template may use: code, description_1, description_2, kernel_signatures,
// key, analysis (only in a stage after analyze) and reason (only in retry.md). repair.md may also
// use kernel_wrapper and unitest_code (the previous round's), evidence, round and repair_rounds.
struct Template {
  std::string name;     // "analyze", "generate", "retry"
  std::string version;  // "v2", or "common" for retry.md
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

// One pipeline version: its stages in order, the shared retry template, and the repair stage
// when the version has one.
struct PipelineSpec {
  std::string version;
  std::vector<Template> stages;
  Template retry;
  std::optional<Template> repair;  // prompts/<version>/repair.md
  EvidenceTemplate evidence;       // set when repair is

  const Template* stage(std::string_view name) const;
  // The stage after `name`, or nullptr when `name` is the last.
  const Template* next(std::string_view name) const;
  const std::string& first_stage() const { return stages.front().name; }
  // {"analyze": {"version": "v2", "sha256": "...", "schema_sha256": "..."}, ...,
  //  "retry": {"version": "common", "sha256": "..."}}: what a run records. with_repair (a run
  //  with repair rounds) adds "repair": {"version", "sha256", "schema_sha256",
  //  "evidence_sha256"}; the version must have a repair template then.
  nlohmann::json identities(bool with_repair = false) const;
  // "" when `recorded` (a run's prompts_json) matches; else what changed, e.g.
  // "prompts/v2/analyze.md changed since the run was created (sha256 1a2b3c4d... now 5e6f...)".
  // The repair template is checked when the run recorded it.
  std::string mismatch(const nlohmann::json& recorded) const;
};

class PromptLibrary {
 public:
  // Reads every version directory under `dir`. Errors name the file (and line): a missing
  // schema, a schema that is not JSON, an unknown placeholder.
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
