// Two runs on the samples both finished: what kforge compare says of them (its HTML section:
// rates, the paired difference, causes, per-round yield, repaired and unfixable, counts, cost)
// and the flips each way, each with links to both versions of the sample.

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "html_pair.hpp"
#include "kforge/report/compare.hpp"
#include "labels.hpp"
#include "viewer_impl.hpp"

namespace kforge::report::viewer {

namespace {

// The flips each table shows unless the page asks for all (flips=all): compare's section above
// lists every flip's key already, and at 20,000 samples the tables of all of them made a page of
// megabytes.
constexpr std::size_t kFlipsShown = 100;

std::string flips_html(const std::string& id, const std::string& title,
                       const std::vector<Flip>& flips, const RunInfo& a, const RunInfo& b,
                       bool all) {
  std::string h = "<h3>" + html_escape(title) + fmt::format(" ({})</h3>", flips.size());
  if (flips.empty()) return h + "<p class=\"muted\">none</p>";
  const std::size_t shown = all ? flips.size() : std::min(flips.size(), kFlipsShown);
  h += "<table id=\"" + id + "\"><tr><th>sample</th><th>" + html_escape(a.tag) + "</th><th>" +
       html_escape(b.tag) + "</th></tr>";
  for (std::size_t i = 0; i < shown; ++i) {
    const Flip& f = flips[i];
    h += "<tr><td class=\"key\">" + html_escape(f.key) + "</td><td>" +
         link("/sample", {{"tag", a.tag}, {"key", f.key}}, std::string(to_string(f.from))) +
         "</td><td>" +
         link("/sample", {{"tag", b.tag}, {"key", f.key}}, std::string(to_string(f.to))) +
         "</td></tr>";
  }
  h += "</table>";
  if (shown < flips.size())
    h += "<p class=\"more\" id=\"" + id + "-more\">" +
         fmt::format("the first {} of {}; ", shown, flips.size()) +
         link("/ab", {{"a", a.tag}, {"b", b.tag}, {"flips", "all"}}, "show all") + "</p>";
  return h;
}

// The page of two runs: compare's section and the flips.
Result<Body> ab_body(store::Db& db, const RunInfo& a, const RunInfo& b, bool all_flips,
                     const ViewOptions& opts) {
  KF_TRY(ViewCache::Outcomes oa, outcomes_of(db, a, opts.cache));
  KF_TRY(ViewCache::Outcomes ob, outcomes_of(db, b, opts.cache));
  const double confidence = opts.confidence;
  PairComparison p = compare_outcomes(a, *oa, b, *ob, confidence);
  Body body;
  body.title = b.tag + " vs " + a.tag;
  body.refresh = a.active() || b.active();
  std::string& h = body.html;
  h += "<h1>" + html_escape(b.tag) + " vs " + html_escape(a.tag) + " (baseline)</h1>";
  h += fmt::format(
      "<p class=\"meta\">{} samples finished in both; {} of {} and {} of {} not "
      "compared (unfinished, or in one run only)</p>",
      p.samples, p.excluded_a, html_escape(a.tag), p.excluded_b, html_escape(b.tag));
  // What kforge compare says of the pair, its own section (html.cpp): causes apart from the
  // rates, per-round yield, repaired and unfixable, counts, cost.
  Comparison c;
  c.confidence = confidence;
  c.generated_ms = opts.now_ms;
  c.runs = {a, b};
  c.pairs = {p};
  h += "<div class=\"compare\" id=\"compare\">" + detail::pair_section(c, p) + "</div>";
  h += "<h2>Flips, each with both versions</h2>";
  h += flips_html("gained", "gained: verified in " + b.tag + " only", p.gained, a, b, all_flips);
  h += flips_html("lost", "lost: verified in " + a.tag + " only", p.lost, a, b, all_flips);
  return body;
}

}  // namespace

Result<Body> ab_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts) {
  std::string ta = param(req, "a"), tb = param(req, "b");
  if (ta.empty() || tb.empty())
    return fail("usage", "the A/B page needs two tags (/ab?a=BASELINE&b=OTHER)");
  if (ta == tb)
    return fail("usage", "the A/B page needs two different tags, got '" + ta + "' twice");
  KF_TRY(RunInfo a, find_run_for_client(db, ta));
  KF_TRY(RunInfo b, find_run_for_client(db, tb));
  const std::string flips = param(req, "flips");
  if (!flips.empty() && flips != "all")
    return fail("usage", "parameter 'flips' must be 'all' or absent; got '" + flips + "'");
  const bool all_flips = flips == "all";
  // The page is made again only when either run moved: compare's section walks both runs.
  std::string name, fingerprint;
  if (opts.cache != nullptr) {
    name = fmt::format("ab:{}:{}:{}", a.id, b.id, all_flips ? "all" : "first");
    KF_TRY(std::string fa, run_fingerprint(db, a.id));
    KF_TRY(std::string fb, run_fingerprint(db, b.id));
    fingerprint = fmt::format("{}#{}#{}#{}#{}", fa, fb, opts.confidence, a.state, b.state);
    if (auto hit = opts.cache->find_part(name, fingerprint)) {
      Body body;
      body.title = b.tag + " vs " + a.tag;
      body.refresh = a.active() || b.active();
      body.html = *hit;
      return body;
    }
  }
  KF_TRY(Body body, ab_body(db, a, b, all_flips, opts));
  if (opts.cache != nullptr) opts.cache->put_part(name, fingerprint, body.html);
  return body;
}

}  // namespace kforge::report::viewer
