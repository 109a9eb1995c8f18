// The samples of a run: filtered (the facets and the full-text search of migration 0036),
// sorted by any column, and paged, with each filter's values and counts.

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <unordered_set>

#include "kforge/report/compare.hpp"
#include "kforge/report/outcomes.hpp"
#include "labels.hpp"
#include "queries.hpp"
#include "viewer_impl.hpp"

namespace kforge::report::viewer {

namespace {

// The columns a table sorts by: the parameter's value and the header it sorts.
const std::vector<std::pair<std::string, std::string>>& sort_columns() {
  static const std::vector<std::pair<std::string, std::string>> columns = {
      {"key", "sample"},
      {"outcome", "outcome"},
      {"round", "round"},
      {"speedup", "speedup"},
      {"mutation", "kernel mutants killed"},
      {"share", "kernel share"},
      {"group", "near-duplicate group"},
      {"tokens", "tokens"},
      {"cost", "cost"}};
  return columns;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Result<int> whole(const ViewRequest& req, const std::string& name, int min, int fallback) {
  std::string v = param(req, name);
  if (v.empty()) return fallback;
  int n = 0;
  std::size_t used = 0;
  try {
    n = std::stoi(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || n < min)
    return fail("usage", "parameter '" + name + "' must be a whole number of at least " +
                             std::to_string(min) + ", got '" + v + "'");
  return n;
}

// The words of a search: its runs of non-space characters.
std::vector<std::string> words_of(std::string_view q) {
  std::vector<std::string> out;
  std::string w;
  for (char c : q) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!w.empty()) out.push_back(std::move(w));
      w.clear();
    } else {
      w += c;
    }
  }
  if (!w.empty()) out.push_back(std::move(w));
  return out;
}

// The samples of the run whose texts hold `word` (search_text: trigrams, so only words of three
// or more characters match there). The word is one quoted FTS5 string: no operator of the
// query language can be spelled in it.
Result<std::unordered_set<std::int64_t>> text_matches(store::Db& db, std::int64_t run_id,
                                                      const std::string& word) {
  std::unordered_set<std::int64_t> ids;
  std::size_t chars = 0;
  for (char c : word) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  if (chars < 3) return ids;
  std::string phrase = "\"";
  for (char c : word) phrase += c == '"' ? std::string("\"\"") : std::string(1, c);
  phrase += "\"";
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_search"]));
  s.bind(1, run_id);
  s.bind(2, phrase);
  s.bind(3, word);  // the answers not yet indexed (migration 0052) are matched by the word itself
  KF_CHECK(s.each([&](store::Stmt& r) { ids.insert(r.int64(0)); }));
  return ids;
}

double speed_of(const SampleOutcome& o) {
  return o.speedup.value_or(-1);
}
double share_of(const SampleOutcome& o) {
  return o.kernel_share.value_or(-1);
}
std::int64_t group_of(const SampleOutcome& o) {
  return o.dup_group.value_or(-1);
}
double mutation_of(const SampleOutcome& o) {
  return o.kernel_applicable && *o.kernel_applicable > 0
             ? static_cast<double>(o.kernel_killed.value_or(0)) /
                   static_cast<double>(*o.kernel_applicable)
             : -1;
}

// Sorts rows in the filter's order; ties by key. The column's value is read once a row, not
// once a comparison, and rows already in key order (the outcomes are read by key) are not sorted
// again for the default order.
void sort_rows(std::vector<Row>& rows, const std::string& sort, bool desc) {
  auto by_key = [](const Row& x, const Row& y) { return x.o->key < y.o->key; };
  if (sort == "key") {
    if (!std::is_sorted(rows.begin(), rows.end(), by_key))
      std::sort(rows.begin(), rows.end(), by_key);  // keys are unique: no tie to keep
    if (desc) std::reverse(rows.begin(), rows.end());
    return;
  }
  std::function<double(const Row&)> value;
  if (sort == "outcome")
    value = [](const Row& r) { return static_cast<double>(r.o->category()); };
  else if (sort == "round")
    value = [](const Row& r) { return static_cast<double>(r.o->repair_round); };
  else if (sort == "cost")
    value = [](const Row& r) { return r.o->cost_usd; };
  else if (sort == "tokens")
    value = [](const Row& r) { return static_cast<double>(r.tokens); };
  else if (sort == "speedup")
    value = [](const Row& r) { return speed_of(*r.o); };
  else if (sort == "mutation")
    value = [](const Row& r) { return mutation_of(*r.o); };
  else if (sort == "share")
    value = [](const Row& r) { return share_of(*r.o); };
  else if (sort == "group")
    value = [](const Row& r) { return static_cast<double>(group_of(*r.o)); };
  else
    value = [](const Row&) { return 0.0; };
  std::vector<std::pair<double, std::size_t>> order;
  order.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) order.emplace_back(value(rows[i]), i);
  std::sort(order.begin(), order.end(), [&](const auto& x, const auto& y) {
    if (x.first != y.first) return desc ? x.first > y.first : x.first < y.first;
    return rows[x.second].o->key < rows[y.second].o->key;
  });
  std::vector<Row> sorted;
  sorted.reserve(rows.size());
  for (const auto& [v, i] : order) sorted.push_back(std::move(rows[i]));
  rows = std::move(sorted);
}

}  // namespace

