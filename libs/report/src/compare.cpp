#include "kforge/report/compare.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <spdlog/fmt/fmt.h>

#include "kforge/report/export.hpp"
#include "labels.hpp"

namespace kforge::report {

const char* verdict_cause(const std::vector<std::string>& flags) {
  for (const char* f : {kEnvironmentFlag, kInfrastructureFlag})
    if (std::find(flags.begin(), flags.end(), f) != flags.end()) return f;
  return kSampleCause;
}

std::string stage_failure(const SampleOutcome& o) {
  Category c = o.category();
  if (c != Category::llm_error && c != Category::parse_error && c != Category::rejected &&
      c != Category::other)
    return "";
  std::string kind = o.stage_error_kind.value_or(o.job_error_kind.value_or(""));
  std::string stage = o.failure_stage.empty() ? o.stage : o.failure_stage;
  return stage + "/" + (kind.empty() ? std::string(to_string(c)) : kind);
}

namespace {

Counts sorted_by_count(const std::map<std::string, std::int64_t>& m) {
  Counts out(m.begin(), m.end());
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

// Yield and cost after each round; the samples repair made verified.
void summarise_rounds(const std::vector<const SampleOutcome*>& samples, const RunInfo& run,
                      RunSummary& s) {
  s.repair_rounds = run.repair_rounds();
  int last = s.repair_rounds;
  for (const SampleOutcome* o : samples)
    for (const auto& r : o->rounds) last = std::max(last, r.round);
  for (int n = 0; n <= last; ++n) {
    RoundYield y;
    y.round = n;
    for (const SampleOutcome* o : samples) {
      auto v = o->verified_round();
      if (v && *v <= n) ++y.verified;
      for (const auto& r : o->rounds)
        if (r.round <= n) y.cost_usd += r.cost_usd;
    }
    y.rate = s.samples > 0 ? static_cast<double>(y.verified) / static_cast<double>(s.samples) : 0;
    if (y.verified > 0) y.cost_per_verified = y.cost_usd / static_cast<double>(y.verified);
    s.rounds.push_back(y);
  }
  for (const SampleOutcome* o : samples) {
    if (o->repair_round > 0) s.repair_ran = true;
    for (const auto& r : o->rounds)
      if (r.round > 0) s.repair_ran = true;
    if (o->unfixable()) ++s.unfixable;
    auto v = o->verified_round();
    if (!v || *v == 0 || !o->verified()) continue;
    // What the first generation's verdict made of the sample.
    SampleOutcome first;
    first.state = store::JobState::done;
    for (const auto& r : o->rounds)
      if (r.round == 0) {
        first.verdict = r.verdict;
        first.flags = r.flags;
      }
    s.repaired.push_back({o->key, first.category(), o->category(), *v});
  }
}

// The speed labels of the passing samples: their speedups' quantiles and pass_perf.
void summarise_speed(const std::vector<const SampleOutcome*>& samples, double z, RunSummary& s) {
  SpeedSummary& sp = s.speed;
  std::vector<double> speedups;
  std::map<std::string, std::int64_t> flags;
  for (const SampleOutcome* o : samples) {
    if (!o->verdict || *o->verdict != kPassed) continue;
    for (const auto& f : o->speed_flags) ++flags[f];
    if (!o->timed) continue;
    ++sp.timed;
    if (!o->speedup) continue;
    ++sp.with_reference;
    speedups.push_back(*o->speedup);
    if (*o->speedup > 1) ++sp.faster;
    if (o->pass_perf.value_or(false)) ++sp.pass_perf;
  }
  sp.flags = sorted_by_count(flags);
  if (sp.with_reference > 0) {
    sp.pass_perf_rate = static_cast<double>(sp.pass_perf) / static_cast<double>(sp.with_reference);
    sp.pass_perf_interval = wilson(sp.pass_perf, sp.with_reference, z);
  }
  std::sort(speedups.begin(), speedups.end());
  if (!speedups.empty())
    for (double q : {0.1, 0.25, 0.5, 0.75, 0.9}) {
      double pos = q * static_cast<double>(speedups.size() - 1);
      auto lo = static_cast<std::size_t>(pos);
      std::size_t hi = std::min(lo + 1, speedups.size() - 1);
      sp.speedup_quantiles.push_back(speedups[lo] + (speedups[hi] - speedups[lo]) *
                                                        (pos - static_cast<double>(lo)));
    }
  // Verified and fast: what a user who keeps only kernels worth imitating pays for each.
  std::int64_t fast_verified = 0;
  for (const SampleOutcome* o : samples)
    if (o->verified() && o->pass_perf.value_or(false)) ++fast_verified;
  if (fast_verified > 0)
    sp.cost_per_fast_verified = s.cost_usd / static_cast<double>(fast_verified);
}

RunSummary summarise(const std::vector<const SampleOutcome*>& samples, double z,
                     const RunInfo& run) {
  RunSummary s;
  s.samples = static_cast<std::int64_t>(samples.size());
  std::map<Category, std::int64_t> by_category;
  std::map<std::string, std::int64_t> by_verdict, kinds, flags;
  std::int64_t no_verdict = 0;
  std::map<std::string, VerdictCause> causes;
  for (const SampleOutcome* o : samples) {
    Category c = o->category();
    if (o->verdict) {
      std::string cause = verdict_cause(o->flags);
      if (cause == "sample")
        ++s.sample_verdicts;
      else
        ++s.environment_verdicts;
      if (*o->verdict != kPassed) {
        VerdictCause& vc = causes[cause];
        if (vc.count++ == 0) {
          vc.cause = cause;
          vc.example_key = o->key;
          vc.example = *o->verdict + (o->detail && !o->detail->empty() ? ": " + *o->detail : "");
        }
      }
    }
    ++by_category[c];
    if (c == Category::verified) ++s.verified;
    if (o->verdict)
      ++by_verdict[*o->verdict];
    else
      ++no_verdict;
    if (o->verdict && *o->verdict == kPassed)
      for (const auto& f : o->flags) ++flags[f];
    if (std::string kind = stage_failure(*o); !kind.empty()) ++kinds[kind];
    s.prompt_tokens += o->prompt_tokens;
    s.completion_tokens += o->completion_tokens;
    s.cost_usd += o->cost_usd;
    s.llm_ms += o->llm_ms;
    s.verify_ms += o->verify_ms;
    s.llm_calls += o->llm_calls;
    s.mended_outputs += o->mended_outputs;
    s.reasoning_tokens += o->reasoning_tokens;
    s.cached_prompt_tokens += o->cached_prompt_tokens;
  }
  s.rate = s.samples > 0 ? static_cast<double>(s.verified) / static_cast<double>(s.samples) : 0;
  s.interval = wilson(s.verified, s.samples, z);
  for (Category c : all_categories())
    if (c != Category::unfinished) s.categories.emplace_back(to_string(c), by_category[c]);
  for (const auto& v : verdict_names()) s.verdicts.emplace_back(v, by_verdict[v]);
  for (const auto& [v, n] : by_verdict)
    if (std::find(verdict_names().begin(), verdict_names().end(), v) == verdict_names().end())
      s.verdicts.emplace_back(v, n);
  s.verdicts.emplace_back("none", no_verdict);
  for (Category c :
       {Category::llm_error, Category::parse_error, Category::rejected, Category::other})
    s.failures.emplace_back(to_string(c), by_category[c]);
  s.failure_kinds = sorted_by_count(kinds);
  s.flags = sorted_by_count(flags);
  if (s.verified > 0) {
    double v = static_cast<double>(s.verified);
    s.tokens_per_verified = static_cast<double>(s.prompt_tokens + s.completion_tokens) / v;
    s.cost_per_verified = s.cost_usd / v;
    s.seconds_per_verified = static_cast<double>(s.llm_ms + s.verify_ms) / 1000.0 / v;
  }
  summarise_rounds(samples, run, s);
  std::map<std::string, TargetRate> targets;
  for (const SampleOutcome* o : samples)
    for (const auto& [t, result] : o->targets) {
      TargetRate& r = targets[t];
      r.target = t;
      switch (
          value_of(store::kTargetResultNames, result).value_or(store::TargetResultKind::not_run)) {
        case store::TargetResultKind::ok:
          ++r.ok;
          if (o->verified()) ++r.verified_ok;
          break;
        case store::TargetResultKind::error:
          ++r.error;
          break;
        case store::TargetResultKind::unavailable:
          ++r.unavailable;
          break;
        case store::TargetResultKind::not_run:
          ++r.not_run;
          break;
      }
    }
  for (const SampleOutcome* o : samples) {
    if (!o->kernel_applicable || !o->verdict || *o->verdict != kPassed) continue;
    ++s.kernel_samples;
    s.kernel_killed += o->kernel_killed.value_or(0);
    s.kernel_applicable += *o->kernel_applicable;
  }
  if (s.kernel_applicable > 0)
    s.kernel_rate = static_cast<double>(s.kernel_killed) / static_cast<double>(s.kernel_applicable);
  summarise_speed(samples, z, s);
  for (auto& [t, r] : targets) {
    std::int64_t compiled = r.ok + r.error;
    r.rate = compiled > 0 ? static_cast<double>(r.ok) / static_cast<double>(compiled) : 0;
    r.interval = wilson(r.ok, compiled, z);
    s.targets.push_back(r);
  }
  for (const char* cause : {kEnvironmentFlag, kInfrastructureFlag, kSampleCause})
    if (auto it = causes.find(cause); it != causes.end()) s.causes.push_back(it->second);
  return s;
}

// Why no difference can be called between the runs, or "".
std::string no_call_reason(const std::string& tag, const RunSummary& s) {
  if (s.environment_verdicts == 0 || s.sample_verdicts > 0) return "";
  std::string why = "run " + tag + " has no verdict that depends on its samples: all " +
                    std::to_string(s.environment_verdicts) + " are ";
  bool env = false, infra = false;
  std::string example;
  for (const auto& c : s.causes) {
    if (c.cause == kEnvironmentFlag) env = true;
    if (c.cause == kInfrastructureFlag) infra = true;
    if (example.empty() && c.cause != kSampleCause)
      example = " (e.g. " + c.example_key + ": " + c.example + ")";
  }
  why += env && infra ? "environment or infrastructure errors"
         : env        ? "errors of the verifier's environment"
                      : "infrastructure errors of the verifier";
  why += example + "; ";
  if (env)
    why += "set verifier.python to a Python with torch and triton, then kforge retry " + tag +
           " --verdict error";
  else
    why +=
        "see kforge status for the verifier's ALERT, then kforge retry " + tag + " --verdict error";
  return why;
}

}  // namespace

PairComparison compare_outcomes(const RunInfo& a, const std::vector<SampleOutcome>& oa,
                                const RunInfo& b, const std::vector<SampleOutcome>& ob,
                                double confidence) {
  double z = z_for_confidence(confidence);
  PairComparison p;
  p.tag_a = a.tag;
  p.tag_b = b.tag;
  std::unordered_map<std::int64_t, const SampleOutcome*> in_b;
  for (const auto& o : ob) in_b.emplace(o.sample_id, &o);
  std::vector<const SampleOutcome*> sa, sb;
  for (const auto& o : oa) {
    auto it = in_b.find(o.sample_id);
    if (!o.finished() || it == in_b.end() || !it->second->finished()) continue;
    const SampleOutcome& x = *it->second;
    sa.push_back(&o);
    sb.push_back(&x);
    bool va = o.verified(), vb = x.verified();
    if (va && vb) {
      ++p.table.both;
    } else if (va) {
      ++p.table.only_a;
      p.lost.push_back({o.key, o.category(), x.category()});
    } else if (vb) {
      ++p.table.only_b;
      p.gained.push_back({o.key, o.category(), x.category()});
    } else {
      ++p.table.neither;
    }
  }
  p.samples = static_cast<std::int64_t>(sa.size());
  p.excluded_a = static_cast<std::int64_t>(oa.size()) - p.samples;
  p.excluded_b = static_cast<std::int64_t>(ob.size()) - p.samples;
  p.a = summarise(sa, z, a);
  p.b = summarise(sb, z, b);
  p.difference = paired_difference(p.table);
  p.difference_interval = paired_difference_interval(p.table, z);
  p.p_value = mcnemar_exact_p(p.table.only_a, p.table.only_b);
  p.significant = p.samples > 0 && p.p_value < 1.0 - confidence;
  p.no_call = no_call_reason(a.tag, p.a);
  if (std::string why_b = no_call_reason(b.tag, p.b); !why_b.empty())
    p.no_call = p.no_call.empty() ? why_b : p.no_call + "; and " + why_b;
  if (p.samples == 0)
    p.no_call = "no sample finished in both runs (" + std::to_string(oa.size()) + " in " + a.tag +
                ", " + std::to_string(ob.size()) + " in " + b.tag +
                "; compare runs over the same samples once they finished)";
  if (!p.no_call.empty()) p.significant = false;
  return p;
}

Result<Comparison> compare(store::Db& db, const std::vector<std::string>& tags,
                           const CompareOptions& opts) {
  if (tags.size() < 2) return fail("usage", "compare needs at least two tags (TAG_A TAG_B ...)");
  std::set<std::string> seen;
  for (const auto& t : tags)
    if (!seen.insert(t).second) return fail("usage", "tag '" + t + "' is given twice");
  Comparison c;
  c.confidence = opts.confidence;
  c.generated_ms = opts.now_ms;
  c.database = db.path();
  std::vector<std::vector<SampleOutcome>> outcomes;
  for (const auto& t : tags) {
    KF_TRY(RunInfo r, find_run(db, t));
    KF_TRY(auto o, load_outcomes(db, r));
    c.runs.push_back(std::move(r));
    outcomes.push_back(std::move(o));
  }
  for (std::size_t i = 1; i < c.runs.size(); ++i) {
    c.pairs.push_back(
        compare_outcomes(c.runs[0], outcomes[0], c.runs[i], outcomes[i], opts.confidence));
    c.pairs.back().warnings = pair_warnings(c.runs[0], c.runs[i]);
  }
  return c;
}

namespace {

// "first at 0.60" or "none", from params "dedup" ({"choice", "threshold"} or absent/null).
std::string dedup_text(const RunInfo& r) {
  if (!r.params.dedup) return "none";
  return fmt::format("{} at {:.2f}", r.params.dedup->choice, r.params.dedup->threshold);
}

}  // namespace

std::vector<std::string> pair_warnings(const RunInfo& a, const RunInfo& b) {
  std::vector<std::string> out;
  std::string da = dedup_text(a), db = dedup_text(b);
  if (da != db)
    out.push_back(fmt::format(
        "the runs differ in dedup ({}: {}, {}: {}): they ran over different samples, so only "
        "the samples both finished are compared, and each rate describes another corpus",
        a.tag, da, b.tag, db));
  return out;
}

namespace {

nlohmann::ordered_json counts_json(const Counts& counts) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : counts) j[k] = v;
  return j;
}

nlohmann::ordered_json opt_json(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json flips_json(const std::vector<Flip>& flips);

nlohmann::ordered_json rounds_json(const RunSummary& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& y : s.rounds)
    j.push_back({{"round", y.round},
                 {"after", detail::round_name(y.round)},
                 {"verified", y.verified},
                 {"rate", y.rate},
                 {"cost_usd", y.cost_usd},
                 {"cost_per_verified", opt_json(y.cost_per_verified)}});
  return j;
}

nlohmann::ordered_json targets_json(const RunSummary& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& t : s.targets)
    j[t.target] = {{to_string(store::TargetResultKind::ok), t.ok},
                   {to_string(store::TargetResultKind::error), t.error},
                   {to_string(store::TargetResultKind::unavailable), t.unavailable},
                   {to_string(store::TargetResultKind::not_run), t.not_run},
                   {"rate", t.rate},
                   {"interval", {t.interval.low, t.interval.high}},
                   {"verified_ok", t.verified_ok}};
  return j;
}

