// The samples of a run: filtered, sorted and paged, with each filter's values and counts.

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "kforge/report/compare.hpp"
#include "kforge/report/outcomes.hpp"
#include "labels.hpp"
#include "viewer_impl.hpp"

namespace kforge::report::viewer {

namespace {

// One sample's values for the filters and the table.
struct Row {
  const SampleOutcome* o = nullptr;
  std::string outcome;  // the category
  std::string failure;  // stage_failure()
  std::string cause;    // verdict_cause() of a verdict other than passed, else ""
  std::int64_t tokens = 0;
};

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

// The verdict filter: empty or an outcome's name.
Status check_outcome(const std::string& f_outcome) {
  if (f_outcome.empty()) return {};
  bool known = false;
  std::string names;
  for (Category c : all_categories()) {
    known = known || to_string(c) == f_outcome;
    names += (names.empty() ? "" : ", ") + std::string(to_string(c));
  }
  if (!known)
    return fail("usage",
                "parameter 'verdict' must be one of " + names + "; got '" + f_outcome + "'");
  return {};
}

void sort_rows(std::vector<Row>& rows, const std::string& sort, bool desc) {
  // Outcomes sort in display order (all_categories()), ties by key.
  auto rank = [](const Row& r) { return static_cast<int>(r.o->category()); };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& x, const Row& y) {
    if (sort == "outcome" && rank(x) != rank(y))
      return desc ? rank(x) > rank(y) : rank(x) < rank(y);
    if (sort == "round" && x.o->repair_round != y.o->repair_round)
      return desc ? x.o->repair_round > y.o->repair_round : x.o->repair_round < y.o->repair_round;
    if (sort == "cost" && x.o->cost_usd != y.o->cost_usd)
      return desc ? x.o->cost_usd > y.o->cost_usd : x.o->cost_usd < y.o->cost_usd;
    if (sort == "tokens" && x.tokens != y.tokens)
      return desc ? x.tokens > y.tokens : x.tokens < y.tokens;
    return sort == "key" && desc ? x.o->key > y.o->key : x.o->key < y.o->key;
  });
}

// A sample's row of the table.
std::string row_html(const Row& r, const std::string& tag) {
  const SampleOutcome& o = *r.o;
  std::string flags;
  for (const auto& f : o.flags) flags += (flags.empty() ? "" : ", ") + f;
  std::string detail = o.detail.value_or(o.stage_error.value_or(o.job_error.value_or("")));
  if (detail.size() > 160) detail = detail.substr(0, 157) + "...";
  return "<tr class=\"c-" + r.outcome + "\"><td class=\"key\">" +
         link("/sample", {{"tag", tag}, {"key", o.key}}, o.key) + "</td><td>" +
         html_escape(r.outcome) + (o.verdict ? " (" + html_escape(*o.verdict) + ")" : "") +
         "</td><td>" + html_escape(flags) + "</td><td>" + html_escape(r.failure) +
         "</td><td class=\"num\">" + std::to_string(o.repair_round) + "</td><td>" +
         html_escape(r.cause) + "</td><td class=\"num\">" + std::to_string(r.tokens) +
         "</td><td class=\"num\">" + detail::money(o.cost_usd) + "</td><td class=\"detail\">" +
         html_escape(detail) + "</td></tr>";
}

}  // namespace

