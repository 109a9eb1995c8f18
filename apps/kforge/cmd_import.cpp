// kforge import FILE: load a corpus (JSON list or JSON Lines) into the samples table.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/corpus/importer.hpp"
#include "kforge/dedup/groups.hpp"

namespace kforge::cli {
namespace {

struct ImportArgs {
  std::string file;
  std::string format = "auto";
  std::string map;
  std::string key;
  bool update = false;
  bool dry_run = false;
  bool json = false;
  bool dedup = false;
};

// A one-line progress display on a terminal, redrawn at most every 100 ms.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled) {}
  void operator()(const corpus::ReadProgress& p) {
    if (!enabled_) return;
    auto now = system_clock().steady_now();
    if (now - last_ < std::chrono::milliseconds(100) && p.bytes_read < p.bytes_total) return;
    last_ = now;
    double mb = 1024.0 * 1024.0;
    double pct = p.bytes_total ? 100.0 * static_cast<double>(p.bytes_read) /
                                     static_cast<double>(p.bytes_total)
                               : 0;
    std::fprintf(stderr, "\rimporting: %lld records, %.1f / %.1f MB (%.0f%%)   ",
                 static_cast<long long>(p.records), static_cast<double>(p.bytes_read) / mb,
                 static_cast<double>(p.bytes_total) / mb, pct);
    drawn_ = true;
  }
  void clear() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

int run_import(ImportArgs& args, Globals& g) {
  KF_TRY_OR_REPORT(app::Config cfg, load(g));
  auto format = corpus::parse_format(args.format);
  if (!format.ok()) return report(format.error());
  corpus::ImportOptions opts;
  opts.format = *format;
  opts.update = args.update;
  opts.dry_run = args.dry_run;
  if (!args.map.empty()) {
    auto m = corpus::parse_field_map(args.map);
    if (!m.ok()) return report(m.error());
    opts.map = *m;
  }
  if (!args.key.empty()) opts.map.key = args.key;
  opts.warn_code_bytes = cfg.llm.max_prompt_tokens * 4;
  // A failed import leaves no database behind where there was none.
  std::error_code ec;
  const bool created = cfg.store.path != ":memory:" && !std::filesystem::exists(cfg.store.path, ec);
  KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
  auto forget_db = [&] {
    if (!created) return;
    db.reset();
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
      std::filesystem::remove(cfg.store.path + suffix, ec);
  };
  Progress progress(!args.json && !g.quiet && ::isatty(2));
  auto r = corpus::import_file(*db, args.file, opts, system_clock(),
                               [&](const corpus::ReadProgress& p) { progress(p); });
  progress.clear();
  if (!r.ok()) {
    forget_db();
    Error e = r.error();
    e.message += "; nothing was imported";
    return report(e);
  }
  if (args.dry_run) forget_db();
  const auto& s = *r;
  std::optional<dedup::UpdateSummary> dd;
  if (args.dedup && !args.dry_run) {
    dedup::UpdateOptions dopts;
    KF_TRY_OR_REPORT(auto st, dedup::state(*db));
    if (st) dopts.threshold = st->threshold;
    KF_TRY_OR_REPORT(dd, dedup::update(*db, dopts, system_clock()));
  }
  // Fields present in some records only, and default fields no record has.
  std::vector<std::string> notes;
  for (const auto& c : s.coverage) {
    if (c.present == s.records) continue;
    if (c.present == 0)
      notes.push_back(c.target + ": no record has a field '" + c.field +
                      "', so it stays empty (--map " + c.target + "=FIELD names another)");
    else
      notes.push_back(c.target + " ('" + c.field + "') is in " + std::to_string(c.present) +
                      " of " + std::to_string(s.records) + " records; the other " +
                      std::to_string(s.records - c.present) + " have it empty");
  }
  if (!args.json && !g.quiet)
    for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", printable(n).c_str());
  if (s.oversized > 0) {
    std::string list;
    for (const auto& k : s.oversized_records) list += (list.empty() ? "" : ", ") + k;
    if (s.oversized > static_cast<std::int64_t>(s.oversized_records.size())) list += ", ...";
    std::fprintf(stderr,
                 "warning: %lld records have code above %lld bytes: their prompts "
                 "exceed llm.max_prompt_tokens (%lld) and will fail as too_large "
                 "without a request: %s\n",
                 static_cast<long long>(s.oversized), static_cast<long long>(opts.warn_code_bytes),
                 static_cast<long long>(cfg.llm.max_prompt_tokens), printable(list).c_str());
  }
  if (args.json) {
    nlohmann::json j = {{"file", args.file},
                        {"records", s.records},
                        {"added", s.added},
                        {"unchanged", s.unchanged},
                        {"changed", s.changed},
                        {"updated", s.updated},
                        {"changed_keys", s.changed_keys},
                        {"oversized", s.oversized},
                        {"oversized_records", s.oversized_records},
                        {"dry_run", args.dry_run}};
    for (const auto& c : s.coverage)
      j["fields"][c.target] = {{"field", c.field}, {"present", c.present}};
    j["notes"] = notes;
    if (dd)
      j["dedup"] = {{"computed", dd->computed}, {"groups", dd->groups}, {"grouped", dd->grouped}};
    std::printf("%s\n", j.dump().c_str());
    return kOk;
  }
  std::printf("%s%s: %lld records: %lld added, %lld unchanged, %lld changed\n",
              args.dry_run ? "(dry run) " : "", args.file.c_str(),
              static_cast<long long>(s.records), static_cast<long long>(s.added),
              static_cast<long long>(s.unchanged), static_cast<long long>(s.changed));
  if (dd)
    std::printf(
        "near-duplicates: %lld signatures computed; %lld groups, %lld samples "
        "in them (kforge corpus dups lists them)\n",
        static_cast<long long>(dd->computed), static_cast<long long>(dd->groups),
        static_cast<long long>(dd->grouped));
  if (s.changed > 0) {
    std::string keys;
    for (const auto& k : s.changed_keys) keys += (keys.empty() ? "" : ", ") + k;
    if (s.changed > static_cast<std::int64_t>(s.changed_keys.size())) keys += ", ...";
    if (args.update)
      std::printf("replaced %lld changed records: %s\n", static_cast<long long>(s.updated),
                  printable(keys).c_str());
    else
      std::printf("left %lld changed records alone (--update replaces them): %s\n",
                  static_cast<long long>(s.changed), printable(keys).c_str());
  }
  return kOk;
}

}  // namespace

Command add_import(CLI::App& root, Globals& g) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = root.add_subcommand("import", "Import a corpus file (JSON list or JSON Lines)");
  cmd->add_option("file", args->file, "The corpus file ('-': standard input)")->required();
  cmd->add_option("--format", args->format, "json, jsonl or auto (default: by the first byte)")
      ->check(CLI::IsMember({"auto", "json", "jsonl"}));
  cmd->add_option("--map", args->map,
                  "Field mapping TARGET=FIELD,... with targets code, description_1, "
                  "description_2, key (e.g. code=output,description_1=simp_instru)");
  cmd->add_option("--key", args->key,
                  "The field holding each record's stable key (default: a hash of the code)");
  cmd->add_flag("--update", args->update,
                "Replace records whose content changed under an existing key");
  cmd->add_flag("--dry-run", args->dry_run, "Validate and count, but write nothing");
  cmd->add_flag("--json", args->json, "Print the summary as one JSON object");
  cmd->add_flag("--dedup", args->dedup,
                "Then update the near-duplicate groups, as kforge corpus dedup does (at the "
                "threshold of the last one)");
  cmd->footer(
      "Everything or nothing: a malformed file or record imports nothing, and the error names "
      "the record index (0-based), its line and the field.");
  return {cmd, [args, &g]() -> int { return run_import(*args, g); }};
}

}  // namespace kforge::cli