nlohmann::ordered_json causes_json(const RunSummary& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& c : s.causes)
    j[c.cause] = {{"count", c.count}, {"example_key", c.example_key}, {"example", c.example}};
  return j;
}

nlohmann::ordered_json speed_json(const SpeedSummary& sp) {
  nlohmann::ordered_json q = nullptr;
  if (sp.speedup_quantiles.size() == 5)
    q = {{"p10", sp.speedup_quantiles[0]},
         {"p25", sp.speedup_quantiles[1]},
         {"p50", sp.speedup_quantiles[2]},
         {"p75", sp.speedup_quantiles[3]},
         {"p90", sp.speedup_quantiles[4]}};
  return {{"timed", sp.timed},
          {"with_reference", sp.with_reference},
          {"faster", sp.faster},
          {"pass_perf", sp.pass_perf},
          {"pass_perf_rate", sp.with_reference > 0 ? nlohmann::ordered_json(sp.pass_perf_rate)
                                                   : nlohmann::ordered_json(nullptr)},
          {"pass_perf_interval", {sp.pass_perf_interval.low, sp.pass_perf_interval.high}},
          {"speedup_quantiles", q},
          {"cost_per_fast_verified", opt_json(sp.cost_per_fast_verified)},
          {"flags", counts_json(sp.flags)}};
}

