#pragma once
// The viewer's pages, one file each (viewer.cpp routes and lays them out). Private.

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/report/escape.hpp"
#include "kforge/report/outcomes.hpp"
#include "kforge/report/viewer.hpp"

namespace kforge::report::viewer {

using Params = std::vector<std::pair<std::string, std::string>>;

// An escaped href: path with the parameters percent-encoded ("" values left out).
std::string href(std::string_view path, const Params& params);
// <a href="...">text</a>, text escaped.
std::string link(std::string_view path, const Params& params, std::string_view text);
// A parameter's value, "" when absent.
std::string param(const ViewRequest& req, const std::string& name);
// The run tagged `tag`; when there is none, a 404 that names neither the database nor the other
// tags (a client sees the runs it may open on the runs page).
Result<RunInfo> find_run_for_client(store::Db& db, const std::string& tag);

// A page's body, or an error: kind "usage" (400), "not_found" (404), anything else (500).
// `refresh` asks for the page to reload itself (an active run).
struct Body {
  std::string title;
  std::string html;
  bool refresh = false;
};

// What changes when anything a run's pages show changes (viewer_run_fingerprint): the key the
// cache keeps the run's outcomes and page parts under.
Result<std::string> run_fingerprint(store::Db& db, std::int64_t run_id);
// The run's outcomes (load_outcomes), through the cache when there is one.
Result<ViewCache::Outcomes> outcomes_of(store::Db& db, const RunInfo& run, ViewCache* cache);

// A run's samples as the samples page filters and sorts them (viewer_samples.cpp); the sample
// page's previous/next and the exports read the same selection.
struct Filter {
  std::string tag, verdict, flag, failure, round, cause, group, q, sort = "key";
  bool desc = false;
  int page = 1;
  // The request's parameters for this filter ("" values left out), page not included.
  Params params() const;
};
// The filter a request asks for; a bad value is a "usage" error naming the parameter.
Result<Filter> parse_filter(const ViewRequest& req);
// One sample's values for the filters and the table.
// A sample's row: its texts point into static names and the selection's counts (no string of
// its own: a page makes one for each of a run's 20,000 samples).
struct Row {
  const SampleOutcome* o = nullptr;
  std::string_view outcome;  // the category
  std::string_view failure;  // stage_failure(), a key of Selection::failures
  std::string_view cause;    // verdict_cause() of a verdict other than passed, else ""
  std::int64_t tokens = 0;
};
struct Selection {
  Selection() = default;
  // Moved, never copied: rows point into `failures`' keys.
  Selection(Selection&&) = default;
  Selection& operator=(Selection&&) = default;
  Selection(const Selection&) = delete;
  Selection& operator=(const Selection&) = delete;
  std::vector<Row> rows;  // those that match, in the filter's order
  // Each filter's values over every sample of the run, with counts.
  std::map<std::string, int> outcomes, flags, failures, causes, rounds;
};
// The samples of `outcomes` that match `f` (its search through search_text, migration 0036),
// sorted as it says.
Result<Selection> select_samples(store::Db& db, const RunInfo& run,
                                 const std::vector<SampleOutcome>& outcomes, const Filter& f);

Result<Body> runs_page(store::Db& db, const ViewOptions& opts);
Result<Body> samples_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts);
Result<Body> sample_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts);
// The filtered rows as a download: /export?tag=T&FILTERS&format=F (viewer_export.cpp).
Result<ViewResponse> export_download(store::Db& db, const ViewRequest& req,
                                     const ViewOptions& opts);
// The samples page's export section: the ready commands and the download links.
std::string export_section(const Filter& f, const Selection& sel, const ViewOptions& opts);
Result<Body> ab_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts);

// A line diff of a against b (longest common subsequence): each line of either with ' ' (both),
// '-' (only in a) or '+' (only in b), in order. Texts too large to compare line by line (more
// than max_cells pairs of lines between their common head and tail) give no lines and
// `too_large`.
struct DiffLine {
  char op = ' ';
  std::string text;
};
struct Diff {
  std::vector<DiffLine> lines;
  bool too_large = false;
  int added = 0, removed = 0;
};
Diff line_diff(std::string_view a, std::string_view b, std::size_t max_cells = 4'000'000);

}  // namespace kforge::report::viewer
