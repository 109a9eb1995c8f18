// kforge export TAG --out FILE: the run's samples as a dataset, original fields kept.

#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/dedup/groups.hpp"
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
  std::vector<std::string> exclude_near;  // eval sets
  std::string map;                        // their field map, as import's --map
  std::string key;                        // their key field, as import's --key
  double near_threshold = -1;             // -1: that of the last corpus dedup, else the default
  bool mark = false;
  std::string exclusions;  // a JSONL file listing each sample near an eval set
  bool with_reasoning = false;
  std::vector<std::string> compiles_for;  // targets, as verifier.cross_compile
};

// Prints the samples near an eval set (the first 20) and writes all of them to --exclusions.
Status report_near(const ExportArgs& a, const report::ExportSummary& sum, double threshold) {
  if (!a.exclusions.empty()) {
    std::string text;
    for (const auto& n : sum.near)
      text += nlohmann::json{{"key", n.key},
                             {"action", n.marked ? "marked" : "left out"},
                             {"eval_file", n.match.file},
                             {"eval_key", n.match.key},
                             {"similarity", n.match.similarity},
                             {"reason", n.match.exact ? "same kernel body" : "similarity"}}
                  .dump() +
              "\n";
    KF_CHECK(write_file_atomic(a.exclusions, text));
  }
  std::printf(
      "decontamination: %zu %s near an eval-set kernel (exact kernel body, or similarity "
      ">= %.2f) %s\n",
      sum.near.size(), sum.near.size() == 1 ? "sample" : "samples", threshold,
      a.mark ? "kept and marked with near_duplicate_of" : "left out");
  std::size_t shown = 0;
  for (const auto& n : sum.near) {
    if (shown++ == 20) {
      std::printf("  ... %zu more%s\n", sum.near.size() - 20,
                  a.exclusions.empty() ? " (--exclusions FILE lists all)" : "");
      break;
    }
    if (n.match.exact)
      std::printf("  %s: same kernel body as %s in %s\n", n.key.c_str(), n.match.key.c_str(),
                  n.match.file.c_str());
    else
      std::printf("  %s: similarity %.2f with %s in %s\n", n.key.c_str(), n.match.similarity,
                  n.match.key.c_str(), n.match.file.c_str());
  }
  return {};
}

}  // namespace

Command add_export(CLI::App& root, Globals& g) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = root.add_subcommand("export", "Write a run's samples as a JSON or JSONL dataset");
  cmd->add_option("tag", args->tag, "The run's tag")->required();
  cmd->add_option("--out", args->out,
                  "The file to write (replaced atomically); '-': standard output")
      ->required();
  cmd->add_option("--format", args->format, "json, jsonl or auto (default: by the extension)")
      ->check(CLI::IsMember({"auto", "json", "jsonl"}));
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
                  "Similarity at which a sample is near an eval kernel (default: that of the "
                  "last kforge corpus dedup, else 0.6)")
      ->check(CLI::Range(0.5, 1.0));
  cmd->add_flag("--mark", args->mark,
                "Keep the samples near an eval set, marked with near_duplicate_of, instead of "
                "leaving them out");
  cmd->add_option("--exclusions", args->exclusions,
                  "Write each sample near an eval set, its match and the reason, as JSON Lines");
  cmd->add_option("--compiles-for", args->compiles_for,
                  "Only samples whose latest verification compiled for TARGET (hip:gfx942; "
                  "repeatable or a comma list: every one); see verifier.cross_compile")
      ->type_name("TARGET");
  cmd->add_flag("--with-reasoning", args->with_reasoning,
                "Add \"reasoning\": the model's reasoning behind each stage's exported answer");
  cmd->footer(
      "Each record is the original corpus record, every field in its order, then "
      "kernel_wrapper, unitest_code, kernel_analysis (v2), verdict, flags, status, model and "
      "prompt (tag, pipeline, each stage's prompt version and sha256), mutation_score, coverage, "
      "cross_compile (per target: ok, error, unavailable or not_run), and near_duplicate_of when "
      "the sample has one (its closest near-duplicate in the corpus, or with --mark the eval-set "
      "kernel it is near). Records are in sample-key order.");
  return {
      cmd, [args, &g]() -> int {
        KF_TRY_OR_REPORT(app::Config cfg, load(g));
        KF_TRY_OR_REPORT(auto format, report::parse_export_format(args->format, args->out));
        KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
        report::ExportOptions opts;
        opts.format = format;
        opts.verdicts = args->verdicts;
        opts.include_flagged = args->include_flagged;
        opts.with_reasoning = args->with_reasoning;
        if (auto e = verify::parse_targets(args->compiles_for, "--compiles-for", opts.compiles_for))
          return report(Error("usage", *e));
        std::optional<dedup::EvalIndex> evals;
        if (args->exclude_near.empty() && (!args->map.empty() || !args->key.empty() || args->mark ||
                                           args->near_threshold >= 0 || !args->exclusions.empty()))
          return report(Error("usage",
                              "--map, --key, --near-threshold, --mark and --exclusions go "
                              "with --exclude-near FILE..."));
        if (!args->exclude_near.empty()) {
          corpus::FieldMap map;
          if (!args->map.empty()) {
            KF_TRY_OR_REPORT(map, corpus::parse_field_map(args->map));
          }
          if (!args->key.empty()) map.key = args->key;
          std::vector<std::filesystem::path> files(args->exclude_near.begin(),
                                                   args->exclude_near.end());
          KF_TRY_OR_REPORT(evals, dedup::EvalIndex::load(files, map, corpus::Format::automatic));
          opts.exclude_near = &*evals;
          if (args->near_threshold >= 0) {
            opts.near_threshold = args->near_threshold;
          } else {
            KF_TRY_OR_REPORT(auto st, dedup::state(*db));
            opts.near_threshold = st ? st->threshold : dedup::kDefaultThreshold;
          }
          opts.mark_near = args->mark;
        }
        KF_TRY_OR_REPORT(auto sum, report::export_run(*db, args->tag, args->out, opts));
        // With --out - the data owns stdout: the summaries go to stderr.
        std::FILE* to = args->out == "-" ? stderr : stdout;
        if (!g.quiet) {
          std::fprintf(to, "exported %lld %s of %s to %s", static_cast<long long>(sum.written),
                       sum.written == 1 ? "sample" : "samples", args->tag.c_str(),
                       args->out == "-" ? "stdout" : args->out.c_str());
          if (sum.skipped > 0)
            std::fprintf(to, " (%lld left out by --verdict)", static_cast<long long>(sum.skipped));
          if (sum.not_compiling > 0)
            std::fprintf(to, " (%lld left out by --compiles-for)",
                         static_cast<long long>(sum.not_compiling));
          std::fprintf(to, "\n");
        }
        if (evals) {
          if (!g.quiet) {
            std::string sets;
            for (const auto& [f, n] : evals->files())
              sets += (sets.empty() ? "" : ", ") + f + " (" + std::to_string(n) + " kernels)";
            std::fprintf(to, "eval sets: %s\n", sets.c_str());
          }
          KF_CHECK_OR_REPORT(report_near(*args, sum, opts.near_threshold));
        }
        return kOk;
      }};
}

}  // namespace kforge::cli
