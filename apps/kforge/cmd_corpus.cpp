// kforge corpus dedup|dups: near-duplicate groups of the imported corpus (libs/dedup).

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/dedup/groups.hpp"

namespace kforge::cli {
namespace {

struct CorpusArgs {
  double threshold = -1;  // -1: the default (dedup) or the stored one (dups)
  int threads = 0;
  bool json = false;
  std::int64_t limit = 20;
};

const dedup::Member& center_of(const dedup::Group& g) {
  for (const auto& m : g.members)
    if (m.sample_id == g.center) return m;
  return g.members.front();
}

nlohmann::ordered_json group_json(const dedup::Group& g) {
  nlohmann::ordered_json members = nlohmann::ordered_json::array();
  for (const auto& m : g.members)
    members.push_back({{"key", m.key},
                       {"bytes", m.bytes},
                       {"similarity", m.similarity},
                       {"to", m.linked_to},
                       {"exact", m.exact},
                       {"via", dedup::to_string(m.via)}});
  return {{"group", g.id},
          {"size", g.members.size()},
          {"representative", center_of(g).key},
          {"spread", g.spread},
          {"members", std::move(members)}};
}

int run_dedup(const CorpusArgs& a, const Globals& g, const app::Config& cfg) {
  KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
  dedup::UpdateOptions opts;
  opts.threshold = a.threshold >= 0 ? a.threshold : dedup::kDefaultThreshold;
  opts.threads = a.threads;
  bool tty = !a.json && !g.quiet && ::isatty(2);
  if (tty)
    opts.progress = [](std::int64_t done, std::int64_t total) {
      std::fprintf(stderr, "\rsignatures: %lld / %lld   ", static_cast<long long>(done),
                   static_cast<long long>(total));
    };
  KF_TRY_OR_REPORT(auto s, dedup::update(*db, opts, system_clock()));
  if (tty && s.computed > 0) std::fprintf(stderr, "\r\033[K");
  if (a.json) {
    nlohmann::ordered_json j = {{"samples", s.samples},        {"computed", s.computed},
                                {"candidates", s.candidates},  {"pairs", s.pairs},
                                {"threshold", opts.threshold}, {"groups", s.groups},
                                {"grouped", s.grouped},        {"recomputed", s.recomputed}};
    std::printf("%s\n", j.dump().c_str());
    return kOk;
  }
  std::printf(
      "%lld samples: %lld signatures computed, %lld current; %lld pairs at similarity >= %.2f\n",
      static_cast<long long>(s.samples), static_cast<long long>(s.computed),
      static_cast<long long>(s.samples - s.computed), static_cast<long long>(s.pairs),
      dedup::kPairFloor);
  std::printf(
      "%lld groups of near-duplicates at threshold %.2f, %lld samples in them (%lld "
      "beyond one per group)\n",
      static_cast<long long>(s.groups), opts.threshold, static_cast<long long>(s.grouped),
      static_cast<long long>(s.grouped - s.groups));
  std::printf("kforge corpus dups lists them; kforge run create --dedup keeps one per group\n");
  return kOk;
}

int run_dups(const CorpusArgs& a, const app::Config& cfg) {
  KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
  KF_TRY_OR_REPORT(auto st, dedup::state(*db));
  if (!st)
    return report(Error("not_found",
                        "no near-duplicate groups yet: run kforge corpus dedup (or import with "
                        "--dedup) first"));
  double t = a.threshold >= 0 ? a.threshold : st->threshold;
  KF_TRY_OR_REPORT(auto groups, dedup::groups_at(*db, t));
  if (st->stale > 0)
    std::fprintf(stderr,
                 "warning: %lld samples are not in these groups (imported or changed since the "
                 "last kforge corpus dedup; run it again)\n",
                 static_cast<long long>(st->stale));
  std::int64_t grouped = 0;
  for (const auto& g : groups) grouped += static_cast<std::int64_t>(g.members.size());
  if (a.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const auto& g : groups) list.push_back(group_json(g));
    nlohmann::ordered_json j = {{"threshold", t},
                                {"groups", groups.size()},
                                {"grouped", grouped},
                                {"stale", st->stale},
                                {"list", std::move(list)}};
    std::printf("%s\n", j.dump().c_str());
    return kOk;
  }
  std::printf("%zu groups at threshold %.2f, %lld samples (%lld beyond one per group)\n",
              groups.size(), t, static_cast<long long>(grouped),
              static_cast<long long>(grouped - static_cast<std::int64_t>(groups.size())));
  std::int64_t shown = 0;
  for (const auto& g : groups) {
    if (a.limit > 0 && shown == a.limit) {
      std::printf("... %lld more groups (--limit 0 lists all, --json gives every member)\n",
                  static_cast<long long>(static_cast<std::int64_t>(groups.size()) - shown));
      break;
    }
    ++shown;
    std::printf("group %lld: %zu samples, each at least %.2f similar to %s%s\n",
                static_cast<long long>(g.id), g.members.size(), g.spread,
                printable(center_of(g).key).c_str(),
                g.through_kernels > 0 ? " or linked to it through kernels" : "");
    for (const auto& m : g.members)
      std::printf("  %-40s %7lld bytes  %s%s %.2f with %s\n", printable(m.key).c_str(),
                  static_cast<long long>(m.bytes), dedup::to_string(m.via),
                  m.via == dedup::Via::similarity ? "" : ", similarity", m.similarity,
                  printable(m.linked_to).c_str());
  }
  return kOk;
}

}  // namespace

Command add_corpus(CLI::App& root, Globals& g) {
  auto args = std::make_shared<CorpusArgs>();
  CLI::App* cmd = root.add_subcommand("corpus", "Near-duplicate groups of the imported corpus");
  cmd->require_subcommand(1);
  CLI::App* dd = cmd->add_subcommand(
      "dedup", "Compute MinHash signatures of new or changed samples and store the groups");
  dd->add_option("--threshold", args->threshold,
                 "Similarity at which two samples are near-duplicates (default 0.6)")
      ->check(CLI::Range(0.5, 1.0));
  dd->add_option("--threads", args->threads, "Signature threads (default: the machine's cores)")
      ->check(CLI::Range(1, 256));
  dd->add_flag("--json", args->json, "Print the summary as one JSON object");
  dd->footer(
      "Similarity is the estimated Jaccard similarity of 5-token shingles of the files' @jit "
      "kernels (comments, whitespace and literal values normalised, identifiers kept). Samples "
      "with the same kernels up to renames are near-duplicates whatever else their files hold, "
      "and so are files linked through their kernels: all within another's, aligned one to one, "
      "or named alike. Two samples whose kernels compute different operations on values are "
      "never near-duplicates. Each group is built around a representative that every member is "
      "near, so groups do not chain and do not depend on import order (docs/DEDUP.md).");
  CLI::App* dups = cmd->add_subcommand("dups", "List the near-duplicate groups");
  dups->add_option("--threshold", args->threshold,
                   "Group at this similarity (default: that of the last corpus dedup)")
      ->check(CLI::Range(0.5, 1.0));
  dups->add_option("--limit", args->limit, "Groups to list (default 20; 0: all)")
      ->check(CLI::NonNegativeNumber);
  dups->add_flag("--json", args->json, "Every group and member as one JSON object");
  return {cmd, [args, &g, dd, dups]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            if (dd->parsed()) return run_dedup(*args, g, cfg);
            if (dups->parsed()) return run_dups(*args, cfg);
            return kUsage;
          }};
}

}  // namespace kforge::cli
