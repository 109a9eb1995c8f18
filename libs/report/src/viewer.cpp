// The viewer's routing, page layout and the runs page.

#include <spdlog/fmt/fmt.h>

#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "huge_pages.hpp"
#include "kforge/core/clock.hpp"
#include "labels.hpp"
#include "queries.hpp"
#include "viewer_impl.hpp"

namespace kforge::report {

namespace viewer {

std::string href(std::string_view path, const Params& params) {
  std::string url(path);
  char sep = '?';
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    url += sep + url_encode(k) + "=" + url_encode(v);
    sep = '&';
  }
  return html_escape(url);
}

std::string link(std::string_view path, const Params& params, std::string_view text) {
  return "<a href=\"" + href(path, params) + "\">" + html_escape(text) + "</a>";
}

std::string param(const ViewRequest& req, const std::string& name) {
  auto it = req.params.find(name);
  return it == req.params.end() ? std::string() : it->second;
}

Result<RunInfo> find_run_for_client(store::Db& db, const std::string& tag) {
  auto run = find_run(db, tag);
  if (!run.ok() && run.error().kind == "not_found")
    return fail("not_found", "no run tagged '" + tag + "' (the runs page lists them)");
  return run;
}

Result<std::string> run_fingerprint(store::Db& db, std::int64_t run_id) {
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_run_fingerprint"]));
  s.bind(1, run_id);
  KF_TRY(bool row, s.step());
  std::string fingerprint;
  if (row)
    for (int c = 0; c < 4; ++c) fingerprint += s.opt_text(c).value_or("-") + "|";
  return fingerprint;
}

namespace {

// When the near-duplicate groups were last computed: a new grouping may change any sample's
// group, which outcome_changes does not name.
Result<std::string> dedup_stamp(store::Db& db) {
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_dedup_stamp"]));
  KF_TRY(bool row, s.step());
  return row ? s.opt_text(0).value_or("-") : std::string("-");
}

// `fresh` (the samples read again, by key) put into `all` (by key) in place: a changed sample's
// outcome replaced, one gone (changed, not read again) removed, a new one inserted in key order.
// Moves only: no outcome is copied.
void merge_in_place(std::vector<SampleOutcome>& all, std::vector<SampleOutcome>& fresh,
                    const std::unordered_set<std::int64_t>& changed) {
  std::unordered_map<std::int64_t, std::size_t> read_again;
  read_again.reserve(fresh.size());
  for (std::size_t i = 0; i < fresh.size(); ++i) read_again[fresh[i].sample_id] = i;
  std::vector<bool> placed(fresh.size(), false);
  bool gone = false;
  for (auto& o : all) {
    if (!changed.contains(o.sample_id)) continue;
    auto it = read_again.find(o.sample_id);
    if (it != read_again.end() && fresh[it->second].key == o.key) {
      o = std::move(fresh[it->second]);
      placed[it->second] = true;
    } else {
      o.sample_id = 0;  // gone (or its key changed: inserted below); no sample has id 0
      gone = true;
    }
  }
  if (gone) std::erase_if(all, [](const SampleOutcome& o) { return o.sample_id == 0; });
  const std::size_t before = all.size();
  for (std::size_t i = 0; i < fresh.size(); ++i)
    if (!placed[i]) all.push_back(std::move(fresh[i]));
  if (all.size() != before)
    std::inplace_merge(
        all.begin(), all.begin() + static_cast<std::ptrdiff_t>(before), all.end(),
        [](const SampleOutcome& a, const SampleOutcome& b) { return a.key < b.key; });
}

// A copy of a run's outcomes with room for `more`, on huge pages where the kernel offers them
// (huge_pages.hpp: 13 MB of new memory at 20,000 samples, some 3,300 page faults otherwise).
ViewCache::Kept copy_of(const std::vector<SampleOutcome>& outcomes, std::size_t more) {
  auto out = std::make_shared<std::vector<SampleOutcome>>();
  out->reserve(outcomes.size() + more);
  detail::advise_huge_pages(out->data(), out->capacity() * sizeof(SampleOutcome));
  out->insert(out->end(), outcomes.begin(), outcomes.end());
  return out;
}

// The changed samples read into `kept`'s outcomes (sorted by key), or null when a whole read is
// due: a job was deleted, or more samples changed than a whole read costs (a quarter of them).
// The outcomes are changed in place when `kept` holds the only reference to them (taken out of
// the cache, no page showing them); else into a copy, the outcomes a page shows left as they
// are. `in_place` says which.
Result<ViewCache::Kept> updated(store::Db& db, const RunInfo& run, ViewCache::Entry& kept,
                                std::int64_t& mark, bool& in_place) {
  KF_TRY(OutcomeChanges changes, outcome_changes_since(db, run.id, kept.mark));
  if (changes.removed || changes.samples.size() > kept.outcomes->size() / 4 + 64)
    return ViewCache::Kept();
  mark = changes.mark;
  in_place = false;
  if (changes.samples.empty()) return kept.outcomes;
  KF_TRY(auto fresh, load_outcomes_of(db, run, changes.samples));
  // The samples read again: those that changed, gone or not, and their neighbours read with
  // them (load_outcomes_of reads ids close together as one range).
  std::unordered_set<std::int64_t> changed(changes.samples.begin(), changes.samples.end());
  for (const auto& o : fresh) changed.insert(o.sample_id);
  // Nobody else can reach the kept outcomes when the cache gave them up (take) and no page holds
  // them (a page holds its own reference while it shows them): changed in place. Else a page's
  // outcomes stay as they are and a copy of them is changed.
  in_place = kept.outcomes.use_count() == 1;
  ViewCache::Kept out = in_place ? std::move(kept.outcomes) : copy_of(*kept.outcomes, fresh.size());
  merge_in_place(*out, fresh, changed);
  return out;
}

}  // namespace

Result<ViewCache::Outcomes> outcomes_of(store::Db& db, const RunInfo& run, ViewCache* cache) {
  std::string fingerprint, dedup;
  std::shared_ptr<std::mutex> lock;
  std::unique_lock<std::mutex> reading;
  std::int64_t mark = 0;
  if (cache != nullptr) {
    KF_TRY(fingerprint, run_fingerprint(db, run.id));
    if (auto hit = cache->find(run.id, fingerprint)) return hit;
    // Another thread may be reading this run: wait for it, then look again (the run may also
    // have moved meanwhile: the fingerprint is read again).
    lock = cache->read_lock(run.id);
    reading = std::unique_lock<std::mutex>(*lock);
    KF_TRY(fingerprint, run_fingerprint(db, run.id));
    if (auto hit = cache->find(run.id, fingerprint)) return hit;
    KF_TRY(dedup, dedup_stamp(db));
    // The run moved since it was read (kforged working on it): read again only the samples
    // that changed, as outcome_changes (migration 0050) numbers them.
    // Taken out of the cache (put back updated, or replaced by a whole read): while no page
    // holds them, they are updated in place.
    if (auto kept = cache->take(run.id); kept && kept->dedup == dedup) {
      bool in_place = false;
      KF_TRY(ViewCache::Kept fresh, updated(db, run, *kept, mark, in_place));
      if (fresh) {
        cache->put(run.id, fingerprint, fresh, mark, dedup, /*whole=*/false, in_place);
        return fresh;
      }
    }
    // Read before the outcomes: a change made while they are read is read again next time.
    KF_TRY(mark, outcome_change_mark(db, run.id));
  }
  KF_TRY(auto outcomes, load_outcomes(db, run));
  auto shared = std::make_shared<std::vector<SampleOutcome>>(std::move(outcomes));
  if (cache != nullptr) cache->put(run.id, fingerprint, shared, mark, dedup);
  return shared;
}

namespace {

// A line of the runs page: a run with its counts and cost.
struct RunsPageRow {
  std::int64_t id = 0;
  std::string tag, pipeline, model, state;
  std::int64_t created_ms = 0, updated_ms = 0, jobs = 0, finished = 0;
  double cost_usd = 0;
  std::int64_t tokens = 0;
};

// A count of the runs page: a name and how many.
struct Count {
  std::string name;
  std::int64_t n = 0;
};

// "name n, name n", each name as words; with `filter`, each count whose parameters it gives
// (non-empty) links to the run's samples filtered by them.
std::string counts_html(const std::vector<Count>& counts,
                        const std::function<Params(const std::string&)>& filter = nullptr) {
  std::string out;
  for (const auto& c : counts) {
    std::string text = detail::flag_words(c.name) + " " + detail::thousands(c.n);
    Params p = filter ? filter(c.name) : Params();
    out += (out.empty() ? "" : ", ") + (p.empty() ? html_escape(text) : link("/run", p, text));
  }
  return out.empty() ? std::string("-") : out;
}

// The rows of a count query bound to the run: (name, n) or, with `state`, (name, state, n) as
// "name (state)"; `clean` collects a third column's count by name.
Result<std::vector<Count>> counts_of(store::Db& db, std::string_view query, std::int64_t run_id,
                                     bool state = false,
                                     std::map<std::string, std::int64_t>* clean = nullptr) {
  KF_TRY(store::Stmt s, db.prepare(queries()[query]));
  s.bind(1, run_id);
  std::vector<Count> out;
  KF_CHECK(s.each([&](store::Stmt& r) {
    Count c{r.text(0), r.int64(state ? 2 : 1)};
    if (state) c.name += " (" + r.text(1) + ")";
    if (clean != nullptr) (*clean)[c.name] = r.int64(2);
    out.push_back(std::move(c));
  }));
  return out;
}

// A run's line of the runs page: every count a link to the samples it counts.
Result<std::string> run_row(store::Db& db, const RunsPageRow& r) {
  const std::string& tag = r.tag;
  double pct = r.jobs > 0 ? static_cast<double>(r.finished) / static_cast<double>(r.jobs) : 0;
  KF_TRY(auto phase, counts_of(db, "viewer_run_phase", r.id, true));
  std::map<std::string, std::int64_t> clean;
  KF_TRY(auto verdicts, counts_of(db, "viewer_run_verdicts", r.id, false, &clean));
  KF_TRY(auto all_flags, counts_of(db, "viewer_run_flags", r.id));
  // The flags that say a verdict is the verifier's own doing are causes, not quality flags.
  std::vector<Count> flags, causes;
  for (auto& f : all_flags)
    (f.name == kEnvironmentFlag || f.name == kInfrastructureFlag ? causes : flags)
        .push_back(std::move(f));
  const std::int64_t verified = clean[std::string(kPassed)];
  // A verdict other than passed is an outcome of its own name; passed splits into verified and
  // flagged (the quality flags' column).
  auto by_verdict = [&](const std::string& v) -> Params {
    if (v == kPassed) return {};
    return {{"tag", tag}, {"verdict", v}};
  };
  auto by = [&](const char* name) {
    return [&tag, name](const std::string& v) -> Params { return {{"tag", tag}, {name, v}}; };
  };
  double rate =
      r.finished > 0 ? static_cast<double>(verified) / static_cast<double>(r.finished) : 0;
  return "<tr><td>" + link("/run", {{"tag", tag}}, tag) + "</td><td>" + html_escape(r.pipeline) +
         "</td><td>" + html_escape(r.model) + "</td><td>" + html_escape(r.state) +
         "</td><td class=\"num\">" +
         fmt::format("{} / {} ({})", detail::thousands(r.finished), detail::thousands(r.jobs),
                     detail::percent(pct)) +
         "</td><td class=\"num\">" +
         link("/run", {{"tag", tag}, {"verdict", "verified"}},
              fmt::format("{} ({} of finished)", detail::thousands(verified),
                          detail::percent(rate))) +
         "</td><td>" + counts_html(phase) + "</td><td>" + counts_html(verdicts, by_verdict) +
         "</td><td>" + counts_html(flags, by("flag")) + "</td><td>" +
         counts_html(causes, by("cause")) + "</td><td class=\"num\">" +
         detail::thousands(r.tokens) + "</td><td class=\"num\">" + detail::money(r.cost_usd) +
         "</td><td>" + html_escape(format_utc_ms(r.created_ms)) + "</td></tr>";
}

// The run's line through the cache: its counts walk the run's verdicts, so they are counted
// again only when the run's fingerprint (or the line's own values) changed.
Result<std::string> cached_run_row(store::Db& db, const RunsPageRow& r, ViewCache* cache) {
  if (cache == nullptr) return run_row(db, r);
  KF_TRY(std::string fingerprint, run_fingerprint(db, r.id));
  fingerprint += fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", r.tag, r.pipeline, r.model, r.state,
                             r.jobs, r.finished, r.tokens, r.cost_usd, r.created_ms);
  const std::string name = "runs-row:" + std::to_string(r.id);
  if (auto hit = cache->find_part(name, fingerprint)) return *hit;
  KF_TRY(std::string row, run_row(db, r));
  cache->put_part(name, fingerprint, row);
  return row;
}

}  // namespace

