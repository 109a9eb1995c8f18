// kforge run create|pause|resume|cancel: tagged runs of a pipeline version over samples.

#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "commands.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/dedup/signature.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/store/run_params.hpp"
#include "kforge/verify/slurm_backend.hpp"
#include "kforge/verify/targets.hpp"

namespace kforge::cli {
namespace {

struct RunArgs {
  std::string tag;
  std::string pipeline;
  std::string model;
  std::int64_t limit = -1;
  std::string samples_from;
  int repair_rounds = -1;  // -1: pipeline.repair_rounds of the configuration
  bool json = false;
  std::string dedup;            // empty: every sample; "first" | "largest": one per group
  double dedup_threshold = -1;  // -1: that of the last corpus dedup, else the default
  std::vector<std::string> require_targets;  // cross-compile targets a verified sample needs
  double require_speedup = 0;  // the speedup over the PyTorch reference a verified sample needs
};

struct DedupResult {
  std::vector<std::int64_t> ids;
  store::RunDedup params;
  std::int64_t dropped = 0;
};

// One sample per near-duplicate group among `ids` (their order kept), after bringing the groups
// up to date. The member kept is chosen among the group's members in `ids` only, by content
// (dedup::representative: the group's representative first), never by import order. The groups
// are brought up to date at the corpus's own threshold (that of the last corpus dedup, else
// the default), which a run's --dedup-threshold never changes: the run's groups are read at
// its threshold from the stored pairs, and recorded with the run.
Result<DedupResult> dedup_ids(store::Db& db, const std::vector<std::int64_t>& ids,
                              const std::string& choice_name, double threshold) {
  KF_TRY(dedup::Choice choice, dedup::parse_choice(choice_name));
  KF_TRY(auto st, dedup::state(db));
  dedup::UpdateOptions opts;
  opts.threshold = st ? st->threshold : dedup::kDefaultThreshold;
  if (threshold < 0) threshold = opts.threshold;
  KF_CHECK(dedup::update(db, opts, system_clock()));
  KF_TRY(auto groups, dedup::groups_at(db, threshold));
  std::set<std::int64_t> wanted(ids.begin(), ids.end()), drop;
  for (const auto& g : groups) {
    dedup::Group in;
    in.id = g.id;
    in.center = g.center;
    for (const auto& m : g.members)
      if (wanted.count(m.sample_id) != 0) in.members.push_back(m);
    if (in.members.size() < 2) continue;
    std::int64_t keep = dedup::representative(in, choice).sample_id;
    for (const auto& m : in.members)
      if (m.sample_id != keep) drop.insert(m.sample_id);
  }
  DedupResult r;
  for (std::int64_t id : ids)
    if (drop.count(id) == 0) r.ids.push_back(id);
  r.dropped = static_cast<std::int64_t>(drop.size());
  r.params = {dedup::to_string(choice), threshold, std::string(dedup::kScheme), r.dropped};
  return r;
}

Status check_tag(const std::string& tag) {
  if (tag.empty() || tag.size() > 64) return fail("usage", "a run tag has 1 to 64 characters");
  for (char c : tag)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '_' && c != '.')
      return fail("usage", "run tag '" + tag + "': use letters, digits, '-', '_' and '.' only");
  return {};
}

// Sample keys from a file: a JSON list of strings, or one key per line ('#' comments and blank
// lines ignored). Errors name the file and line.
Result<std::vector<std::int64_t>> samples_from(pipeline::JobStore& jobs, const std::string& path) {
  KF_TRY(std::string text, read_file(path));
  std::vector<std::pair<std::string, int>> keys;  // key, line
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array())
      return fail("usage", path + ": starts with '[' but is not a JSON list");
    for (std::size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string())
        return fail("usage", path + ": item " + std::to_string(i) + " is not a string (a key)");
      keys.emplace_back(j[i].get<std::string>(), static_cast<int>(i));
    }
  } else {
    int line = 0;
    std::size_t at = 0;
    while (at <= text.size()) {
      std::size_t nl = text.find('\n', at);
      std::string l = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
      at = nl == std::string::npos ? text.size() + 1 : nl + 1;
      ++line;
      while (!l.empty() && (l.back() == '\r' || l.back() == ' ' || l.back() == '\t')) l.pop_back();
      std::size_t b = l.find_first_not_of(" \t");
      if (b == std::string::npos || l[b] == '#') continue;
      keys.emplace_back(l.substr(b), line);
    }
  }
  bool json_list = first != std::string::npos && text[first] == '[';
  auto where = [&](int pos) {
    return json_list ? path + ": item " + std::to_string(pos) : path + ":" + std::to_string(pos);
  };
  std::vector<std::int64_t> ids;
  std::map<std::string, int> seen;
  for (const auto& [key, pos] : keys) {
    if (auto it = seen.find(key); it != seen.end())
      return fail("usage", where(pos) + ": sample '" + key + "' is listed twice (first at " +
                               std::to_string(it->second) + ")");
    seen[key] = pos;
    KF_TRY(auto id, jobs.sample_id(key));
    if (!id) return fail("usage", where(pos) + ": no sample with key '" + key + "'");
    ids.push_back(*id);
  }
  if (ids.empty()) return fail("usage", path + ": lists no sample keys");
  return ids;
}

