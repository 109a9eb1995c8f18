// kforge export TAG --out FILE | --out-dir DIR: the run's samples as a dataset, as kforge's
// records (original fields kept) or as the rows training tools read, in a file or in a folder
// with splits and a dataset card.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/report/dataset.hpp"
#include "kforge/report/export.hpp"
#include "kforge/verify/targets.hpp"

namespace kforge::cli {
namespace {

struct ExportArgs {
  std::string tag;
  std::string out;
  std::string format = "auto";
  std::vector<std::string> verdicts;
  bool include_flagged = false;
  std::vector<std::string> exclude_near;            // eval sets
  std::string map;                                  // their field map, as import's --map
  std::string key;                                  // their key field, as import's --key
  double near_threshold = -1;                       // -1: dedup::kDefaultKernelThreshold
  int min_kernel_tokens = dedup::kMinKernelTokens;  // smaller kernels are not compared
  bool mark = false;
  std::string exclusions;                 // a JSONL file listing each sample near an eval set
  std::string with_reasoning;             // empty: none; think or reasoning_content
  std::vector<std::string> compiles_for;  // targets, as verifier.cross_compile
  std::string keys;                       // a file of sample keys, one a line
  std::string out_dir;
  std::string split;  // NAME=FRACTION,...
  std::string license;
  std::string license_field = "license";
  std::int64_t shard_rows = 10'000;
};

// "exported 12 samples of v2 to DIR (train 11, test 1; 3 near-duplicate groups each in one
// split)".
void print_folder(std::FILE* to, const ExportArgs& a, const report::FolderSummary& f) {
  std::string splits;
  std::int64_t groups = 0;
  for (const auto& s : f.splits) {
    splits += (splits.empty() ? "" : ", ") + s.name + " " + std::to_string(s.rows);
    groups += s.groups;
  }
  std::fprintf(to, "exported %lld %s of %s to %s (%s", static_cast<long long>(f.rows.written),
               f.rows.written == 1 ? "sample" : "samples", a.tag.c_str(), a.out_dir.c_str(),
               splits.c_str());
  if (groups > 0)
    std::fprintf(to, "; %lld near-duplicate %s, each in one split", static_cast<long long>(groups),
                 groups == 1 ? "group" : "groups");
  std::fprintf(to, "); dataset card: %s\n", f.readme.c_str());
  if (!f.groups_known && f.splits.size() > 1)
    std::fprintf(stderr,
                 "kforge: warning: no near-duplicate groups are known (run kforge corpus dedup), "
                 "so near-duplicates may fall in different splits\n");
}

// Prints the samples near an eval set (the first 20) to `to` (nullptr: quiet; standard error when
// the rows go to standard output) and writes all of them to --exclusions.
Status report_near(std::FILE* to, const ExportArgs& a, const report::ExportSummary& sum,
                   double threshold) {
  if (!a.exclusions.empty()) {
    std::string text;
    for (const auto& n : sum.near)
      text += nlohmann::json{{"key", n.key},
                             {"action", n.marked ? "marked" : "left out"},
                             {"eval_file", n.match.file},
                             {"eval_key", n.match.key},
                             {"kernel", n.match.kernel},
                             {"eval_kernel", n.match.eval_kernel},
                             {"similarity", n.match.similarity},
                             {"reason", n.match.exact   ? "same kernel"
                                        : n.match.named ? "named alike"
                                                        : "similarity"}}
                  .dump() +
              "\n";
    KF_CHECK(write_file_atomic(a.exclusions, text));
  }
  if (to == nullptr) return {};
  std::fprintf(
      to,
      "decontamination: %zu %s near an eval-set kernel (a kernel of %d tokens or more that is "
      "the same up to renames, or similarity >= %.2f, or named alike) %s\n",
      sum.near.size(), sum.near.size() == 1 ? "sample" : "samples", a.min_kernel_tokens, threshold,
      a.mark ? "kept and marked with near_duplicate_of" : "left out");
  std::size_t shown = 0;
  for (const auto& n : sum.near) {
    if (shown++ == 20) {
      std::fprintf(to, "  ... %zu more%s\n", sum.near.size() - 20,
                   a.exclusions.empty() ? " (--exclusions FILE lists all)" : "");
      break;
    }
    if (n.match.exact)
      std::fprintf(to, "  %s: kernel %s is the same as %s of %s in %s\n", printable(n.key).c_str(),
                   printable(n.match.kernel).c_str(), printable(n.match.eval_kernel).c_str(),
                   printable(n.match.key).c_str(), printable(n.match.file).c_str());
    else
      std::fprintf(to, "  %s: kernel %s, similarity %.2f%s with %s of %s in %s\n",
                   printable(n.key).c_str(), printable(n.match.kernel).c_str(), n.match.similarity,
                   n.match.named ? " and named alike" : "", printable(n.match.eval_kernel).c_str(),
                   printable(n.match.key).c_str(), printable(n.match.file).c_str());
  }
  return {};
}

int run_export(ExportArgs& args, Globals& g) {
  if (args.out.empty() && args.out_dir.empty())
    return report(Error("usage", "export: give --out FILE or --out-dir DIR"));
  bool folder = !args.out_dir.empty();
  report::ExportOptions opts;
  if (auto shape = report::parse_row_shape(args.format)) {
    if (!folder) KF_CHECK_OR_REPORT(report::check_json_extension(args.out));
    opts.shape = *shape;
    opts.format = report::ExportFormat::jsonl;
  } else if (folder && args.format == "json") {
    return report(Error("usage",
                        "--format json: --out-dir writes JSON Lines; use --out for one "
                        "JSON list"));
  } else {
    KF_TRY_OR_REPORT(opts.format,
                     report::parse_export_format(args.format, folder ? "x.jsonl" : args.out));
  }
  if (!folder && !args.split.empty())
    return report(Error("usage", "--split goes with --out-dir DIR"));
  if (!args.split.empty()) {
    KF_TRY_OR_REPORT(opts.splits, report::parse_splits(args.split));
  }
  opts.with_reasoning = !args.with_reasoning.empty();
  if (opts.with_reasoning) {
    KF_TRY_OR_REPORT(opts.reasoning_style, report::parse_reasoning_style(args.with_reasoning));
  }
  opts.license = args.license;
  opts.license_field = args.license_field;
  opts.shard_rows = args.shard_rows;
  KF_TRY_OR_REPORT(app::Config cfg, load(g));
  KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
  opts.verdicts = args.verdicts;
  opts.include_flagged = args.include_flagged;
  if (!args.keys.empty()) {
    KF_TRY_OR_REPORT(opts.keys, report::read_keys_file(args.keys));
  }
  if (auto e = verify::parse_targets(args.compiles_for, "--compiles-for", opts.compiles_for))
    return report(Error("usage", *e));
  std::optional<dedup::EvalIndex> evals;
  if (args.exclude_near.empty() &&
      (!args.map.empty() || !args.key.empty() || args.mark || args.near_threshold >= 0 ||
       !args.exclusions.empty() || args.min_kernel_tokens != dedup::kMinKernelTokens))
    return report(Error("usage",
                        "--map, --key, --near-threshold, --min-kernel-tokens, --mark and "
                        "--exclusions go "
                        "with --exclude-near FILE..."));
  if (!args.exclude_near.empty()) {
    corpus::FieldMap map;
    if (!args.map.empty()) {
      KF_TRY_OR_REPORT(map, corpus::parse_field_map(args.map));
    }
    if (!args.key.empty()) map.key = args.key;
    std::vector<std::filesystem::path> files(args.exclude_near.begin(), args.exclude_near.end());
    KF_TRY_OR_REPORT(evals, dedup::EvalIndex::load(files, map, corpus::Format::automatic,
                                                   args.min_kernel_tokens));
    opts.exclude_near = &*evals;
    opts.near_threshold =
        args.near_threshold >= 0 ? args.near_threshold : dedup::kDefaultKernelThreshold;
    opts.mark_near = args.mark;
  }
  report::ExportSummary sum;
  // With --out - the data owns stdout: the summaries go to stderr.
  std::FILE* to = args.out == "-" ? stderr : stdout;
  if (folder) {
    KF_TRY_OR_REPORT(auto f, report::export_folder(*db, args.tag, args.out_dir, opts));
    if (!g.quiet) print_folder(to, args, f);
    sum = std::move(f.rows);
  } else {
    KF_TRY_OR_REPORT(sum, report::export_run(*db, args.tag, args.out, opts));
  }
  if (!g.quiet && !folder) {
    std::fprintf(to, "exported %lld %s of %s to %s", static_cast<long long>(sum.written),
                 sum.written == 1 ? "sample" : "samples", args.tag.c_str(),
                 args.out == "-" ? "stdout" : args.out.c_str());
    if (sum.skipped > 0)
      std::fprintf(to, " (%lld left out by --verdict)", static_cast<long long>(sum.skipped));
    if (sum.not_compiling > 0)
      std::fprintf(to, " (%lld left out by --compiles-for)",
                   static_cast<long long>(sum.not_compiling));
    std::fprintf(to, "\n");
  }
  if (!g.quiet && opts.shape != report::RowShape::record && args.verdicts.empty())
    std::fprintf(to, "(verified samples only: --verdict chooses others)\n");
  if (!g.quiet && sum.no_answer > 0)
    std::fprintf(to, "%lld selected %s no answer to train on and %s left out\n",
                 static_cast<long long>(sum.no_answer),
                 sum.no_answer == 1 ? "sample had" : "samples had",
                 sum.no_answer == 1 ? "was" : "were");
  if (evals) {
    if (!g.quiet) {
      std::string sets;
      for (const auto& [f, n] : evals->files())
        sets += (sets.empty() ? "" : ", ") + f + " (" + std::to_string(n) + " kernels)";
      std::fprintf(to, "eval sets: %s\n", sets.c_str());
    }
    KF_CHECK_OR_REPORT(report_near(g.quiet ? nullptr : to, args, sum, opts.near_threshold));
  }
  return kOk;
}

}  // namespace

Command add_export(CLI::App& root, Globals& g) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = root.add_subcommand(
      "export",
      "Write a run's samples as a dataset: kforge's records, or the rows training tools read");
  cmd->add_option("tag", args->tag, "The run's tag")->required();
  auto* out = cmd->add_option("--out", args->out,
                              "The file to write (replaced atomically); '-': standard output");
  auto* out_dir = cmd->add_option(
      "--out-dir", args->out_dir,
      "A folder to publish as it is: data/SPLIT-*.jsonl and a dataset card, README.md (replaced "
      "atomically)");
  out->excludes(out_dir);
  out_dir->excludes(out);
  cmd->add_option("--format", args->format,
                  "json, jsonl or auto (kforge's records; auto: by the extension), or a training "
                  "row: sft, prompt-completion, trajectory, rl");
  cmd->add_option("--verdict", args->verdicts,
                  "Only samples with these latest verdicts, e.g. passed (verified: passed with no "
                  "quality flag) or failed,error")
      ->delimiter(',');
  cmd->add_flag("--include-flagged", args->include_flagged,
                "With --verdict passed, keep passed samples that carry a quality flag too");
  cmd->add_option("--exclude-near", args->exclude_near,
                  "Leave out samples near a kernel of these eval sets (JSON or JSONL files)")
      ->expected(1, 1 << 20);
  cmd->add_option("--map", args->map,
                  "The eval sets' field mapping, as for import (e.g. code=output)");
  cmd->add_option("--key", args->key, "The eval sets' key field (default: the record number)");
  cmd->add_option("--near-threshold", args->near_threshold,
                  "Similarity at which a sample's kernel is near an eval kernel (default 0.8)")
      ->check(CLI::Range(0.5, 1.0));
  cmd->add_option("--min-kernel-tokens", args->min_kernel_tokens,
                  "Kernels shorter than this many tokens (small helpers) are not compared (default "
                  "60)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--mark", args->mark,
                "Keep the samples near an eval set, marked with near_duplicate_of, instead of "
                "leaving them out");
  cmd->add_option("--exclusions", args->exclusions,
                  "Write each sample near an eval set, its match and the reason, as JSON Lines");
  cmd->add_option("--keys", args->keys,
                  "Only the samples whose keys this file lists, one a line (kforge serve's "
                  "samples page downloads the keys it shows)")
      ->type_name("FILE");
  cmd->add_option("--compiles-for", args->compiles_for,
                  "Only samples whose latest verification compiled for TARGET (hip:gfx942; "
                  "repeatable or a comma list: every one); see verifier.cross_compile")
      ->type_name("TARGET");
  cmd->add_flag("--with-reasoning{think}", args->with_reasoning,
                "Add the model's reasoning behind each answer: kforge's records get "
                "\"reasoning\"; chat rows a <think> block before the answer "
                "(--with-reasoning=think, the default) or the assistant message's "
                "reasoning_content (--with-reasoning=reasoning_content)");
  cmd->add_option("--split", args->split,
                  "With --out-dir: NAME=FRACTION,... (e.g. train=0.9,test=0.1; default train=1); "
                  "every near-duplicate group stays in one split");
  cmd->add_option("--license", args->license,
                  "The sources' license for the dataset card (an SPDX id such as mit); default: "
                  "the records' --license-field values");
  cmd->add_option("--license-field", args->license_field,
                  "The record field holding each source's license (default: license)");
  cmd->add_option("--shard-rows", args->shard_rows,
                  "With --out-dir: rows per data file (default 10000)")
      ->check(CLI::PositiveNumber);
  cmd->footer(
      "Each record is the original corpus record, every field in its order, then "
      "kernel_wrapper, unitest_code, kernel_analysis (v2), verdict, flags, status, model and "
      "prompt (tag, pipeline, each stage's prompt version and sha256), mutation_score, coverage, "
      "cross_compile (per target: ok, error, unavailable or not_run), and near_duplicate_of when "
      "the sample has one (its closest near-duplicate in the corpus, or with --mark the eval-set "
      "kernel it is near). Records are in sample-key order. The training rows (--format sft, "
      "prompt-completion, trajectory, rl) hold the requests the model was sent and its answers, "
      "and \"metadata\"; they keep verified samples unless --verdict says otherwise "
      "(docs/OPERATIONS.md, \"Training data\").");
  return {cmd, [args, &g]() -> int { return run_export(*args, g); }};
}

}  // namespace kforge::cli