Result<Body> runs_page(store::Db& db, const ViewOptions& opts) {
  std::vector<RunsPageRow> runs;
  {
    KF_TRY(store::Stmt s, db.prepare(queries()["viewer_runs"]));
    KF_CHECK(s.each([&](store::Stmt& r) {
      RunsPageRow x;
      x.id = r.int64(0);
      x.tag = r.text(1);
      x.pipeline = r.text(2);
      x.model = r.text(3);
      x.state = r.text(4);
      x.created_ms = r.int64(5);
      x.updated_ms = r.int64(6);
      x.jobs = r.int64(7);
      x.finished = r.int64(8);
      x.cost_usd = r.real(9);
      x.tokens = r.int64(10);
      runs.push_back(std::move(x));
    }));
  }
  Body b;
  b.title = "Runs";
  std::string& h = b.html;
  h += "<h1>Runs</h1><p class=\"meta\">" + std::to_string(runs.size()) + " run(s), read " +
       html_escape(format_utc_ms(opts.now_ms)) + "</p>";
  h += "<section class=\"runs\"><table id=\"runs\"><tr><th>run</th><th>pipeline</th>"
       "<th>model</th><th>state</th><th class=\"num\">finished</th>"
       "<th class=\"num\">verified</th><th>open jobs</th>"
       "<th>latest verdicts</th><th>quality flags</th><th>not the sample's</th>"
       "<th class=\"num\">tokens</th>"
       "<th class=\"num\">cost</th><th>created</th></tr>";
  for (const auto& r : runs) {
    if (r.state == store::to_string(store::RunState::active)) b.refresh = true;
    KF_TRY(std::string row, cached_run_row(db, r, opts.cache));
    h += row;
  }
  h += "</table></section>";
  if (runs.size() >= 2) {
    auto options = [&](std::size_t selected) {
      std::string o;
      for (std::size_t i = 0; i < runs.size(); ++i)
        o += "<option value=\"" + html_attr(runs[i].tag) + "\"" +
             (i == selected ? " selected" : "") + ">" + html_escape(runs[i].tag) + "</option>";
      return o;
    };
    // Runs are listed newest first: the older of the two newest is the baseline.
    h += "<section class=\"runs\"><h2>A/B</h2><form method=\"get\" action=\"/ab\">"
         "<label>baseline <select name=\"a\">" +
         options(1) + "</select></label> <label>against <select name=\"b\">" + options(0) +
         "</select></label> <button type=\"submit\">Compare</button></form></section>";
  }
  return b;
}

