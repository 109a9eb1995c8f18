// kforge compare TAG_A TAG_B [TAG_C ...]: A/B comparison of tagged runs, each against the first.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/report/compare.hpp"

namespace kforge::cli {
namespace {

struct CompareArgs {
  std::vector<std::string> tags;
  bool json = false;
  std::string html;
  double confidence = 0;  // 0: the configured one
};

}  // namespace

Command add_compare(CLI::App& root, Globals& g) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = root.add_subcommand(
      "compare", "Compare tagged runs on the samples both finished, each against the first");
  cmd->add_option("tags", args->tags, "TAG_A TAG_B [TAG_C ...]; TAG_A is the baseline")
      ->required()
      ->expected(2, -1);
  cmd->add_flag("--json", args->json, "Print the comparison as one JSON object (for scripts)");
  cmd->add_option("--html", args->html,
                  "Also write a self-contained HTML report (inline CSS and SVG) to this file");
  cmd->add_option("--confidence", args->confidence,
                  "Confidence level of the intervals (default: report.confidence, 0.95)")
      ->check(CLI::Range(0.5, 0.9999));
  cmd->footer(
      "A sample is verified when its latest verdict is passed with no quality flag. Each pair is "
      "compared on the samples both runs finished: verified rates with Wilson intervals, the "
      "paired difference with Newcombe's interval and the exact McNemar test, counts by verdict, "
      "stage failure and quality flag, flipped samples, and cost per verified sample.");
  return {cmd, [args, &g]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
            report::CompareOptions opts;
            opts.confidence = args->confidence > 0 ? args->confidence : cfg.report.confidence;
            opts.now_ms = system_clock().wall_ms();
            KF_TRY_OR_REPORT(auto c, report::compare(*db, args->tags, opts));
            if (!args->html.empty()) {
              auto st = write_file_atomic(args->html, report::render_html(c));
              if (!st.ok()) return report(st.error());
              if (!g.quiet && !args->json) std::fprintf(stderr, "wrote %s\n", args->html.c_str());
            }
            if (args->json) {
              std::printf("%s\n", report::to_json(c).dump(2).c_str());
              return kOk;
            }
            std::fputs(
                printable(report::format_text(c, cfg.report.list_limit), Newlines::keep).c_str(),
                stdout);
            return kOk;
          }};
}

}  // namespace kforge::cli