std::string short_sha(const std::string& s) {
  return s.substr(0, 12);
}

int create(const RunArgs& a, const app::Config& cfg, bool quiet) {
  KF_CHECK_OR_REPORT(check_tag(a.tag));
  KF_TRY_OR_REPORT(auto dir, pipeline::PromptLibrary::locate(cfg.pipeline.prompts_dir));
  KF_TRY_OR_REPORT(auto lib, pipeline::PromptLibrary::load(dir));
  KF_TRY_OR_REPORT(const pipeline::PipelineSpec* spec, lib.pipeline(a.pipeline));
  int rounds = a.repair_rounds >= 0 ? a.repair_rounds : cfg.pipeline.repair_rounds;
  std::vector<std::string> targets;
  if (auto e = verify::parse_targets(a.require_targets, "--require-target", targets))
    return report(Error("usage", *e));
  if (rounds > 0 && !spec->repair)
    return report(Error("usage", "pipeline " + a.pipeline + " has no repair template (" +
                                     (lib.dir() / a.pipeline / "repair.md").string() +
                                     "); create the run with --repair-rounds 0"));
  bool dedup = !a.dedup.empty();
  if (!dedup && a.dedup_threshold >= 0)
    return report(Error("usage",
                        "--dedup-threshold goes with --dedup (one sample per near-duplicate "
                        "group); without --dedup the run takes every sample"));
  KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
  pipeline::JobStore jobs(*db, system_clock());
  std::vector<std::int64_t> ids;
  if (!a.samples_from.empty()) {
    KF_TRY_OR_REPORT(ids, samples_from(jobs, a.samples_from));
  } else {
    // With --dedup the limit applies after dedup: N distinct samples.
    KF_TRY_OR_REPORT(ids, jobs.sample_ids(dedup ? -1 : a.limit));
  }
  std::optional<DedupResult> dd;
  if (dedup) {
    KF_TRY_OR_REPORT(dd, dedup_ids(*db, ids, a.dedup, a.dedup_threshold));
    ids = dd->ids;
  }
  if (a.limit >= 0 && static_cast<std::int64_t>(ids.size()) > a.limit)
    ids.resize(static_cast<std::size_t>(a.limit));
  if (ids.empty())
    return report(Error("usage", "no samples to run (import a corpus first: kforge import FILE)"));
  pipeline::NewRun run;
  run.tag = a.tag;
  run.pipeline = a.pipeline;
  run.model = a.model.empty() ? cfg.llm.model : a.model;
  run.first_stage = spec->first_stage();
  run.prompts = spec->identities(rounds > 0);
  if (a.limit >= 0) run.params.limit = a.limit;
  if (!a.samples_from.empty()) run.params.samples_from = a.samples_from;
  run.params.samples = static_cast<std::int64_t>(ids.size());
  run.params.repair_rounds = rounds;
  // Part of the run's identity: two runs form a like-for-like A/B pair only with the same
  // dedup choice and threshold (kforge compare warns otherwise).
  if (dd) run.params.dedup = dd->params;
  // Samples are compiled for these targets too; one that does not compile is not verified.
  run.params.require_targets = targets;
  // Samples are timed against their PyTorch reference; one without pass_perf is not verified.
  if (a.require_speedup > 0) run.params.require_speedup = a.require_speedup;
  run.sample_ids = std::move(ids);
  KF_TRY_OR_REPORT(std::int64_t id, jobs.create_run(run));
  if (a.json) {
    std::printf("%s\n",
                nlohmann::json{
                    {"tag", run.tag},
                    {"id", id},
                    {"pipeline", run.pipeline},
                    {"model", run.model},
                    {"jobs", run.sample_ids.size()},
                    {"repair_rounds", rounds},
                    {"dedup", store::to_json(run.params).value("dedup", nlohmann::json(nullptr))},
                    {"require_targets", targets},
                    {"require_speedup", a.require_speedup > 0 ? nlohmann::json(a.require_speedup)
                                                              : nlohmann::json(nullptr)},
                    {"prompts", run.prompts}}
                    .dump()
                    .c_str());
    return kOk;
  }
  std::string stages;
  for (const auto& s : spec->stages) stages += (stages.empty() ? "" : " -> ") + s.name;
  std::printf("run '%s' created: %zu jobs, pipeline %s (%s), model %s, %s\n", run.tag.c_str(),
              run.sample_ids.size(), run.pipeline.c_str(), stages.c_str(), run.model.c_str(),
              rounds == 0 ? "no repair round"
                          : ("up to " + std::to_string(rounds) + " repair round" +
                             (rounds == 1 ? "" : "s") + " after a verdict that is not verified")
                                .c_str());
  if (quiet) return kOk;  // -q: the result line only, not its details and the next step
  if (dd)
    std::printf(
        "  dedup: one sample per near-duplicate group (%s, threshold %.2f): %lld left "
        "out (kforge corpus dups lists the groups)\n",
        dd->params.choice.c_str(), dd->params.threshold, static_cast<long long>(dd->dropped));
  if (!targets.empty()) {
    std::string names;
    for (const auto& t : targets) names += (names.empty() ? "" : ", ") + t;
    std::printf(
        "  requires %s: a passing sample whose kernels do not compile for it is not verified "
        "(compiled with Triton's backend for it, not run)\n",
        names.c_str());
  }
  for (const auto& s : spec->stages)
    std::printf("  prompt %s/%s.md sha256 %s...\n", s.version.c_str(), s.name.c_str(),
                short_sha(s.sha256).c_str());
  if (rounds > 0)
    std::printf("  prompt %s/repair.md sha256 %s...\n", spec->repair->version.c_str(),
                short_sha(spec->repair->sha256).c_str());
  std::printf("kforged picks it up; kforge status %s shows progress\n", run.tag.c_str());
  return kOk;
}