namespace {

std::string layout(const Body& b, const ViewOptions& opts) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  if (b.refresh && opts.refresh_seconds > 0)
    s += "<meta http-equiv=\"refresh\" content=\"" + std::to_string(opts.refresh_seconds) + "\">";
  s += "<title>" + html_escape(b.title) + " - kforge</title>";
  s += "<link rel=\"stylesheet\" href=\"/style.css\"></head><body class=\"viewer\">";
  s += "<nav><a href=\"/\">kforge</a> <span class=\"muted\">read-only viewer</span></nav>";
  s += "<main>" + b.html + "</main></body></html>\n";
  return s;
}

// The error's message for a client: the database's path, in any message, reads "the database".
ViewResponse error_page(const Error& e, const std::string& db_path, const ViewOptions& opts) {
  ViewResponse r;
  r.status = e.kind == "usage" ? 400 : e.kind == "not_found" ? 404 : 500;
  std::string message = e.message;
  if (!db_path.empty())
    for (auto at = message.find(db_path); at != std::string::npos;
         at = message.find(db_path, at + 12))
      message.replace(at, db_path.size(), "the database");
  Body b;
  b.title = r.status == 400 ? "Bad request" : r.status == 404 ? "Not found" : "Error";
  b.html = "<h1>" + b.title + "</h1><p class=\"error\">" + html_escape(message) +
           "</p><p><a href=\"/\">All runs</a></p>";
  r.body = layout(b, opts);
  return r;
}

}  // namespace

}  // namespace viewer

