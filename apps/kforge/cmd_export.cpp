// kforge export TAG --out FILE: the run's samples as a dataset, original fields kept.

#include <cstdio>

#include "commands.hpp"
#include "kforge/report/export.hpp"

namespace kforge::cli {
namespace {

struct ExportArgs {
  std::string tag;
  std::string out;
  std::string format = "auto";
  std::vector<std::string> verdicts;
  bool include_flagged = false;
  bool with_reasoning = false;
};

}  // namespace

Command add_export(CLI::App& root, Globals& g) {
  auto args = std::make_shared<ExportArgs>();
  CLI::App* cmd = root.add_subcommand("export", "Write a run's samples as a JSON or JSONL dataset");
  cmd->add_option("tag", args->tag, "The run's tag")->required();
  cmd->add_option("--out", args->out, "The file to write (replaced atomically)")->required();
  cmd->add_option("--format", args->format, "json, jsonl or auto (default: by the extension)")
      ->check(CLI::IsMember({"auto", "json", "jsonl"}));
  cmd->add_option("--verdict", args->verdicts,
                  "Only samples with these latest verdicts, e.g. passed (verified: passed with no "
                  "quality flag) or failed,error")
      ->delimiter(',');
  cmd->add_flag("--include-flagged", args->include_flagged,
                "With --verdict passed, keep passed samples that carry a quality flag too");
  cmd->add_flag("--with-reasoning", args->with_reasoning,
                "Add \"reasoning\": the model's reasoning behind each stage's exported answer");
  cmd->footer(
      "Each record is the original corpus record, every field in its order, then "
      "kernel_wrapper, unitest_code, kernel_analysis (v2), verdict, flags, status, model and "
      "prompt (tag, pipeline, each stage's prompt version and sha256). Records are in sample-key "
      "order.");
  return {cmd, [args, &g]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto format, report::parse_export_format(args->format, args->out));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
            report::ExportOptions opts;
            opts.format = format;
            opts.verdicts = args->verdicts;
            opts.include_flagged = args->include_flagged;
            opts.with_reasoning = args->with_reasoning;
            KF_TRY_OR_REPORT(auto sum, report::export_run(*db, args->tag, args->out, opts));
            if (!g.quiet) {
              std::printf("exported %lld %s of %s to %s", static_cast<long long>(sum.written),
                          sum.written == 1 ? "sample" : "samples", args->tag.c_str(),
                          args->out.c_str());
              if (sum.skipped > 0)
                std::printf(" (%lld left out by --verdict)", static_cast<long long>(sum.skipped));
              std::printf("\n");
            }
            return kOk;
          }};
}

}  // namespace kforge::cli
