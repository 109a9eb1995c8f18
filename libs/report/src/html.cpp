// The HTML report: one self-contained page. Charts are inline SVG sized by viewBox; colours
// and type come from templates/report.css, inlined into the page.

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "html_pair.hpp"
#include "kforge/core/clock.hpp"
#include "kforge/report/compare.hpp"
#include "kforge/report/escape.hpp"
#include "labels.hpp"
#include "queries.hpp"

namespace kforge::report {

namespace {

using namespace detail;

// Every text from the database goes through the one escaper (escape.hpp).
std::string esc(std::string_view s) {
  return html_escape(s);
}

// Geometry of the horizontal charts (viewBox units).
constexpr double kWidth = 1000;
constexpr double kLabel = 150;  // left column for run tags
constexpr double kPlot = 620;   // the 0..100% span
constexpr double kRow = 40;
constexpr double kSpeedSpan = 3;  // the speedup chart: log2 of 1/8x .. 8x

double xpos(double rate) {
  return kLabel + kPlot * std::clamp(rate, 0.0, 1.0);
}

std::string axis(double top, double bottom) {
  std::string s;
  for (int pct = 0; pct <= 100; pct += 25) {
    double x = xpos(pct / 100.0);
    s += fmt::format(R"(<line class="grid" x1="{0:.1f}" y1="{1:.1f}" x2="{0:.1f}" y2="{2:.1f}"/>)",
                     x, top, bottom);
    s += fmt::format(R"(<text class="axis" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}%</text>)",
                     x, bottom + 14, pct);
  }
  return s;
}

// Verified rate of each run: a bar to the rate and a whisker over its interval.
std::string rate_chart(const PairComparison& p) {
  const RunSummary* runs[] = {&p.a, &p.b};
  const std::string* tags[] = {&p.tag_a, &p.tag_b};
  double height = 2 * kRow + 30;
  std::string s = fmt::format(
      R"(<svg viewBox="0 0 {} {}" role="img" aria-label="verified rate with interval">)", kWidth,
      height);
  s += axis(4, 2 * kRow + 8);
  for (int i = 0; i < 2; ++i) {
    const RunSummary& r = *runs[i];
    double y = 8 + i * kRow;
    s += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", kLabel - 10, y + 17,
                     esc(*tags[i]));
    s += fmt::format(R"(<rect class="track" x="{}" y="{:.1f}" width="{}" height="24" rx="3"/>)",
                     kLabel, y, kPlot);
    s += fmt::format(R"(<rect class="bar" x="{}" y="{:.1f}" width="{:.1f}" height="24" rx="3"/>)",
                     kLabel, y, xpos(r.rate) - kLabel);
    double lo = xpos(r.interval.low), hi = xpos(r.interval.high), mid = y + 12;
    s += fmt::format(
        R"(<line class="whisker" x1="{0:.1f}" y1="{2:.1f}" x2="{1:.1f}" y2="{2:.1f}"/>)"
        R"(<line class="whisker" x1="{0:.1f}" y1="{3:.1f}" x2="{0:.1f}" y2="{4:.1f}"/>)"
        R"(<line class="whisker" x1="{1:.1f}" y1="{3:.1f}" x2="{1:.1f}" y2="{4:.1f}"/>)",
        lo, hi, mid, mid - 7, mid + 7);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{} [{:.1f}–{:.1f}] of {}</text>)",
                     kLabel + kPlot + 12, y + 17, percent(r.rate), r.interval.low * 100,
                     r.interval.high * 100, r.samples);
  }
  return s + "</svg>";
}

// What became of the compared samples in each run: one stacked bar per run.
std::string outcome_chart(const PairComparison& p) {
  const RunSummary* runs[] = {&p.a, &p.b};
  const std::string* tags[] = {&p.tag_a, &p.tag_b};
  std::string s =
      fmt::format(R"(<svg viewBox="0 0 {} {}" role="img" aria-label="outcomes by category">)",
                  kWidth, 2 * kRow + 10);
  for (int i = 0; i < 2; ++i) {
    const RunSummary& r = *runs[i];
    double y = 6 + i * kRow;
    s += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", kLabel - 10, y + 18,
                     esc(*tags[i]));
    if (r.samples == 0) {
      s += fmt::format(R"(<rect class="track" x="{}" y="{:.1f}" width="{}" height="26"/>)", kLabel,
                       y, kPlot);
      continue;
    }
    double x = kLabel;
    for (const auto& [name, n] : r.categories) {
      if (n == 0) continue;
      double w = kPlot * static_cast<double>(n) / static_cast<double>(r.samples);
      s += fmt::format(R"(<rect class="seg c-{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="26">)"
                       R"(<title>{}: {}</title></rect>)",
                       name, x, y, w, esc(label(name)), n);
      if (w >= 22)
        s += fmt::format(R"(<text class="in" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)",
                         x + w / 2, y + 18, n);
      x += w;
    }
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">{} samples</text>)", kLabel + kPlot + 12,
                     y + 18, r.samples);
  }
  return s + "</svg>";
}

