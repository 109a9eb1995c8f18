#include <spdlog/fmt/fmt.h>

#include <cmath>
#include <set>

#include "kforge/report/compare.hpp"
#include "labels.hpp"

namespace kforge::report {

namespace detail {

std::string label(std::string_view name) {
  if (name == to_string(Category::llm_error)) return "LLM error";
  if (name == to_string(Category::parse_error)) return "unparsable output";
  if (name == to_string(Category::rejected)) return "rejected by kernel facts";
  if (name == to_string(Category::other)) return "other job failure";
  if (name == "none") return "no verdict";
  if (name == "flagged") return "passed, flagged";
  return std::string(name);
}

std::string thousands(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string flag_words(std::string_view flag) {
  std::string out(flag);
  for (char& c : out)
    if (c == '_') c = ' ';
  return out;
}

std::string round_name(int round) {
  return round == 0 ? "generate" : fmt::format("repair {}", round);
}

std::string percent(double rate) {
  return fmt::format("{:.1f}%", rate * 100.0);
}

std::string speed_flags_text(const SpeedSummary& s) {
  std::string out;
  for (const auto& [name, n] : s.flags)
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", name, n);
  return out.empty() ? "-" : out;
}

std::string points(double diff) {
  return fmt::format("{:+.1f} pts", diff * 100.0);
}

std::string p_text(double p) {
  if (p >= 1.0) return "1";
  if (p >= 0.001) return fmt::format("{:.4f}", p);
  return fmt::format("{:.2g}", p);
}

std::string money(const std::optional<double>& v) {
  return v ? fmt::format("${:.4f}", *v) : "-";
}

std::string number(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "-";
}

std::vector<std::string> union_names(const Counts& a, const Counts& b) {
  std::vector<std::string> out;
  for (const Counts* c : {&a, &b})
    for (const auto& [k, n] : *c)
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
}

std::int64_t count_of(const Counts& c, const std::string& name) {
  for (const auto& [k, n] : c)
    if (k == name) return n;
  return 0;
}

const RunInfo* run_of(const Comparison& c, const std::string& tag) {
  for (const auto& r : c.runs)
    if (r.tag == tag) return &r;
  return nullptr;
}

}  // namespace detail

namespace {

using namespace detail;

void row(std::string& out, const std::string& name, const std::string& a, const std::string& b) {
  out += fmt::format("  {:<34} {:>24} {:>24}\n", name, a, b);
}

void count_rows(std::string& out, const std::string& heading, const Counts& a, const Counts& b,
                bool skip_zero) {
  auto names = union_names(a, b);
  bool any = false;
  for (const auto& n : names) any = any || count_of(a, n) > 0 || count_of(b, n) > 0;
  if (skip_zero && !any) {
    row(out, heading, "none", "none");
    return;
  }
  out += "  " + heading + "\n";
  for (const auto& n : names) {
    std::int64_t x = count_of(a, n), y = count_of(b, n);
    if (skip_zero && x == 0 && y == 0) continue;
    row(out, "  " + label(n), std::to_string(x), std::to_string(y));
  }
}

// "5/13 38.5% [17.7, 64.5]"; where no difference can be called, the count only (a rate with
// an interval would be read as a result); "-" without samples.
std::string rate_cell(const RunSummary& s, bool call) {
  if (s.samples == 0) return "-";
  if (!call) return fmt::format("{}/{}", s.verified, s.samples);
  return fmt::format("{}/{} {} [{:.1f}, {:.1f}]", s.verified, s.samples, percent(s.rate),
                     s.interval.low * 100.0, s.interval.high * 100.0);
}

// Per cross-compile target: "ok/compiled rate [CI]" (the counts only where no difference can
// be called) and what was not compiled.
void target_rows(std::string& out, const RunSummary& a, const RunSummary& b, bool call) {
  std::set<std::string> names;
  for (const auto* s : {&a, &b})
    for (const auto& t : s->targets) names.insert(t.target);
  if (names.empty()) return;
  auto cell = [call](const RunSummary& s, const std::string& name) -> std::string {
    for (const auto& t : s.targets) {
      if (t.target != name) continue;
      std::string c =
          t.ok + t.error == 0 ? std::string("-")
          : !call             ? fmt::format("{}/{}", t.ok, t.ok + t.error)
                  : fmt::format("{}/{} {} [{:.1f}, {:.1f}]", t.ok, t.ok + t.error, percent(t.rate),
                                t.interval.low * 100.0, t.interval.high * 100.0);
      if (t.unavailable > 0) c += fmt::format(" ({} unavailable)", t.unavailable);
      return c;
    }
    return "-";
  };
  out += "  compiles for (of the passing samples cross-compiled; not run there)\n";
  for (const auto& n : names) row(out, "  " + n, cell(a, n), cell(b, n));
}

// The kernel battery: killed/applicable kernel mutants over the passing samples it ran on.
void kernel_row(std::string& out, const RunSummary& a, const RunSummary& b) {
  if (a.kernel_samples == 0 && b.kernel_samples == 0) return;
  auto cell = [](const RunSummary& s) -> std::string {
    if (!s.kernel_rate)
      return s.kernel_samples ? fmt::format("0/0 ({} samples)", s.kernel_samples)
                              : std::string("-");
    return fmt::format("{}/{} {} ({} samples)", s.kernel_killed, s.kernel_applicable,
                       percent(*s.kernel_rate), s.kernel_samples);
  };
  row(out, "kernel mutants killed", cell(a), cell(b));
}

// The speed label: pass_perf over the samples timed against a reference, and the speedups'
// quartiles.
void speed_rows(std::string& out, const RunSummary& a, const RunSummary& b) {
  if (a.speed.timed == 0 && b.speed.timed == 0 && a.speed.flags.empty() && b.speed.flags.empty())
    return;
  auto pass = [](const RunSummary& s) -> std::string {
    if (s.speed.with_reference == 0)
      return s.speed.timed ? fmt::format("- ({} timed, no reference)", s.speed.timed)
                           : std::string("-");
    return fmt::format("{}/{} {} [{}, {}]", s.speed.pass_perf, s.speed.with_reference,
                       percent(s.speed.pass_perf_rate), percent(s.speed.pass_perf_interval.low),
                       percent(s.speed.pass_perf_interval.high));
  };
  auto dist = [](const RunSummary& s) -> std::string {
    const auto& q = s.speed.speedup_quantiles;
    if (q.size() != 5) return "-";
    return fmt::format("{:.2f}x ({:.2f}-{:.2f}; 10%: {:.2f}, 90%: {:.2f})", q[2], q[1], q[3], q[0],
                       q[4]);
  };
  row(out, "pass_perf (of timed with a reference)", pass(a), pass(b));
  row(out, "speedup median (quartiles)", dist(a), dist(b));
  row(out, "speed flags (passing samples)", speed_flags_text(a.speed), speed_flags_text(b.speed));
  row(out, "cost per fast verified", money(a.speed.cost_per_fast_verified),
      money(b.speed.cost_per_fast_verified));
}

void flip_list(std::string& out, const char* title, const std::vector<Flip>& flips, int limit) {
  out += fmt::format("  {} ({}):", title, flips.size());
  if (flips.empty()) {
    out += " none\n";
    return;
  }
  out += "\n";
  int shown = 0;
  for (const auto& f : flips) {
    if (shown == limit) {
      out += fmt::format("    ... and {} more (--json or --html lists all)\n",
                         static_cast<std::int64_t>(flips.size()) - limit);
      break;
    }
    out += fmt::format("    {}  ({} -> {})\n", f.key, label(to_string(f.from)),
                       label(to_string(f.to)));
    ++shown;
  }
}

std::string yield_cell(const RunSummary& s, std::size_t i) {
  if (i >= s.rounds.size()) return "-";
  const RoundYield& y = s.rounds[i];
  return fmt::format("{}/{} {} {}", y.verified, s.samples, percent(y.rate),
                     money(y.cost_per_verified));
}

// Yield after each round, cost per verified sample per round, and what repair produced.
void repair_rows(std::string& out, const PairComparison& p, int list_limit) {
  // Configured rounds that never ran say nothing: the rows appear once a repair did.
  if (!p.a.repair_ran && !p.b.repair_ran) {
    if (p.a.repair_rounds > 0 || p.b.repair_rounds > 0)
      row(out, "repair rounds (none ran)", std::to_string(p.a.repair_rounds),
          std::to_string(p.b.repair_rounds));
    return;
  }
  row(out, "repair rounds", std::to_string(p.a.repair_rounds), std::to_string(p.b.repair_rounds));
  out += "  yield after each round (verified, $ per verified)\n";
  std::size_t n = std::max(p.a.rounds.size(), p.b.rounds.size());
  for (std::size_t i = 0; i < n; ++i)
    row(out, "  after " + round_name(static_cast<int>(i)), yield_cell(p.a, i), yield_cell(p.b, i));
  row(out, "flips produced by repair", std::to_string(p.a.repaired.size()),
      std::to_string(p.b.repaired.size()));
  row(out, "unfixable (the model's answer)", std::to_string(p.a.unfixable),
      std::to_string(p.b.unfixable));
  for (const auto* s : {&p.a, &p.b}) {
    if (s->repaired.empty()) continue;
    const std::string& tag = s == &p.a ? p.tag_a : p.tag_b;
    out += fmt::format("  repaired in {} ({}):\n", tag, s->repaired.size());
    int shown = 0;
    for (const auto& f : s->repaired) {
      if (shown++ == list_limit) {
        out += fmt::format("    ... and {} more (--json or --html lists all)\n",
                           static_cast<std::int64_t>(s->repaired.size()) - list_limit);
        break;
      }
      out += fmt::format("    {}  ({} -> {} in repair {})\n", f.key, label(to_string(f.from)),
                         label(to_string(f.to)), f.round);
    }
  }
}

// Verdicts other than passed by cause, with an example of each.
void cause_rows(std::string& out, const PairComparison& p) {
  if (p.a.causes.empty() && p.b.causes.empty()) return;
  out += "  not passed, by cause\n";
  for (const char* cause : {kEnvironmentFlag, kInfrastructureFlag, kSampleCause}) {
    const VerdictCause* ca = nullptr;
    const VerdictCause* cb = nullptr;
    for (const auto& c : p.a.causes)
      if (c.cause == cause) ca = &c;
    for (const auto& c : p.b.causes)
      if (c.cause == cause) cb = &c;
    if (ca == nullptr && cb == nullptr) continue;
    std::string name = std::string(cause) == "sample" ? "sample error" : cause;
    row(out, "    " + name, std::to_string(ca ? ca->count : 0), std::to_string(cb ? cb->count : 0));
    for (const auto* c : {ca, cb}) {
      if (c == nullptr) continue;
      std::string ex = c->example.size() > 90 ? c->example.substr(0, 87) + "..." : c->example;
      out +=
          fmt::format("      e.g. {} in {}: {}\n", c->example_key, c == ca ? p.tag_a : p.tag_b, ex);
    }
  }
}

}  // namespace

std::string format_text(const Comparison& c, int list_limit) {
  std::string out;
  int conf = static_cast<int>(std::lround(c.confidence * 100.0));
  for (const auto& p : c.pairs) {
    if (!out.empty()) out += "\n";
    out += fmt::format("{} vs {} (baseline): {} samples finished in both", p.tag_b, p.tag_a,
                       p.samples);
    if (p.excluded_a > 0 || p.excluded_b > 0)
      out += fmt::format(" (not compared: {} of {}, {} of {})", p.excluded_a, p.tag_a, p.excluded_b,
                         p.tag_b);
    out += "\n";
    for (const auto& w : p.warnings) out += "warning: " + w + "\n";
    out += "\n";
    const RunInfo* ra = run_of(c, p.tag_a);
    const RunInfo* rb = run_of(c, p.tag_b);
    row(out, "", p.tag_a, p.tag_b);
    row(out, "pipeline, model", ra ? ra->pipeline + ", " + ra->model : "",
        rb ? rb->pipeline + ", " + rb->model : "");
    const bool call = p.no_call.empty();
    row(out, call ? fmt::format("verified [{}% CI]", conf) : std::string("verified"),
        rate_cell(p.a, call), rate_cell(p.b, call));
    count_rows(out, "verdicts", p.a.verdicts, p.b.verdicts, false);
    cause_rows(out, p);
    count_rows(out, "stage failures", p.a.failures, p.b.failures, false);
    count_rows(out, "stage failures by kind", p.a.failure_kinds, p.b.failure_kinds, true);
    count_rows(out, "quality flags (on passed)", p.a.flags, p.b.flags, true);
    target_rows(out, p.a, p.b, call);
    kernel_row(out, p.a, p.b);
    speed_rows(out, p.a, p.b);
    row(out, "tokens per verified", number(p.a.tokens_per_verified, 0),
        number(p.b.tokens_per_verified, 0));
    row(out, "cost per verified", money(p.a.cost_per_verified), money(p.b.cost_per_verified));
    row(out, "seconds per verified (LLM+verify)", number(p.a.seconds_per_verified, 1),
        number(p.b.seconds_per_verified, 1));
    row(out, "total cost", money(p.a.cost_usd), money(p.b.cost_usd));
    if (p.a.reasoning_tokens + p.b.reasoning_tokens + p.a.cached_prompt_tokens +
            p.b.cached_prompt_tokens >
        0) {
      row(out, "reasoning tokens", std::to_string(p.a.reasoning_tokens),
          std::to_string(p.b.reasoning_tokens));
      row(out, "cached prompt tokens", std::to_string(p.a.cached_prompt_tokens),
          std::to_string(p.b.cached_prompt_tokens));
    }
    if (p.a.mended_outputs + p.b.mended_outputs > 0)
      row(out, "answers read leniently", std::to_string(p.a.mended_outputs),
          std::to_string(p.b.mended_outputs));
    repair_rows(out, p, list_limit);
    out += "\n";
    if (!p.no_call.empty()) {
      out += "  no difference can be called: " + p.no_call + "\n";
      continue;
    }
    out += fmt::format(
        "  difference {} - {}: {} [{}% CI {:+.1f}, {:+.1f}]; exact McNemar p = {} "
        "({} lost, {} gained): {}\n",
        p.tag_b, p.tag_a, points(p.difference), conf, p.difference_interval.low * 100.0,
        p.difference_interval.high * 100.0, p_text(p.p_value), p.table.only_a, p.table.only_b,
        p.samples == 0  ? "no samples to compare"
        : p.significant ? fmt::format("significant at {:.2g}", 1.0 - c.confidence)
                        : fmt::format("not significant at {:.2g}", 1.0 - c.confidence));
    flip_list(out, ("gained by " + p.tag_b).c_str(), p.gained, list_limit);
    flip_list(out, ("lost by " + p.tag_b).c_str(), p.lost, list_limit);
  }
  return out;
}

}  // namespace kforge::report
