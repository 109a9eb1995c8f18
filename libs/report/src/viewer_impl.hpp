#pragma once
// The viewer's pages, one file each (viewer.cpp routes and lays them out). Private.

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

// The run's outcomes (load_outcomes), through the cache when there is one.
Result<ViewCache::Outcomes> outcomes_of(store::Db& db, const RunInfo& run, ViewCache* cache);

Result<Body> runs_page(store::Db& db, const ViewOptions& opts);
Result<Body> samples_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts);
Result<Body> sample_page(store::Db& db, const ViewRequest& req);
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