std::string legend(const PairComparison& p) {
  std::string s = R"(<div class="legend">)";
  for (const auto& [name, n] : p.a.categories) {
    if (n == 0 && count_of(p.b.categories, name) == 0) continue;
    s += fmt::format(R"(<span><span class="sw c-{}"></span>{}</span>)", name, esc(label(name)));
  }
  return s + "</div>";
}

// Gained and lost samples as a diverging bar around zero (drawn for a half-width column).
std::string flip_chart(const PairComparison& p) {
  double most =
      static_cast<double>(std::max<std::int64_t>(1, std::max(p.table.only_a, p.table.only_b)));
  constexpr double kCenter = 240, kHalf = 200;
  double wl = kHalf * static_cast<double>(p.table.only_a) / most;
  double wg = kHalf * static_cast<double>(p.table.only_b) / most;
  std::string s = R"(<svg viewBox="0 0 480 74" role="img" aria-label="flipped samples">)";
  s += fmt::format(R"(<rect class="loss" x="{:.1f}" y="10" width="{:.1f}" height="28" rx="3"/>)",
                   kCenter - wl, wl);
  s += fmt::format(R"(<rect class="gain" x="{:.1f}" y="10" width="{:.1f}" height="28" rx="3"/>)",
                   kCenter, wg);
  s += fmt::format(R"(<line class="whisker" x1="{0}" y1="4" x2="{0}" y2="44"/>)", kCenter);
  s += fmt::format(R"(<text x="{:.1f}" y="64" text-anchor="end">lost by {}: {}</text>)"
                   R"(<text x="{:.1f}" y="64">gained by {}: {}</text>)",
                   kCenter - 8, esc(p.tag_b), p.table.only_a, kCenter + 8, esc(p.tag_b),
                   p.table.only_b);
  return s + "</svg>";
}

std::string card(const RunInfo* r, const std::string& tag, const RunSummary& s, bool baseline) {
  std::string sub = r ? esc(r->pipeline + " · " + r->model) : "";
  return fmt::format(
      R"(<div class="card"><div class="tag">{}{}</div><div class="sub">{}</div>)"
      R"(<div class="big">{}</div><div class="sub">{} of {} verified, interval {:.1f}–{:.1f}%</div>)"
      R"(<dl><dt>cost per verified</dt><dd>{}</dd><dt>tokens per verified</dt><dd>{}</dd>)"
      R"(<dt>seconds per verified</dt><dd>{}</dd><dt>total cost</dt><dd>{}</dd>)"
      R"(<dt>LLM calls</dt><dd>{}</dd></dl></div>)",
      esc(tag), baseline ? " <span class=\"sub\">(baseline)</span>" : "", sub, percent(s.rate),
      s.verified, s.samples, s.interval.low * 100, s.interval.high * 100,
      money(s.cost_per_verified), number(s.tokens_per_verified, 0),
      number(s.seconds_per_verified, 1), money(s.cost_usd), s.llm_calls);
}

void count_group(std::string& s, const std::string& title, const Counts& a, const Counts& b,
                 bool skip_zero) {
  auto names = union_names(a, b);
  std::string rows;
  for (const auto& n : names) {
    std::int64_t x = count_of(a, n), y = count_of(b, n);
    if (skip_zero && x == 0 && y == 0) continue;
    rows += fmt::format(R"(<tr class="sub"><td>{}</td><td class="num">{}</td>)"
                        R"(<td class="num">{}</td><td class="num">{}</td></tr>)",
                        esc(label(n)), x, y, y == x ? "0" : fmt::format("{:+}", y - x));
  }
  if (rows.empty()) rows = R"(<tr class="sub"><td colspan="4">none</td></tr>)";
  s += fmt::format(R"(<tr class="group"><td colspan="4">{}</td></tr>)", esc(title)) + rows;
}