ViewCache::Outcomes ViewCache::find(std::int64_t run_id, const std::string& fingerprint) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->run_id != run_id) continue;
    if (it->fingerprint != fingerprint) return nullptr;
    Entry e = std::move(*it);
    entries_.erase(it);
    entries_.push_back(std::move(e));
    return entries_.back().outcomes;
  }
  return nullptr;
}

std::optional<ViewCache::Entry> ViewCache::kept(std::int64_t run_id) {
  std::lock_guard lock(mu_);
  for (const auto& e : entries_)
    if (e.run_id == run_id && e.mark >= 0) return e;
  return std::nullopt;
}

std::optional<ViewCache::Entry> ViewCache::take(std::int64_t run_id) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->run_id != run_id) continue;
    std::optional<Entry> e;
    if (it->mark >= 0) e = std::move(*it);
    entries_.erase(it);
    return e;
  }
  return std::nullopt;
}

void ViewCache::put(std::int64_t run_id, const std::string& fingerprint, Kept outcomes,
                    std::int64_t mark, const std::string& dedup, bool whole, bool in_place) {
  std::lock_guard lock(mu_);
  ++(whole ? reads_ : updates_);
  if (in_place) ++in_place_;
  std::erase_if(entries_, [&](const Entry& e) { return e.run_id == run_id; });
  entries_.push_back({run_id, fingerprint, std::move(outcomes), mark, dedup});
  while (entries_.size() > max_runs_) entries_.erase(entries_.begin());
}