int set_state(const std::string& verb, const std::string& tag, const app::Config& cfg) {
  KF_TRY_OR_REPORT(auto db, app::open_store(cfg, app::IfMissing::refuse));
  pipeline::JobStore jobs(*db, system_clock());
  KF_TRY_OR_REPORT(auto run, jobs.run_by_tag(tag));
  if (!run)
    return report(Error("not_found", "no run '" + tag + "' (kforge status lists the runs)"));
  if (verb == "cancel" && run->state == store::RunState::cancelled) {
    std::printf("run '%s' is cancelled already\n", tag.c_str());
    return kOk;
  }
  if (verb == "cancel") {
    KF_TRY_OR_REPORT(std::int64_t n, jobs.cancel_run(tag));
    std::printf("run '%s' cancelled: %lld jobs cancelled (answers already stored are kept)\n",
                tag.c_str(), static_cast<long long>(n));
    // Its Slurm array tasks, if the verifier sent any (kforged also cancels them when it sees
    // the run cancelled).
    auto tasks = verify::scancel_run_tasks(*db, cfg.verifier.slurm, run->id);
    if (!tasks.ok())
      std::fprintf(stderr, "kforge: cancelling the run's Slurm tasks: %s\n",
                   tasks.error().message.c_str());
    else if (*tasks > 0)
      std::printf("  %d Slurm tasks cancelled (scancel)\n", *tasks);
    return kOk;
  }
  store::RunState want = verb == "pause" ? store::RunState::paused : store::RunState::active;
  if (run->state == want) {
    std::printf("run '%s' is %s already\n", tag.c_str(),
                std::string(store::to_string(want)).c_str());
    return kOk;
  }
  if (verb == "resume") {
    // A resumed run must go on with the prompt texts it started with.
    KF_TRY_OR_REPORT(auto dir, pipeline::PromptLibrary::locate(cfg.pipeline.prompts_dir));
    KF_TRY_OR_REPORT(auto lib, pipeline::PromptLibrary::load(dir));
    KF_TRY_OR_REPORT(const pipeline::PipelineSpec* spec, lib.pipeline(run->pipeline));
    std::string why = spec->mismatch(run->prompts);
    if (!why.empty())
      return report(Error("conflict", "run '" + tag + "' cannot resume: " + why +
                                          "; restore those templates or create a new run"));
  }
  KF_CHECK_OR_REPORT(jobs.set_run_state(tag, want));
  std::printf("run '%s' %s\n", tag.c_str(),
              verb == "pause" ? "paused (calls in flight finish)" : "resumed");
  return kOk;
}

}  // namespace