// Per cross-compile target and result ("hip:gfx942 ok"), for count_group.
Counts target_counts(const RunSummary& s) {
  Counts c;
  for (const auto& t : s.targets) {
    using store::TargetResultKind;
    const std::pair<TargetResultKind, std::int64_t> rows[] = {
        {TargetResultKind::ok, t.ok},
        {TargetResultKind::error, t.error},
        {TargetResultKind::unavailable, t.unavailable},
        {TargetResultKind::not_run, t.not_run}};
    for (const auto& [result, n] : rows)
      c.emplace_back(t.target + " " + std::string(to_string(result)), n);
  }
  return c;
}

// The speedups' spread per run (10th, 25th, 50th, 75th, 90th percentile) as a box on a log
// scale from 1/8x to 8x, the reference's 1x marked.
std::string speedup_chart(const PairComparison& p) {
  const RunSummary* runs[] = {&p.a, &p.b};
  const std::string* tags[] = {&p.tag_a, &p.tag_b};
  auto x = [](double v) {
    double l = std::clamp(std::log2(std::max(v, 1e-9)), -kSpeedSpan, kSpeedSpan);
    return kLabel + kPlot * (l + kSpeedSpan) / (2 * kSpeedSpan);
  };
  std::string s = fmt::format(
      R"(<svg viewBox="0 0 {} {}" role="img" aria-label="speedups over the reference">)", kWidth,
      2 * kRow + 30);
  for (double v : {0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0}) {
    s += fmt::format(R"(<line class="{}" x1="{:.1f}" y1="4" x2="{:.1f}" y2="{}"/>)",
                     v == 1.0 ? "whisker" : "grid", x(v), x(v), 2 * kRow + 8);
    s += fmt::format(R"(<text class="axis" x="{:.1f}" y="{}" text-anchor="middle">{}x</text>)",
                     x(v), 2 * kRow + 22,
                     v < 1 ? fmt::format("1/{:.0f}", 1 / v) : fmt::format("{:.0f}", v));
  }
  for (int i = 0; i < 2; ++i) {
    const auto& q = runs[i]->speed.speedup_quantiles;
    double y = 8 + i * kRow;
    s += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", kLabel - 10, y + 17,
                     esc(*tags[i]));
    if (q.size() != 5) {
      s += fmt::format(R"(<text class="axis" x="{:.1f}" y="{:.1f}">no speedups</text>)", kLabel + 8,
                       y + 17);
      continue;
    }
    double mid = y + 12;
    s +=
        fmt::format(R"(<line class="whisker" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)"
                    R"(<rect class="bar" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="24" rx="3"/>)"
                    R"(<line class="median" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)",
                    x(q[0]), mid, x(q[4]), mid, x(q[1]), y, std::max(1.0, x(q[3]) - x(q[1])),
                    x(q[2]), y, x(q[2]), y + 24);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}">median {:.2f}x ({} timed)</text>)",
                     kLabel + kPlot + 12, y + 17, q[2], runs[i]->speed.with_reference);
  }
  return s + "</svg>";
}