std::shared_ptr<const std::string> ViewCache::find_part(const std::string& name,
                                                        const std::string& fingerprint) {
  std::lock_guard lock(mu_);
  for (auto it = parts_.begin(); it != parts_.end(); ++it) {
    if (it->name != name) continue;
    if (it->fingerprint != fingerprint) return nullptr;
    Part p = std::move(*it);
    parts_.erase(it);
    parts_.push_back(std::move(p));
    return parts_.back().text;
  }
  return nullptr;
}

void ViewCache::put_part(const std::string& name, const std::string& fingerprint,
                         std::string text) {
  std::lock_guard lock(mu_);
  std::erase_if(parts_, [&](const Part& p) { return p.name == name; });
  parts_.push_back({name, fingerprint, std::make_shared<const std::string>(std::move(text))});
  while (parts_.size() > max_parts_) parts_.erase(parts_.begin());
}

std::shared_ptr<std::mutex> ViewCache::read_lock(std::int64_t run_id) {
  std::lock_guard lock(mu_);
  auto& m = read_locks_[run_id];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

std::int64_t ViewCache::reads() const {
  std::lock_guard lock(mu_);
  return reads_;
}

std::int64_t ViewCache::updates() const {
  std::lock_guard lock(mu_);
  return updates_;
}

std::int64_t ViewCache::updates_in_place() const {
  std::lock_guard lock(mu_);
  return in_place_;
}

Result<int> warm_cache(store::Db& db, const ViewOptions& opts, int runs) {
  using namespace viewer;
  if (opts.cache == nullptr) return fail("usage", "warm_cache needs a cache");
  KF_CHECK(runs_page(db, opts));  // keeps each run's line
  std::vector<std::string> tags;
  {
    KF_TRY(store::Stmt s, db.prepare(queries()["viewer_runs"]));  // newest first
    KF_CHECK(s.each([&](store::Stmt& r) {
      if (static_cast<int>(tags.size()) < runs) tags.push_back(r.text(1));
    }));
  }
  for (const auto& tag : tags) {
    KF_TRY(RunInfo run, find_run(db, tag));
    KF_CHECK(outcomes_of(db, run, opts.cache));
  }
  return static_cast<int>(tags.size());
}

ViewResponse view(store::Db& db, const ViewRequest& req, const ViewOptions& opts) {
  using namespace viewer;
  if (req.path == "/style.css") {
    ViewResponse r;
    r.content_type = "text/css; charset=utf-8";
    r.body = std::string(template_file("report.css")) + std::string(template_file("viewer.css"));
    return r;
  }
  if (req.path == "/export" || req.path == "/keys") {
    auto download = export_download(db, req, opts);
    if (!download.ok()) return error_page(download.error(), db.path(), opts);
    return std::move(*download);
  }
  Result<Body> body =
      fail("not_found", "no page at " + req.path + " (pages: /, /run, /sample, /ab)");
  if (req.path == "/")
    body = runs_page(db, opts);
  else if (req.path == "/run")
    body = samples_page(db, req, opts);
  else if (req.path == "/sample")
    body = sample_page(db, req, opts);
  else if (req.path == "/ab")
    body = ab_page(db, req, opts);
  if (!body.ok()) return error_page(body.error(), db.path(), opts);
  ViewResponse r;
  r.body = layout(*body, opts);
  return r;
}

}  // namespace kforge::report