nlohmann::ordered_json summary_json(const RunSummary& s) {
  nlohmann::ordered_json repaired = flips_json(s.repaired);
  for (std::size_t i = 0; i < s.repaired.size(); ++i) repaired[i]["round"] = s.repaired[i].round;
  return {{"samples", s.samples},
          {"verified", s.verified},
          {"rate", s.rate},
          {"interval", {s.interval.low, s.interval.high}},
          {"categories", counts_json(s.categories)},
          {"verdicts", counts_json(s.verdicts)},
          {"stage_failures", counts_json(s.failures)},
          {"stage_failure_kinds", counts_json(s.failure_kinds)},
          {"flags", counts_json(s.flags)},
          {"cross_compile", targets_json(s)},
          {"speed", speed_json(s.speed)},
          {"kernel_mutants",
           {{"samples", s.kernel_samples},
            {"killed", s.kernel_killed},
            {"applicable", s.kernel_applicable},
            {"rate", opt_json(s.kernel_rate)}}},
          {"prompt_tokens", s.prompt_tokens},
          {"completion_tokens", s.completion_tokens},
          {"cost_usd", s.cost_usd},
          {"llm_seconds", static_cast<double>(s.llm_ms) / 1000.0},
          {"verify_seconds", static_cast<double>(s.verify_ms) / 1000.0},
          {"llm_calls", s.llm_calls},
          {"mended_outputs", s.mended_outputs},
          {"reasoning_tokens", s.reasoning_tokens},
          {"cached_prompt_tokens", s.cached_prompt_tokens},
          {"per_verified",
           {{"tokens", opt_json(s.tokens_per_verified)},
            {"cost_usd", opt_json(s.cost_per_verified)},
            {"seconds", opt_json(s.seconds_per_verified)}}},
          {"verdict_causes", causes_json(s)},
          {"sample_verdicts", s.sample_verdicts},
          {"repair",
           {{"ran", s.repair_ran},
            {"repair_rounds", s.repair_rounds},
            {"rounds", rounds_json(s)},
            {"repaired", repaired},
            {"unfixable", s.unfixable}}}};
}