// The kernel battery's rate and the speed label, per run.
std::string quality_section(const PairComparison& p) {
  const RunSummary& a = p.a;
  const RunSummary& b = p.b;
  bool battery = a.kernel_samples > 0 || b.kernel_samples > 0;
  bool speed =
      a.speed.timed > 0 || b.speed.timed > 0 || !a.speed.flags.empty() || !b.speed.flags.empty();
  if (!battery && !speed) return "";
  std::string s = "<h3>Kernel battery and speed</h3>";
  s += fmt::format(R"(<table><tr><th></th><th class="num">{}</th><th class="num">{}</th></tr>)",
                   esc(p.tag_a), esc(p.tag_b));
  auto row = [&s](const std::string& what, const std::string& x, const std::string& y) {
    s += fmt::format(R"(<tr><td>{}</td><td class="num">{}</td><td class="num">{}</td></tr>)",
                     esc(what), x, y);
  };
  if (battery) {
    auto kernel = [](const RunSummary& r) -> std::string {
      if (!r.kernel_rate)
        return r.kernel_samples ? fmt::format("0/0 ({} samples)", r.kernel_samples) : "-";
      return fmt::format("{}/{} {} ({} samples)", r.kernel_killed, r.kernel_applicable,
                         percent(*r.kernel_rate), r.kernel_samples);
    };
    row("kernel mutants killed (the battery's rate)", kernel(a), kernel(b));
  }
  if (speed) {
    auto pass = [](const RunSummary& r) -> std::string {
      if (r.speed.with_reference == 0) return "-";
      return fmt::format("{}/{} {} [{:.1f}–{:.1f}%]", r.speed.pass_perf, r.speed.with_reference,
                         percent(r.speed.pass_perf_rate), r.speed.pass_perf_interval.low * 100,
                         r.speed.pass_perf_interval.high * 100);
    };
    auto dist = [](const RunSummary& r) -> std::string {
      const auto& q = r.speed.speedup_quantiles;
      if (q.size() != 5) return "-";
      return fmt::format("{:.2f}x ({:.2f}–{:.2f}; 10%: {:.2f}, 90%: {:.2f})", q[2], q[1], q[3],
                         q[0], q[4]);
    };
    auto faster = [](const RunSummary& r) -> std::string {
      if (r.speed.with_reference == 0) return "-";
      return fmt::format("{}/{}", r.speed.faster, r.speed.with_reference);
    };
    row("samples timed (with a reference)",
        fmt::format("{} ({})", a.speed.timed, a.speed.with_reference),
        fmt::format("{} ({})", b.speed.timed, b.speed.with_reference));
    row("pass_perf (of timed with a reference)", pass(a), pass(b));
    row("faster than the reference", faster(a), faster(b));
    row("speedup median (quartiles)", dist(a), dist(b));
    row("speed flags (passing samples)", esc(speed_flags_text(a.speed)),
        esc(speed_flags_text(b.speed)));
    row("cost per fast verified sample", money(a.speed.cost_per_fast_verified),
        money(b.speed.cost_per_fast_verified));
  }
  s += "</table>";
  if (speed) s += speedup_chart(p);
  return s;
}

std::string flips_list(const std::vector<Flip>& flips) {
  if (flips.empty()) return "<p class=\"sub\">none</p>";
  std::string s = R"(<ul class="flips">)";
  for (const auto& f : flips)
    s += fmt::format(R"(<li><code>{}</code> <span class="from-to">{} → {}</span></li>)", esc(f.key),
                     esc(label(to_string(f.from))), esc(label(to_string(f.to))));
  return s + "</ul>";
}

std::string prompts_cell(const nlohmann::ordered_json& prompts) {
  if (!prompts.is_object() || prompts.empty()) return "-";
  std::string s;
  for (const auto& [stage, v] : prompts.items()) {
    std::string version = v.is_object() && v.contains("version") && v["version"].is_string()
                              ? v["version"].get<std::string>()
                              : "";
    std::string sha = v.is_object() && v.contains("sha256") && v["sha256"].is_string()
                          ? v["sha256"].get<std::string>().substr(0, 12)
                          : "";
    s += fmt::format("{}<code>{}</code> {} <code>{}</code>", s.empty() ? "" : "<br>", esc(stage),
                     esc(version), esc(sha));
  }
  return s;
}

}  // namespace

