#pragma once
// Corpus import: maps each record's fields onto a sample and writes them in one transaction.
//
// All or nothing: a malformed file, a record without a string code, a wrong type or a key seen
// twice in the file imports nothing, and the error names the record index (and line) and field.
// So does a source field named by --map that no record has: the error names it and the fields
// the records do have. A record is "changed" when its stored record or any mapped field differs,
// so --update after a corrected --map repairs what the earlier map left empty.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/core/clock.hpp"
#include "kforge/corpus/reader.hpp"
#include "kforge/store/db.hpp"

namespace kforge::corpus {

// Which source field feeds each sample field; `key` names the field holding a stable key
// (absent: the key is a hash of the code).
struct FieldMap {
  std::string code = "code";
  std::string description_1 = "description_1";
  std::string description_2 = "description_2";
  std::optional<std::string> key;
  // The targets the user named (--map or --key): a source field of theirs that no record has
  // is an error, where a default name that no record has is only reported.
  std::vector<std::string> given;
};

// Parses a "--map" value, "TARGET=FIELD,TARGET=FIELD", into its pairs in order. Each target
// must be one of `targets` and given at most once (kind "usage" otherwise, naming the item).
Result<std::vector<std::pair<std::string, std::string>>> parse_map_spec(
    const std::string& spec, const std::vector<std::string>& targets);

// Parses "code=output,description_1=simp_instru,..." onto `base`. Targets: code, description_1,
// description_2, key; each at most once (kind "usage" otherwise).
Result<FieldMap> parse_field_map(const std::string& spec, FieldMap base = {});

struct ImportOptions {
  Format format = Format::automatic;
  FieldMap map;
  bool update = false;   // replace changed records under existing keys
  bool dry_run = false;  // validate and count, then roll back
  // Records whose code is longer than this (bytes) are imported and counted as oversized: their
  // prompts would exceed llm.max_prompt_tokens (the CLI passes 4 bytes per token). 0: no check.
  std::int64_t warn_code_bytes = 0;
};

// How many records carry the source field that feeds a sample field.
struct FieldCoverage {
  std::string target;  // description_1, description_2
  std::string field;   // the source field mapped onto it
  std::int64_t present = 0;
  bool given = false;  // named by --map
};

struct ImportSummary {
  std::int64_t records = 0;
  std::int64_t added = 0;
  std::int64_t unchanged = 0;
  std::int64_t changed = 0;               // differing from the stored record under the same key
  std::int64_t updated = 0;               // of those, replaced (with --update)
  std::vector<std::string> changed_keys;  // the first 20
  std::int64_t oversized = 0;             // code longer than warn_code_bytes
  // The first 20 oversized records: "KEY (record N, B bytes)".
  std::vector<std::string> oversized_records;
  // The optional targets, in order; a field present in only some records shows here.
  std::vector<FieldCoverage> coverage;
};

// The key a record gets without a key field: "sha256:" and the first 16 hex digits of the
// code's SHA-256.
std::string derived_key(std::string_view code);

Result<ImportSummary> import_file(store::Db& db, const std::filesystem::path& file,
                                  const ImportOptions& opts, Clock& clock = system_clock(),
                                  const ProgressFn& progress = {});

}  // namespace kforge::corpus