Params Filter::params() const {
  return {{"tag", tag},
          {"verdict", verdict},
          {"flag", flag},
          {"failure", failure},
          {"round", round},
          {"cause", cause},
          {"group", group},
          {"q", q},
          {"sort", sort == "key" ? "" : sort},
          {"desc", desc ? "1" : ""}};
}

Result<Filter> parse_filter(const ViewRequest& req) {
  Filter f;
  f.tag = param(req, "tag");
  if (f.tag.empty()) return fail("usage", "the run page needs a tag (/run?tag=TAG)");
  f.verdict = param(req, "verdict");
  f.flag = param(req, "flag");
  f.failure = param(req, "failure");
  f.cause = param(req, "cause");
  f.round = param(req, "round");
  f.group = param(req, "group");
  f.q = param(req, "q");
  if (std::string s = param(req, "sort"); !s.empty()) f.sort = s;
  std::string names;
  bool known = false;
  for (const auto& [name, header] : sort_columns()) {
    known = known || name == f.sort;
    names += (names.empty() ? "" : ", ") + name;
  }
  if (!known)
    return fail("usage", "parameter 'sort' must be one of " + names + "; got '" + f.sort + "'");
  f.desc = param(req, "desc") == "1";
  KF_TRY(f.page, whole(req, "page", 1, 1));
  if (!f.round.empty()) KF_CHECK(whole(req, "round", 0, 0));
  if (!f.group.empty()) KF_CHECK(whole(req, "group", 1, 1));
  if (!f.verdict.empty()) {
    known = false;
    names.clear();
    for (Category c : all_categories()) {
      known = known || to_string(c) == f.verdict;
      names += (names.empty() ? "" : ", ") + std::string(to_string(c));
    }
    if (!known)
      return fail("usage",
                  "parameter 'verdict' must be one of " + names + "; got '" + f.verdict + "'");
  }
  return f;
}

Result<Selection> select_samples(store::Db& db, const RunInfo& run,
                                 const std::vector<SampleOutcome>& outcomes, const Filter& f) {
  // Each word of the search matches a sample whose key holds it or one of whose texts does.
  const std::vector<std::string> words = words_of(f.q);
  std::vector<std::string> lowered;
  std::vector<std::unordered_set<std::int64_t>> texts;
  for (const auto& w : words) {
    lowered.push_back(lower(w));
    KF_TRY(auto ids, text_matches(db, run.id, w));
    texts.push_back(std::move(ids));
  }
  Selection sel;
  sel.rows.reserve(outcomes.size());
  // Counted by value first, named once at the end: a map looked up by text for each sample of a
  // run was most of a page's time.
  std::vector<int> by_category(all_categories().size(), 0);
  std::map<std::string_view, int> by_cause;
  std::map<int, int> by_round;
  for (const auto& o : outcomes) {
    Row r;
    r.o = &o;
    const Category c = o.category();
    r.outcome = to_string(c);
    if (c == Category::llm_error || c == Category::parse_error || c == Category::rejected ||
        c == Category::other) {
      auto counted = sel.failures.try_emplace(stage_failure(o), 0).first;
      ++counted->second;
      r.failure = counted->first;
    }
    if (o.verdict && *o.verdict != kPassed) r.cause = verdict_cause(o.flags);
    r.tokens = o.prompt_tokens + o.completion_tokens;
    ++by_category[static_cast<std::size_t>(c)];
    for (const auto& fl : o.flags) ++sel.flags[fl];
    if (!r.cause.empty()) ++by_cause[r.cause];
    ++by_round[o.repair_round];
    if (!f.verdict.empty() && r.outcome != f.verdict) continue;
    if (!f.flag.empty() && std::find(o.flags.begin(), o.flags.end(), f.flag) == o.flags.end())
      continue;
    if (!f.failure.empty() && r.failure != f.failure) continue;
    if (!f.cause.empty() && r.cause != f.cause) continue;
    if (!f.round.empty() && std::to_string(o.repair_round) != f.round) continue;
    if (!f.group.empty() && (!o.dup_group || std::to_string(*o.dup_group) != f.group)) continue;
    bool found = true;
    std::string key;
    if (!words.empty()) key = lower(o.key);
    for (std::size_t i = 0; found && i < words.size(); ++i)
      found = key.find(lowered[i]) != std::string::npos || texts[i].count(o.sample_id) > 0;
    if (!found) continue;
    sel.rows.push_back(r);
  }
  for (Category c : all_categories())
    if (int n = by_category[static_cast<std::size_t>(c)]; n > 0)
      sel.outcomes[std::string(to_string(c))] = n;
  for (const auto& [cause, n] : by_cause) sel.causes[std::string(cause)] = n;
  for (const auto& [round, n] : by_round) sel.rounds[std::to_string(round)] = n;
  sort_rows(sel.rows, f.sort, f.desc);
  return sel;
}