namespace detail {

std::string pair_section(const Comparison& c, const PairComparison& p) {
  int conf = static_cast<int>(std::lround(c.confidence * 100.0));
  std::string s = R"(<section class="pair">)";
  s += fmt::format("<h2>{} vs {}</h2>", esc(p.tag_b), esc(p.tag_a));
  s += fmt::format(R"(<p class="meta">{} samples finished in both runs)", p.samples);
  if (p.excluded_a > 0 || p.excluded_b > 0)
    s += fmt::format("; not compared: {} of {}, {} of {} (unfinished, or not in the other run)",
                     p.excluded_a, esc(p.tag_a), p.excluded_b, esc(p.tag_b));
  s += ".</p>";
  for (const auto& w : p.warnings) s += fmt::format(R"(<p class="meta">warning: {}</p>)", esc(w));
  std::string cls = p.significant ? (p.difference > 0 ? "sig" : "worse") : "nosig";
  std::string verdict =
      p.samples == 0
          ? "no samples to compare"
          : fmt::format("{} at {:.2g}", p.significant ? "significant" : "not significant",
                        1.0 - c.confidence);
  if (!p.no_call.empty())
    s += R"(<div class="banner worse"><b>No difference can be called</b>: )" + esc(p.no_call) +
         ".</div>";
  else
    s += fmt::format(
        R"(<div class="banner {}"><b>{} − {} = {}</b> ({}% interval {:+.1f} to {:+.1f} pts); )"
        R"(exact McNemar p = {} on {} discordant samples: <b>{}</b>.</div>)",
        cls, esc(p.tag_b), esc(p.tag_a), points(p.difference), conf,
        p.difference_interval.low * 100, p.difference_interval.high * 100, p_text(p.p_value),
        p.table.only_a + p.table.only_b, verdict);
  for (const auto* run : {&p.a, &p.b})
    for (const auto& cause : run->causes)
      if (cause.cause != "sample")
        s += fmt::format(R"(<p class="meta">{}: {} verdicts not passed for {} reasons, e.g. )"
                         R"({}: {}</p>)",
                         esc(run == &p.a ? p.tag_a : p.tag_b), cause.count, esc(cause.cause),
                         esc(cause.example_key), esc(cause.example));
  s += R"(<div class="cards">)" + card(run_of(c, p.tag_a), p.tag_a, p.a, true) +
       card(run_of(c, p.tag_b), p.tag_b, p.b, false) + "</div>";
  s += fmt::format("<h3>Verified rate, {}% interval</h3>", conf) + rate_chart(p);
  s += "<h3>Outcomes</h3>" + outcome_chart(p) + legend(p);
  s += "<h3>Paired outcomes</h3>";
  s += fmt::format(
      R"(<div class="two"><table class="paired"><tr><th></th><th>{1} verified</th>)"
      R"(<th>{1} not verified</th></tr><tr><th>{0} verified</th><td>{2}</td><td>{3}</td></tr>)"
      R"(<tr><th>{0} not verified</th><td>{4}</td><td>{5}</td></tr></table><div>{6}</div></div>)",
      esc(p.tag_a), esc(p.tag_b), p.table.both, p.table.only_a, p.table.only_b, p.table.neither,
      flip_chart(p));
  s += "<h3>Counts</h3>";
  s += fmt::format(R"(<table><tr><th></th><th class="num">{}</th><th class="num">{}</th>)"
                   R"(<th class="num">difference</th></tr>)",
                   esc(p.tag_a), esc(p.tag_b));
  count_group(s, "Verdicts", p.a.verdicts, p.b.verdicts, false);
  count_group(s, "Stage failures", p.a.failures, p.b.failures, false);
  count_group(s, "Stage failures by stage and kind", p.a.failure_kinds, p.b.failure_kinds, true);
  count_group(s, "Quality flags on passed samples", p.a.flags, p.b.flags, true);
  if (!p.a.targets.empty() || !p.b.targets.empty())
    count_group(s, "Cross-compiled (compiled, not run there)", target_counts(p.a),
                target_counts(p.b), true);
  s += "</table>";
  s += quality_section(p);
  s += "<h3>Cost</h3>";
  s += fmt::format(
      R"(<table><tr><th></th><th class="num">{}</th><th class="num">{}</th></tr>)"
      R"(<tr><td>prompt + completion tokens</td><td class="num">{} + {}</td><td class="num">{} + {}</td></tr>)"
      R"(<tr><td>cost</td><td class="num">{}</td><td class="num">{}</td></tr>)"
      R"(<tr><td>LLM time, verifier time (s)</td><td class="num">{:.1f}, {:.1f}</td><td class="num">{:.1f}, {:.1f}</td></tr>)"
      R"(<tr><td>tokens per verified sample</td><td class="num">{}</td><td class="num">{}</td></tr>)"
      R"(<tr><td>cost per verified sample</td><td class="num">{}</td><td class="num">{}</td></tr>)"
      R"(<tr><td>seconds per verified sample</td><td class="num">{}</td><td class="num">{}</td></tr></table>)",
      esc(p.tag_a), esc(p.tag_b), p.a.prompt_tokens, p.a.completion_tokens, p.b.prompt_tokens,
      p.b.completion_tokens, money(p.a.cost_usd), money(p.b.cost_usd),
      static_cast<double>(p.a.llm_ms) / 1000, static_cast<double>(p.a.verify_ms) / 1000,
      static_cast<double>(p.b.llm_ms) / 1000, static_cast<double>(p.b.verify_ms) / 1000,
      number(p.a.tokens_per_verified, 0), number(p.b.tokens_per_verified, 0),
      money(p.a.cost_per_verified), money(p.b.cost_per_verified),
      number(p.a.seconds_per_verified, 1), number(p.b.seconds_per_verified, 1));
  if (p.a.repair_ran || p.b.repair_ran) {
    // Yield after each round (generate, repair 1, ...), cost per verified sample per round.
    s += "<h3>Repair rounds</h3>";
    s += fmt::format(R"(<table><tr><th>after</th><th class="num">{0} verified</th>)"
                     R"(<th class="num">{0} $ per verified</th><th class="num">{1} verified</th>)"
                     R"(<th class="num">{1} $ per verified</th></tr>)",
                     esc(p.tag_a), esc(p.tag_b));
    std::size_t n = std::max(p.a.rounds.size(), p.b.rounds.size());
    auto cells = [](const RunSummary& r, std::size_t i) {
      if (i >= r.rounds.size())
        return std::string(R"(<td class="num">-</td><td class="num">-</td>)");
      const RoundYield& y = r.rounds[i];
      return fmt::format(R"(<td class="num">{}/{} ({})</td><td class="num">{}</td>)", y.verified,
                         r.samples, percent(y.rate), money(y.cost_per_verified));
    };
    for (std::size_t i = 0; i < n; ++i)
      s += fmt::format("<tr><td>{}</td>{}{}</tr>", round_name(static_cast<int>(i)), cells(p.a, i),
                       cells(p.b, i));
    s += fmt::format(
        R"(<tr><td>repair rounds of the run</td><td class="num" colspan="2">{}</td>)"
        R"(<td class="num" colspan="2">{}</td></tr>)"
        R"(<tr><td>flips produced by repair</td><td class="num" colspan="2">{}</td>)"
        R"(<td class="num" colspan="2">{}</td></tr>)"
        R"(<tr><td>unfixable (the model's answer)</td><td class="num" colspan="2">{}</td>)"
        R"(<td class="num" colspan="2">{}</td></tr></table>)",
        p.a.repair_rounds, p.b.repair_rounds, p.a.repaired.size(), p.b.repaired.size(),
        p.a.unfixable, p.b.unfixable);
    s += fmt::format(R"(<div class="two"><div><b>Repaired in {} ({})</b>{}</div>)"
                     R"(<div><b>Repaired in {} ({})</b>{}</div></div>)",
                     esc(p.tag_a), p.a.repaired.size(), flips_list(p.a.repaired), esc(p.tag_b),
                     p.b.repaired.size(), flips_list(p.b.repaired));
  }
  s += "<h3>Flipped samples</h3>";
  s += fmt::format(R"(<div class="two"><div><b>Gained by {} ({})</b>{}</div>)"
                   R"(<div><b>Lost by {} ({})</b>{}</div></div>)",
                   esc(p.tag_b), p.gained.size(), flips_list(p.gained), esc(p.tag_b), p.lost.size(),
                   flips_list(p.lost));
  return s + "</section>";
}

}  // namespace detail

