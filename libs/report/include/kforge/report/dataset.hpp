#pragma once
// Exports that training tools read as they are.
//
// Training rows (ExportOptions::shape), one JSON object per line, each with "metadata":
//   sft                {"messages": [...the request's messages..., {"role": "assistant",
//                      "content": ANSWER}], "metadata"}: TRL's conversational SFT and axolotl's
//                      chat_template datasets (field_messages: messages)
//   prompt_completion  {"prompt": [...the request's messages...], "completion": [{"role":
//                      "assistant", "content": ANSWER}], "metadata"}: TRL's conversational
//                      prompt-completion
//   trajectory         {"messages": [...], "metadata"}: every round of the sample as one
//                      conversation: (v2) the analysis request and answer, the generation request
//                      and answer, then per repair round its request (the verifier's evidence on
//                      the previous answer, as the model was sent it) and answer, ending in the
//                      exported answer; metadata.rounds holds each round's verdict
//   rl                 verl's row: {"data_source": "kforge/TAG", "prompt": [the generation
//                      request's first user message], "ability": "triton", "reward_model":
//                      {"style": "rule", "ground_truth": {"unitest_code", "kernel_wrapper",
//                      "entry_points": {"kernels", "tests", "wrapper"}, "speed"}},
//                      "extra_info": {"split", "index", "key", "code"}, "metadata"}
// The messages are the ones the model was sent, read from the stored request of each call
// (llm_calls), never rendered again; the answer is the stage's parsed answer in the prompt's
// output format (a JSON object). The row for sft and prompt_completion is the call that made the
// exported code (the generation, or the repair round it comes from). With with_reasoning, each
// assistant turn carries the model's reasoning for it (ReasoningStyle).
//
// metadata (the same keys in every row, null where a value is absent): key, run, pipeline,
// prompt_version, prompts [{stage, version, sha256}], model, stage, repair_round, verdict,
// flags, status, mutation_score {killed, applicable}, cost_usd, prompt_tokens,
// completion_tokens, near_duplicate_of {in, file, key, similarity, exact}, license (the record's
// ExportOptions::license_field), group, split (+ rounds for trajectory: round, stage, verdict,
// flags, detail).
//
// The training shapes keep verified samples only (verdict passed, no quality flag) unless
// ExportOptions::verdicts says otherwise; a selected sample with no answer is counted in
// ExportSummary::no_answer and left out.
//
// export_folder() writes DIR/README.md (a Hugging Face dataset card: YAML front matter with
// license, task categories, configs with each split's data files, features and sizes; then the
// run: counts, fields, how samples were verified and what each flag means, prompts and their
// hashes, the model, cost, decontamination, the splits and the license) and
// DIR/data/SPLIT-NNNNN-of-MMMMM.jsonl. Splits are assigned by a hash of the sample's
// near-duplicate group (its smallest key; the sample's own key when it has no group), so every
// group of the last `kforge corpus dedup` is wholly in one split and a sample keeps its split
// when the run grows. The folder is built beside DIR and swapped into place: DIR holds the old
// export or the new one, never a half-written one. An existing DIR is replaced only when it is
// empty or a kforge export.
//
// Memory: one sample's rows and texts at a time, plus a few numbers per split and per group.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kforge/report/export.hpp"

namespace kforge::report {

// "sft" | "prompt-completion" | "trajectory" | "rl"; nullopt for any other name.
std::optional<RowShape> parse_row_shape(const std::string& s);
const char* to_string(RowShape s);

// "NAME=FRACTION,...": names of letters, digits, '_' or '-', each once; fractions in (0, 1]
// summing to 1. Error "usage" naming the item at fault.
Result<std::vector<Split>> parse_splits(const std::string& spec);

// The split a unit (a near-duplicate group's smallest key, or a sample's key) goes to: a hash of
// it mapped to [0, 1) and looked up in the splits' cumulative fractions.
std::size_t split_index(const std::vector<Split>& splits, const std::string& unit);

// "think" (also ""), "reasoning_content"; error "usage" otherwise.
Result<ReasoningStyle> parse_reasoning_style(const std::string& s);

struct SplitCount {
  std::string name;
  double fraction = 0;
  std::int64_t rows = 0;
  std::int64_t bytes = 0;
  std::int64_t shards = 0;
  std::int64_t groups = 0;   // near-duplicate groups with samples in this split
  std::int64_t grouped = 0;  // samples of those groups in this split
};

struct FolderSummary {
  ExportSummary rows;
  std::vector<SplitCount> splits;
  std::filesystem::path readme;
  bool groups_known = false;  // a corpus dedup ran: its groups decided the splits
};

// Errors: those of export_run; "usage" (bad splits or shard size), "conflict" (DIR exists and is
// neither empty nor a kforge export), "io" naming the path.
Result<FolderSummary> export_folder(store::Db& db, const std::string& tag,
                                    const std::filesystem::path& dir, const ExportOptions& opts);

}  // namespace kforge::report