namespace {

// <select name=NAME> with "any" and each value with its count; the chosen one selected.
std::string facet(const std::string& name, const std::string& label,
                  const std::map<std::string, int>& counts, const std::string& chosen) {
  std::string s =
      "<label>" + label + " <select name=\"" + name + "\"><option value=\"\">any</option>";
  for (const auto& [v, n] : counts)
    s += "<option value=\"" + html_attr(v) + "\"" + (v == chosen ? " selected" : "") + ">" +
         html_escape(v) + " (" + std::to_string(n) + ")</option>";
  return s + "</select></label> ";
}

Params with_param(Params p, const std::string& k, const std::string& v) {
  bool found = false;
  for (auto& [pk, pv] : p)
    if (pk == k) found = (pv = v, true);
  if (!found) p.emplace_back(k, v);
  return p;
}

std::string filter_form(const Filter& f, const Selection& sel) {
  std::string h =
      "<form class=\"filters\" method=\"get\" action=\"/run\"><input type=\"hidden\" "
      "name=\"tag\" value=\"" +
      html_attr(f.tag) + "\">";
  h += facet("verdict", "outcome", sel.outcomes, f.verdict);
  h += facet("flag", "flag", sel.flags, f.flag);
  h += facet("failure", "stage failure", sel.failures, f.failure);
  h += facet("round", "repair round", sel.rounds, f.round);
  h += facet("cause", "cause", sel.causes, f.cause);
  h += "<label>search <input type=\"search\" name=\"q\" value=\"" + html_attr(f.q) +
       "\" title=\"every word in the key, code, description, wrapper, test or verifier "
       "detail\"></label> ";
  if (!f.group.empty())
    h += "<input type=\"hidden\" name=\"group\" value=\"" + html_attr(f.group) +
         "\"><span id=\"group-filter\">near-duplicate group " + html_escape(f.group) + " (" +
         link("/run", with_param(f.params(), "group", ""), "any group") + ")</span> ";
  if (f.sort != "key") h += "<input type=\"hidden\" name=\"sort\" value=\"" + f.sort + "\">";
  if (f.desc) h += "<input type=\"hidden\" name=\"desc\" value=\"1\">";
  h += "<button type=\"submit\">Filter</button> " + link("/run", {{"tag", f.tag}}, "clear") +
       "</form>";
  return h;
}

// The table's header: each sortable column a link that sorts by it (again: the other way).
std::string header(const Filter& f) {
  auto th = [&](const std::string& name, bool num) {
    std::string label;
    for (const auto& [n, l] : sort_columns())
      if (n == name) label = l;
    bool current = f.sort == name;
    Params p = with_param(f.params(), "sort", name == "key" ? "" : name);
    p = with_param(p, "desc", current && !f.desc ? "1" : "");
    std::string arrow = current ? (f.desc ? " \u25BC" : " \u25B2") : "";
    return std::string("<th") + (num ? " class=\"num\"" : "") +
           (current ? std::string(" aria-sort=\"") + (f.desc ? "descending" : "ascending") + "\""
                    : std::string()) +
           "><a class=\"sort\" href=\"" + href("/run", p) + "\">" + html_escape(label) + "</a>" +
           arrow + "</th>";
  };
  return "<tr>" + th("key", false) + th("outcome", false) + "<th>flags</th><th>stage failure</th>" +
         th("round", true) + "<th>cause</th>" + th("speedup", true) + th("mutation", true) +
         th("share", true) + th("group", true) + "<th>targets</th>" + th("tokens", true) +
         th("cost", true) + "<th>detail</th></tr>";
}

std::string row_html(const Filter& f, const Row& r) {
  const SampleOutcome& o = *r.o;
  std::string flags;
  for (const auto& fl : o.flags) flags += (flags.empty() ? "" : ", ") + detail::flag_words(fl);
  std::string detail = o.detail.value_or(o.stage_error.value_or(o.job_error.value_or("")));
  if (detail.size() > 160) detail = detail.substr(0, 157) + "...";
  // The verdict only where it says more than the outcome ("failed (error)", not "error (error)").
  std::string outcome(r.outcome);
  if (o.verdict && *o.verdict != r.outcome && r.outcome != "flagged" && r.outcome != "verified")
    outcome += " (" + *o.verdict + ")";
  std::string speed = o.speedup ? fmt::format("{:.2f}x", *o.speedup) : o.timed ? "timed" : "";
  std::string mutation = o.kernel_applicable ? fmt::format("{} / {}", o.kernel_killed.value_or(0),
                                                           *o.kernel_applicable)
                                             : "";
  std::string share = o.kernel_share ? detail::percent(*o.kernel_share) : "";
  std::string group;
  if (o.dup_group)
    group = link("/run", with_param(f.params(), "group", std::to_string(*o.dup_group)),
                 fmt::format("{} ({})", *o.dup_group, o.dup_group_size));
  std::string targets;
  for (const auto& [t, result] : o.targets)
    targets += (targets.empty() ? "" : ", ") + t + " " + result;
  Params sample = with_param(f.params(), "key", o.key);
  return "<tr class=\"c-" + std::string(r.outcome) + "\"><td class=\"key\">" +
         link("/sample", sample, o.key) + "</td><td>" + html_escape(outcome) + "</td><td>" +
         html_escape(flags) + "</td><td>" + html_escape(r.failure) + "</td><td class=\"num\">" +
         std::to_string(o.repair_round) + "</td><td>" + html_escape(r.cause) +
         "</td><td class=\"num\">" + html_escape(speed) + "</td><td class=\"num\">" +
         html_escape(mutation) + "</td><td class=\"num\">" + html_escape(share) +
         "</td><td class=\"num group\">" + group + "</td><td>" + html_escape(targets) +
         "</td><td class=\"num\">" + detail::thousands(r.tokens) + "</td><td class=\"num\">" +
         detail::money(o.cost_usd) + "</td><td class=\"detail\">" + html_escape(detail) +
         "</td></tr>";
}

}  // namespace

