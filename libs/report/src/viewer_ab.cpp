// Two runs on the samples both finished: rates, the paired difference and the flips each way,
// each with links to both versions of the sample.

#include <spdlog/fmt/fmt.h>

#include "kforge/report/compare.hpp"
#include "labels.hpp"
#include "viewer_impl.hpp"

namespace kforge::report::viewer {

namespace {

std::string flips_html(const std::string& id, const std::string& title,
                       const std::vector<Flip>& flips, const std::string& tag_a,
                       const std::string& tag_b) {
  std::string h = "<h3>" + html_escape(title) + fmt::format(" ({})</h3>", flips.size());
  if (flips.empty()) return h + "<p class=\"muted\">none</p>";
  h += "<table id=\"" + id + "\"><tr><th>sample</th><th>" + html_escape(tag_a) + "</th><th>" +
       html_escape(tag_b) + "</th></tr>";
  for (const auto& f : flips)
    h += "<tr><td class=\"key\">" + html_escape(f.key) + "</td><td>" +
         link("/sample", {{"tag", tag_a}, {"key", f.key}}, std::string(to_string(f.from))) +
         "</td><td>" +
         link("/sample", {{"tag", tag_b}, {"key", f.key}}, std::string(to_string(f.to))) +
         "</td></tr>";
  return h + "</table>";
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
  for (const auto& w : p.warnings) h += "<p class=\"banner nosig\">" + html_escape(w) + "</p>";
  if (!p.no_call.empty()) h += "<p class=\"banner nosig\">" + html_escape(p.no_call) + "</p>";
  h += "<table id=\"rates\"><tr><th>run</th><th class=\"num\">verified</th>"
       "<th class=\"num\">rate</th><th class=\"num\">cost</th>"
       "<th class=\"num\">cost per verified</th></tr>";
  for (auto [tag, s] : {std::pair{&a.tag, &p.a}, std::pair{&b.tag, &p.b}})
    h += "<tr><td>" + link("/run", {{"tag", *tag}}, *tag) + "</td><td class=\"num\">" +
         fmt::format("{} / {}", s->verified, s->samples) + "</td><td class=\"num\">" +
         detail::percent(s->rate) + "</td><td class=\"num\">" + detail::money(s->cost_usd) +
         "</td><td class=\"num\">" + detail::money(s->cost_per_verified) + "</td></tr>";
  h += "</table>";
  h += "<p>difference " + html_escape(detail::points(p.difference)) +
       fmt::format(
           " [{:.1f}, {:.1f}] at {:.0f}%; exact McNemar p = ", p.difference_interval.low * 100,
           p.difference_interval.high * 100, confidence * 100) +
       html_escape(detail::p_text(p.p_value)) +
       (p.significant ? " (significant)" : " (not significant)") + "</p>";
  h += flips_html("gained", "gained: verified in " + b.tag + " only", p.gained, a.tag, b.tag);
  h += flips_html("lost", "lost: verified in " + a.tag + " only", p.lost, a.tag, b.tag);
  return body;
}

}  // namespace kforge::report::viewer
