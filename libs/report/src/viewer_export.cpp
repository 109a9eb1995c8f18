// Export of what the samples page shows: the keys it lists as a file, the filtered rows as a
// JSON Lines download in any export shape, and the ready kforge export / retry commands.

#include <spdlog/fmt/fmt.h>

#include <cctype>

#include "kforge/report/dataset.hpp"
#include "kforge/report/export.hpp"
#include "viewer_impl.hpp"

namespace kforge::report::viewer {

namespace {

// A download's most bytes: beyond it, the page's command writes the file.
constexpr std::size_t kMaxDownload = 256u << 20;
// The largest download kept in memory for the next fetch of the same rows.
constexpr std::size_t kMaxKept = 16u << 20;

// The export shapes a download offers: the parameter's value and what it is.
const std::vector<std::pair<std::string, std::string>>& shapes() {
  static const std::vector<std::pair<std::string, std::string>> s = {
      {"jsonl", "kforge's records"},
      {"sft", "sft"},
      {"prompt-completion", "prompt-completion"},
      {"trajectory", "trajectory"},
      {"rl", "rl"}};
  return s;
}

bool filtered(const Filter& f) {
  return !f.verdict.empty() || !f.flag.empty() || !f.failure.empty() || !f.round.empty() ||
         !f.cause.empty() || !f.q.empty();
}

// A file name for a run: the tag's letters, digits, '-', '_' and '.', each other byte '_'.
std::string file_stem(const std::string& tag) {
  std::string out;
  for (char c : tag)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return out.empty() || out[0] == '.' ? "run" + out : out;
}

}  // namespace

std::string export_section(const Filter& f, const Selection& sel, const ViewOptions& opts) {
  Params shown = f.params();
  std::string kforge = "kforge";
  if (!opts.config_path.empty()) kforge += " -c " + shell_quote(opts.config_path);
  const std::string tag = shell_quote(f.tag), keys = file_stem(f.tag) + "-keys.txt";
  std::string h = "<section class=\"export\" id=\"export\"><h2>Export what is shown</h2>";
  h += fmt::format("<p class=\"meta\">{} sample(s). ", sel.rows.size());
  h += link("/keys", shown, "their keys") + " (" + html_escape(keys) + "); download as ";
  bool first = true;
  for (const auto& [value, name] : shapes()) {
    Params p = shown;
    p.emplace_back("format", value);
    h += std::string(first ? "" : ", ") + "<a class=\"download\" href=\"" + href("/export", p) +
         "\">" + html_escape(name) + "</a>";
    first = false;
  }
  h += " (the training shapes keep the verified samples among them)</p>";
  // Every filter of the page is a key list for the commands; an unfiltered page the whole run.
  const std::string only = filtered(f) ? " --keys " + shell_quote(keys) : std::string();
  std::string exp =
      kforge + " export " + tag + only + " --out " + shell_quote(file_stem(f.tag) + ".jsonl");
  std::string retry = kforge + " retry " + tag + " --keys " + shell_quote(keys) + " --dry-run";
  h += "<dl class=\"facts\"><dt>export</dt><dd><code id=\"export-command\">" + html_escape(exp) +
       "</code></dd><dt>retry</dt><dd><code id=\"retry-command\">" + html_escape(retry) +
       "</code> (every finished sample listed; without --dry-run it re-queues them)</dd></dl>";
  return h + "</section>";
}

Result<ViewResponse> export_download(store::Db& db, const ViewRequest& req,
                                     const ViewOptions& opts) {
  const bool keys_only = req.path == "/keys";
  KF_TRY(Filter f, parse_filter(req));
  ExportOptions eo;
  std::string format = keys_only ? "jsonl" : param(req, "format");
  if (format.empty()) format = "jsonl";
  if (format != "jsonl") {
    auto shape = parse_row_shape(format);
    if (!shape)
      return fail("usage",
                  "parameter 'format' must be one of jsonl, sft, prompt-completion, "
                  "trajectory, rl; got '" +
                      format + "'");
    eo.shape = *shape;
  }
  KF_TRY(RunInfo run, find_run_for_client(db, f.tag));
  KF_TRY(ViewCache::Outcomes loaded, outcomes_of(db, run, opts.cache));
  KF_TRY(Selection sel, select_samples(db, run, *loaded, f));
  ViewResponse r;
  if (keys_only) {
    r.content_type = "text/plain; charset=utf-8";
    r.filename = file_stem(run.tag) + "-keys.txt";
    for (const auto& row : sel.rows) r.body += row.o->key + "\n";
    return r;
  }
  r.content_type = "application/x-ndjson; charset=utf-8";
  r.filename = file_stem(run.tag) + "-" + format + ".jsonl";
  // A download made before is kept while nothing it is made from changed: the run's
  // fingerprint and its change number (migration 0050: also a sample's record imported again).
  std::string name, made_at;
  if (opts.cache != nullptr) {
    name = "export:" + std::to_string(run.id) + ":" + format;
    for (const auto& [k, v] : f.params()) name += "&" + k + "=" + v;
    KF_TRY(made_at, run_fingerprint(db, run.id));
    KF_TRY(std::int64_t mark, outcome_change_mark(db, run.id));
    made_at += std::to_string(mark);
    if (auto kept = opts.cache->find_part(name, made_at)) {
      r.body = *kept;
      return r;
    }
  }
  eo.keys.emplace();
  for (const auto& row : sel.rows) eo.keys->insert(row.o->key);
  KF_CHECK(export_lines(db, run.tag, eo, [&](std::string_view line) -> Status {
    if (r.body.size() + line.size() > kMaxDownload)
      return fail("usage",
                  "the download is over 256 MiB; run the export command of the "
                  "samples page instead");
    r.body += line;
    return {};
  }));
  if (opts.cache != nullptr && r.body.size() <= kMaxKept)
    opts.cache->put_part(name, made_at, r.body);
  return r;
}

}  // namespace kforge::report::viewer
