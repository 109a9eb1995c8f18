#pragma once
// Export of a tagged run as a dataset: each record is the original corpus record with every
// field kept in its order, followed by what the run made of it:
//   kernel_wrapper, unitest_code   the final round's code: the last repair round's corrected
//                                  wrapper and test, else the generation (null when none)
//   kernel_analysis                the latest analysis (v2 runs only)
//   verdict, flags                 the latest verdict that applies to that code, its flags
//   status                         what became of the sample (see Category)
//   repair_round                   the round that code comes from (0: the first generation)
//   model                          the run's model
//   prompt                         {"tag", "pipeline", STAGE: {"version", "sha256"}...}; "repair"
//                                  when the code comes from a repair round
//   near_duplicate_of              only when it has one: {"in": "eval", "file", "key", "kernel",
//                                  "eval_kernel", "similarity", "exact"} for a sample kept near
//                                  an eval-set kernel (mark_near), else {"in": "corpus", "key",
//                                  "similarity", "exact"}: its near-duplicate group's
//                                  representative (for the representative, its closest member)
//                                  at the threshold of the last kforge corpus dedup
//   cross_compile                  {"hip:gfx942": "ok", ...}: per target of the verifier's
//                                  cross-compile, ok, error, unavailable or not_run (null when
//                                  no target was asked for; docs/VERIFIER.md, "Other targets")
//   reasoning                      with_reasoning only: {STAGE: the model's reasoning for the
//                                  exported analysis and code, or null}
//
// Decontamination: with `exclude_near`, a sample with a kernel that is the same as an eval-set
// kernel up to renames, or at or above `near_threshold` similar to one (kernel signatures,
// dedup/signature.hpp), is left out (or kept and marked, with mark_near); each such sample is
// listed in the summary with its match, both kernels named.
//
// Other shapes of row (dataset.hpp): the chat rows trainers read (sft, prompt-completion,
// trajectory, rl), each with "metadata"; export_folder() writes a publishable folder with splits
// and a dataset card.
//
// Records come in sample-key order, one at a time from the database to the file (memory does
// not grow with the run). The file is written beside its destination and renamed into place, so
// a failed export leaves the destination as it was.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kforge/dedup/evalset.hpp"
#include "kforge/store/db.hpp"

namespace kforge::report {

enum class ExportFormat { json, jsonl };

// What one row is: the default record (above), or a training row (dataset.hpp).
enum class RowShape { record, sft, prompt_completion, trajectory, rl };

// Where a chat row puts the model's reasoning (with_reasoning): a "<think>...</think>" block
// before the answer in the assistant's content, or the assistant message's
// "reasoning_content" field.
enum class ReasoningStyle { think, reasoning_content };

// A split of export_folder(): its name and the fraction of the samples it gets.
struct Split {
  std::string name;
  double fraction = 1;
};

// "json" | "jsonl"; "auto" picks jsonl for a .jsonl path and json for a .json one, "-" or a
// name without an extension; any other extension is an error (never JSON under another name).
// Whatever the format, a path whose extension names another data format (.parquet, .csv,
// .arrow...) is an error: what is written is JSON.
Result<ExportFormat> parse_export_format(const std::string& s, const std::filesystem::path& out);
// The error for a path whose extension names a data format other than JSON, if it does.
Status check_json_extension(const std::filesystem::path& out);

struct ExportOptions {
  ExportFormat format = ExportFormat::jsonl;
  // Only samples whose latest verdict is one of these (empty: every sample of the run for
  // records, the verified ones for the training shapes).
  // "passed" keeps verified samples only (passed with no quality flag) unless include_flagged.
  std::vector<std::string> verdicts;
  bool include_flagged = false;
  // Decontamination (see above); not owned, may be null.
  const dedup::EvalIndex* exclude_near = nullptr;
  double near_threshold = dedup::kDefaultKernelThreshold;
  bool mark_near = false;
  // Adds "reasoning": the model's reasoning (reasoning_content, <think> blocks) behind the
  // exported analysis and code.
  bool with_reasoning = false;
  // Only samples whose latest verification compiled for every one of these targets ("ok").
  std::vector<std::string> compiles_for;
  // Only the samples with these keys (kforge export --keys FILE, the viewer's download of what
  // it shows); a key the run does not have is a "usage" error naming it.
  std::optional<std::set<std::string>> keys;
  // The row's shape; the training shapes are JSON Lines whatever `format` says.
  RowShape shape = RowShape::record;
  ReasoningStyle reasoning_style = ReasoningStyle::think;
  // export_folder() only: the splits (empty: one, "train"), rows per shard, and the license of
  // the sources for the card: an SPDX id, or else the records' `license_field` values.
  std::vector<Split> splits;
  std::int64_t shard_rows = 10'000;
  std::string license;
  std::string license_field = "license";
};

// A sample near an eval-set kernel, and what the export did with it.
struct NearEval {
  std::string key;
  dedup::NearMatch match;
  bool marked = false;  // kept with near_duplicate_of (mark_near); else left out
};

struct ExportSummary {
  std::int64_t written = 0;
  std::int64_t skipped = 0;        // not matching the verdict filter
  std::int64_t not_compiling = 0;  // left out by compiles_for
  std::vector<NearEval> near;      // near an eval-set kernel, in key order
  std::int64_t corpus_near = 0;    // written with a corpus near_duplicate_of
  std::int64_t no_answer = 0;      // training shapes: selected, but with no answer to train on
};

// Errors: "not_found" (unknown tag), "usage" (unknown verdict name), "conflict" (an original
// record already has a field the export adds: named with its sample key), "io", "parse".
Result<ExportSummary> export_run(store::Db& db, const std::string& tag,
                                 const std::filesystem::path& out, const ExportOptions& opts);
// The same rows as JSON Lines, each line (with its newline) handed to `write` (the viewer's
// download); `opts.format` is not read. `destination` names where they go in errors.
Result<ExportSummary> export_lines(store::Db& db, const std::string& tag, const ExportOptions& opts,
                                   const std::function<Status(std::string_view)>& write,
                                   const std::string& destination = "the download");
// The keys of a --keys file: one a line, blank lines and a line's trailing CR ignored. Errors
// name the file ("io"), or the file and line of a key that is not printable text ("usage").
Result<std::set<std::string>> read_keys_file(const std::filesystem::path& path);

// The verdict names a filter may use.
const std::vector<std::string>& verdict_names();

}  // namespace kforge::report