nlohmann::ordered_json flips_json(const std::vector<Flip>& flips) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& f : flips)
    j.push_back({{"key", f.key}, {"from", to_string(f.from)}, {"to", to_string(f.to)}});
  return j;
}

}  // namespace

namespace {

// The paired table, and the difference with its test only where one can be called: beside
// no_call there is no p-value or significance to misread.
nlohmann::ordered_json paired_json(const PairComparison& p) {
  using ojson = nlohmann::ordered_json;
  ojson j = {{"both_verified", p.table.both},
             {"only_a", p.table.only_a},
             {"only_b", p.table.only_b},
             {"neither", p.table.neither}};
  if (p.no_call.empty()) {
    j["difference"] = p.difference;
    j["interval"] = {p.difference_interval.low, p.difference_interval.high};
    j["mcnemar_exact_p"] = p.p_value;
    j["significant"] = p.significant;
  }
  j["no_call"] = p.no_call.empty() ? ojson(nullptr) : ojson(p.no_call);
  return j;
}

}  // namespace

nlohmann::ordered_json to_json(const Comparison& c) {
  using ojson = nlohmann::ordered_json;
  ojson runs = ojson::array();
  for (const auto& r : c.runs)
    runs.push_back({{"tag", r.tag},
                    {"pipeline", r.pipeline},
                    {"model", r.model},
                    {"repair_rounds", r.repair_rounds()},
                    {"state", r.state},
                    {"prompts", r.prompts}});
  ojson pairs = ojson::array();
  for (const auto& p : c.pairs) {
    pairs.push_back({{"a", p.tag_a},
                     {"b", p.tag_b},
                     {"samples", p.samples},
                     {"excluded", {{p.tag_a, p.excluded_a}, {p.tag_b, p.excluded_b}}},
                     {"runs", {{p.tag_a, summary_json(p.a)}, {p.tag_b, summary_json(p.b)}}},
                     {"paired", paired_json(p)},
                     {"gained", flips_json(p.gained)},
                     {"lost", flips_json(p.lost)},
                     {"warnings", p.warnings}});
  }
  return {{"confidence", c.confidence},
          {"baseline", c.runs.empty() ? "" : c.runs[0].tag},
          {"runs", runs},
          {"comparisons", pairs}};
}

}  // namespace kforge::report