Result<Body> samples_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts) {
  KF_TRY(Filter f, parse_filter(req));
  KF_TRY(RunInfo run, find_run_for_client(db, f.tag));
  KF_TRY(ViewCache::Outcomes loaded, outcomes_of(db, run, opts.cache));
  const std::vector<SampleOutcome>& outcomes = *loaded;
  KF_TRY(Selection sel, select_samples(db, run, outcomes, f));
  const auto& rows = sel.rows;
  const int size = std::max(1, opts.page_size);
  const int pages = std::max<int>(1, static_cast<int>((rows.size() + size - 1) / size));
  const int page = std::min(f.page, pages);

  Body b;
  b.title = "Run " + run.tag;
  b.refresh = run.active();
  std::string& h = b.html;
  h += "<h1>Run " + html_escape(run.tag) + "</h1><p class=\"meta\">pipeline " +
       html_escape(run.pipeline) + ", model " + html_escape(run.model) + ", " +
       html_escape(run.state) + ", " + std::to_string(outcomes.size()) + " samples</p>";
  h += filter_form(f, sel);
  h += fmt::format("<p class=\"meta\" id=\"count\">{} of {} samples match; page {} of {}</p>",
                   rows.size(), outcomes.size(), page, pages);
  h += "<div class=\"wide\"><table id=\"samples\">" + header(f);
  std::size_t first = static_cast<std::size_t>(page - 1) * static_cast<std::size_t>(size);
  for (std::size_t i = first; i < rows.size() && i < first + static_cast<std::size_t>(size); ++i)
    h += row_html(f, rows[i]);
  h += "</table></div><p class=\"pages\">";
  if (page > 1)
    h += link("/run", with_param(f.params(), "page", std::to_string(page - 1)), "previous") + " ";
  if (page < pages)
    h += link("/run", with_param(f.params(), "page", std::to_string(page + 1)), "next");
  h += "</p>";
  h += export_section(f, sel, opts);
  return b;
}

}  // namespace kforge::report::viewer