std::string render_html(const Comparison& c) {
  std::string tags;
  for (const auto& r : c.runs) tags += (tags.empty() ? "" : " vs ") + r.tag;
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  s += R"(<meta name="viewport" content="width=device-width, initial-scale=1">)";
  s += fmt::format("<title>kforge compare: {}</title><style>\n", esc(tags));
  s += template_file("report.css");
  s += "</style></head><body><main>";
  s += fmt::format("<h1>kforge compare: {}</h1>", esc(tags));
  s +=
      fmt::format(R"(<p class="meta">Baseline <b>{}</b>. Generated {} from <code>{}</code>. )"
                  R"(A sample is verified when its latest verdict is passed with no quality flag; )"
                  R"(each pair is compared on the samples both runs finished.</p>)",
                  c.runs.empty() ? "" : esc(c.runs[0].tag), esc(format_utc_ms(c.generated_ms)),
                  esc(c.database));
  s +=
      R"(<section class="runs"><h2>Runs</h2><table><tr><th>tag</th><th>pipeline</th>)"
      R"(<th>model</th><th>repair rounds</th><th>state</th><th>prompts (version, sha256)</th></tr>)";
  for (const auto& r : c.runs)
    s += fmt::format(
        "<tr><td><b>{}</b></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        esc(r.tag), esc(r.pipeline), esc(r.model), r.repair_rounds(), esc(r.state),
        prompts_cell(r.prompts));
  s += "</table></section>";
  for (const auto& p : c.pairs) s += pair_section(c, p);
  s += "<footer>kforge · intervals: Wilson score (rates), Newcombe method 10 (paired "
       "difference) · test: exact McNemar (two-sided binomial on the discordant samples)"
       "</footer></main></body></html>\n";
  return s;
}

}  // namespace kforge::report