Result<Body> samples_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts) {
  std::string tag = param(req, "tag");
  if (tag.empty()) return fail("usage", "the run page needs a tag (/run?tag=TAG)");
  KF_TRY(RunInfo run, find_run_for_client(db, tag));
  KF_TRY(ViewCache::Outcomes loaded, outcomes_of(db, run, opts.cache));
  const std::vector<SampleOutcome>& outcomes = *loaded;
  const std::string f_outcome = param(req, "verdict"), f_flag = param(req, "flag"),
                    f_failure = param(req, "failure"), f_cause = param(req, "cause"),
                    f_round = param(req, "round"), q = param(req, "q");
  std::string sort = param(req, "sort");
  if (sort.empty()) sort = "key";
  static const std::vector<std::string> sorts = {"key", "outcome", "round", "cost", "tokens"};
  if (std::find(sorts.begin(), sorts.end(), sort) == sorts.end())
    return fail(
        "usage",
        "parameter 'sort' must be one of key, outcome, round, cost, tokens; got '" + sort + "'");
  bool desc = param(req, "desc") == "1";
  KF_TRY(int page, whole(req, "page", 1, 1));
  if (!f_round.empty()) KF_CHECK(whole(req, "round", 0, 0));
  KF_CHECK(check_outcome(f_outcome));

  std::vector<Row> rows;
  rows.reserve(outcomes.size());
  std::map<std::string, int> c_outcome, c_flag, c_failure, c_cause, c_round;
  const std::string needle = lower(q);
  for (const auto& o : outcomes) {
    Row r;
    r.o = &o;
    r.outcome = std::string(to_string(o.category()));
    r.failure = stage_failure(o);
    if (o.verdict && *o.verdict != kPassed) r.cause = verdict_cause(o.flags);
    r.tokens = o.prompt_tokens + o.completion_tokens;
    ++c_outcome[r.outcome];
    for (const auto& f : o.flags) ++c_flag[f];
    if (!r.failure.empty()) ++c_failure[r.failure];
    if (!r.cause.empty()) ++c_cause[r.cause];
    ++c_round[std::to_string(o.repair_round)];
    if (!f_outcome.empty() && r.outcome != f_outcome) continue;
    if (!f_flag.empty() && std::find(o.flags.begin(), o.flags.end(), f_flag) == o.flags.end())
      continue;
    if (!f_failure.empty() && r.failure != f_failure) continue;
    if (!f_cause.empty() && r.cause != f_cause) continue;
    if (!f_round.empty() && std::to_string(o.repair_round) != f_round) continue;
    if (!needle.empty() && lower(o.key).find(needle) == std::string::npos) continue;
    rows.push_back(std::move(r));
  }
  sort_rows(rows, sort, desc);
  const int size = std::max(1, opts.page_size);
  const int pages = std::max<int>(1, static_cast<int>((rows.size() + size - 1) / size));
  page = std::min(page, pages);

  Params current = {{"tag", tag},
                    {"verdict", f_outcome},
                    {"flag", f_flag},
                    {"failure", f_failure},
                    {"round", f_round},
                    {"cause", f_cause},
                    {"q", q},
                    {"sort", sort == "key" ? "" : sort},
                    {"desc", desc ? "1" : ""}};
  auto with = [&](const std::string& k, const std::string& v) {
    Params p = current;
    bool found = false;
    for (auto& [pk, pv] : p)
      if (pk == k) found = (pv = v, true);
    if (!found) p.emplace_back(k, v);
    return p;
  };

  Body b;
  b.title = "Run " + run.tag;
  b.refresh = run.active();
  std::string& h = b.html;
  h += "<h1>Run " + html_escape(run.tag) + "</h1><p class=\"meta\">pipeline " +
       html_escape(run.pipeline) + ", model " + html_escape(run.model) + ", " +
       html_escape(run.state) + ", " + std::to_string(outcomes.size()) + " samples</p>";
  h += "<form class=\"filters\" method=\"get\" action=\"/run\"><input type=\"hidden\" "
       "name=\"tag\" value=\"" +
       html_attr(tag) + "\">";
  h += facet("verdict", "outcome", c_outcome, f_outcome);
  h += facet("flag", "flag", c_flag, f_flag);
  h += facet("failure", "stage failure", c_failure, f_failure);
  h += facet("round", "repair round", c_round, f_round);
  h += facet("cause", "cause", c_cause, f_cause);
  h += "<label>key <input type=\"text\" name=\"q\" value=\"" + html_attr(q) + "\"></label> ";
  h += "<label>sort <select name=\"sort\">";
  for (const auto& s : sorts)
    h += "<option" + std::string(s == sort ? " selected" : "") + ">" + s + "</option>";
  h += "</select></label> <label><input type=\"checkbox\" name=\"desc\" value=\"1\"" +
       std::string(desc ? " checked" : "") + "> descending</label> ";
  h += "<button type=\"submit\">Filter</button> " + link("/run", {{"tag", tag}}, "clear") +
       "</form>";
  h += fmt::format("<p class=\"meta\" id=\"count\">{} of {} samples match; page {} of {}</p>",
                   rows.size(), outcomes.size(), page, pages);
  h += "<table id=\"samples\"><tr><th>sample</th><th>outcome</th><th>flags</th>"
       "<th>stage failure</th><th class=\"num\">round</th><th>cause</th>"
       "<th class=\"num\">tokens</th><th class=\"num\">cost</th><th>detail</th></tr>";
  std::size_t first = static_cast<std::size_t>(page - 1) * static_cast<std::size_t>(size);
  for (std::size_t i = first; i < rows.size() && i < first + static_cast<std::size_t>(size); ++i) {
    h += row_html(rows[i], tag);
  }
  h += "</table><p class=\"pages\">";
  if (page > 1) h += link("/run", with("page", std::to_string(page - 1)), "previous") + " ";
  if (page < pages) h += link("/run", with("page", std::to_string(page + 1)), "next");
  h += "</p>";
  return b;
}

}  // namespace kforge::report::viewer