Command add_run(CLI::App& root, Globals& g) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = root.add_subcommand("run", "Create, pause, resume or cancel a tagged run");
  cmd->require_subcommand(1);
  CLI::App* create_cmd =
      cmd->add_subcommand("create", "Enqueue one job per sample for a pipeline version");
  create_cmd->add_option("tag", args->tag, "The run's tag (names its output set)")->required();
  create_cmd
      ->add_option("--pipeline", args->pipeline,
                   "Prompt version: v1, v2 or v3 (v3 also asks for a PyTorch reference, for the "
                   "speed label)")
      ->required();
  create_cmd->add_option("--model", args->model, "Model (default: llm.model of the config)");
  create_cmd->add_option("--limit", args->limit, "At most N samples (the first, in import order)")
      ->check(whole_number(1, "samples"));
  create_cmd->add_option("--samples-from", args->samples_from,
                         "Only these samples: a file of keys, one per line, or a JSON list");
  create_cmd
      ->add_option("--repair-rounds", args->repair_rounds,
                   "Repair rounds after a verdict that is not verified (default: "
                   "pipeline.repair_rounds of the config; 0: none)")
      ->check(CLI::Range(0, 10));
  create_cmd->add_flag("--json", args->json, "Print the created run as JSON");
  create_cmd
      ->add_option("--dedup", args->dedup,
                   "One sample per near-duplicate group, whatever the import order: first (the "
                   "group's representative, the default; the member first by code SHA-256 when "
                   "the representative is not among the run's samples) or largest (the longest "
                   "code; ties go to the representative)")
      ->expected(0, 1)
      ->default_str("first")
      ->check(CLI::IsMember({"first", "largest"}));
  create_cmd
      ->add_option("--dedup-threshold", args->dedup_threshold,
                   "Near-duplicate similarity for --dedup (default: that of the last kforge "
                   "corpus dedup, else 0.6); recorded with the run, the corpus's own threshold "
                   "is left as it is")
      ->check(CLI::Range(0.5, 1.0));
  create_cmd
      ->add_option("--require-target", args->require_targets,
                   "A cross-compile target every verified sample must compile for, e.g. "
                   "hip:gfx942 (repeatable or a comma list): a passing sample whose kernels do "
                   "not compile for it is not verified, and its repair prompt carries the "
                   "compiler's error; nothing runs there")
      ->type_name("TARGET");
  create_cmd
      ->add_option("--require-speedup", args->require_speedup,
                   "A speedup over the sample's PyTorch reference every verified sample must "
                   "show: the lower bound of its 95% interval above X (docs/VERIFIER.md, \"The "
                   "speed label\"; the samples are timed even with verifier.timing off). A "
                   "passing sample without it is flagged slow, and its repair prompt carries "
                   "its speed label. Only prompts that ask for a reference (v3) can meet it")
      ->check(CLI::PositiveNumber)
      ->type_name("X");
  create_cmd->footer(
      "Two runs over the same samples (the same --limit or --samples-from) form an A/B pair. "
      "The run records the SHA-256 of every prompt it uses; if a template changes, the daemon "
      "refuses to go on with it (create a new tag). --dedup updates the near-duplicate groups "
      "first; its choice and threshold are recorded with the run, and --limit counts the samples "
      "kept.");
  std::vector<CLI::App*> verbs = {create_cmd};
  for (const char* verb : {"pause", "resume", "cancel"}) {
    const char* help =
        std::string(verb) == "pause"    ? "Stop leasing the run's jobs (calls in flight finish)"
        : std::string(verb) == "resume" ? "Let the daemon lease the run's jobs again"
                                        : "End the run: its jobs not yet verified are cancelled";
    CLI::App* c = cmd->add_subcommand(verb, help);
    c->add_option("tag", args->tag, "The run's tag")->required();
    verbs.push_back(c);
  }
  return {cmd, [args, &g, verbs]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            if (verbs[0]->parsed()) return create(*args, cfg, g.quiet);
            for (std::size_t i = 1; i < verbs.size(); ++i)
              if (verbs[i]->parsed()) return set_state(verbs[i]->get_name(), args->tag, cfg);
            return kUsage;
          }};
}

}  // namespace kforge::cli
