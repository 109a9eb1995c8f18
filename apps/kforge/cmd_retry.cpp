// kforge retry TAG --verdict crashed,timeout [--stage generate|verify]: re-queue a subset.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/app/retry.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/report/export.hpp"
#include "kforge/store/states.hpp"

namespace kforge::cli {
namespace {

struct RetryArgs {
  std::string tag;
  std::vector<std::string> verdicts;
  std::vector<std::string> failures;
  std::string stage;
  std::string keys;  // a file of sample keys, one a line
  bool dry_run = false;
  bool json = false;
};

std::string joined(const std::vector<std::pair<std::string, std::int64_t>>& v) {
  std::string s;
  for (const auto& [k, n] : v) s += (s.empty() ? "" : ", ") + k + " " + std::to_string(n);
  return s;
}

}  // namespace

Command add_retry(CLI::App& root, Globals& g) {
  auto args = std::make_shared<RetryArgs>();
  CLI::App* cmd =
      root.add_subcommand("retry", "Re-queue finished samples of a run by verdict or failure");
  cmd->add_option("tag", args->tag, "The run's tag")->required();
  cmd->add_option("--verdict", args->verdicts,
                  "Latest verdicts to re-queue: passed, failed, error, timeout, crashed, invalid, "
                  "skipped, flagged (passed with a quality flag)")
      ->delimiter(',');
  cmd->add_option("--failure", args->failures,
                  "Stage failures to re-queue: llm_error, parse_error, rejected, other")
      ->delimiter(',');
  cmd->add_option("--keys", args->keys,
                  "Only the samples whose keys this file lists, one a line; alone: every "
                  "finished one of them (kforge serve's samples page downloads the keys it shows)")
      ->type_name("FILE");
  cmd->add_option("--stage", args->stage,
                  "Start again at one of the run's analysis stages (v2: analyze), its code stage "
                  "(generate) or verify (default: verify for samples with a verdict, the failed "
                  "stage for the others)");
  cmd->add_flag("--dry-run", args->dry_run, "Count what would be re-queued, change nothing");
  cmd->add_flag("--json", args->json, "Print the summary as one JSON object");
  cmd->footer(
      "Every earlier attempt stays in the history. All selected jobs change in one transaction; "
      "jobs still queued or in progress are left alone. A finished run becomes active again.");
  return {
      cmd, [args, &g]() -> int {
        KF_TRY_OR_REPORT(app::Config cfg, load(g));
        KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
        report::RetryOptions opts;
        opts.verdicts = args->verdicts;
        opts.failures = args->failures;
        if (!args->keys.empty()) {
          KF_TRY_OR_REPORT(opts.keys, report::read_keys_file(args->keys));
        }
        if (!args->stage.empty()) opts.stage = args->stage;
        KF_TRY_OR_REPORT(auto retried,
                         app::retry(*db, args->tag, opts, system_clock().wall_ms(),
                                    args->dry_run ? pipeline::Commit::no : pipeline::Commit::yes));
        const report::RetrySelection& sel = retried.selection;
        const pipeline::RequeueResult& sum = retried.result;
        std::vector<std::string> keys;
        for (const auto& j : sel.jobs) keys.push_back(j.key);
        if (args->json) {
          nlohmann::ordered_json j = {{"tag", args->tag},
                                      {"requeued", sum.requeued},
                                      {"dry_run", args->dry_run},
                                      {"by_stage", nlohmann::ordered_json::object()},
                                      {"by_outcome", nlohmann::ordered_json::object()},
                                      {"keys", keys},
                                      {"run_state", sum.run_state}};
          for (const auto& [k, n] : sel.by_stage) j["by_stage"][k] = n;
          for (const auto& [k, n] : sel.by_outcome) j["by_outcome"][k] = n;
          std::printf("%s\n", j.dump().c_str());
          return kOk;
        }
        std::printf("%s%lld %s of %s %s", args->dry_run ? "(dry run) " : "",
                    static_cast<long long>(sum.requeued), sum.requeued == 1 ? "sample" : "samples",
                    args->tag.c_str(), args->dry_run ? "would be re-queued" : "re-queued");
        if (sum.requeued > 0)
          std::printf(": at %s; were %s", joined(sel.by_stage).c_str(),
                      joined(sel.by_outcome).c_str());
        std::printf("\n");
        if (sum.run_reactivated && args->dry_run)
          std::printf(
              "(dry run) run %s is finished and would become active again; nothing "
              "was changed\n",
              args->tag.c_str());
        else if (sum.run_reactivated)
          std::printf("run %s was finished and is active again\n", args->tag.c_str());
        else if (args->dry_run)
          std::printf("(dry run) nothing was changed\n");
        else if (sum.requeued > 0 && sum.run_state == store::to_string(store::RunState::paused))
          std::printf("run %s is paused: kforge run resume %s to process them\n", args->tag.c_str(),
                      args->tag.c_str());
        return kOk;
      }};
}

}  // namespace kforge::cli
