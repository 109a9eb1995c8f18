// One item's answer: verdict, flags, speed and mutation from the stored verification, the repair
// prompts' evidence as feedback, the reward's components and the preset's reward.

#include <algorithm>

#include "kforge/pipeline/repair.hpp"
#include "kforge/score/reward.hpp"
#include "kforge/score/service.hpp"
#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::score {

namespace {

bool has_flag(const std::vector<std::string>& flags, const char* f) {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}

Components components_of(const ItemRow& row, const std::optional<verify::SpeedLabel>& speed,
                         const std::vector<std::string>& flags) {
  Components c;
  if (!row.verdict) return c;
  c.verdict = *row.verdict;
  c.flags = flags;
  // A verdict flagged environment or infrastructure says nothing about the sample.
  c.judged = !has_flag(flags, verify::kEnvironment) && !has_flag(flags, verify::kInfrastructure);
  c.correct = c.verdict == store::verdict_name(store::Verdict::passed);
  c.ran = c.correct || c.verdict == store::verdict_name(store::Verdict::failed);
  c.verified = c.correct && flags.empty();
  if (speed) {
    c.speedup = speed->speedup;
    c.speedup_lo = speed->speedup_lo;
    c.speedup_hi = speed->speedup_hi;
    c.pass_perf = speed->pass_perf;
    // The wrapper's timed total against its kernels' sum.
    if (speed->kernels_sum_us && speed->wrapper_us && *speed->wrapper_us > 0)
      c.kernel_share = std::min(1.0, *speed->kernels_sum_us / *speed->wrapper_us);
  }
  return c;
}

}  // namespace

nlohmann::json item_result(const ItemRow& row, const std::string& preset,
                           const nlohmann::json& params,
                           const std::optional<pipeline::EvidenceTemplate>& evidence) {
  nlohmann::json out = {{"id", row.item_id},    {"status", row.outcome.value_or("waiting")},
                        {"verdict", nullptr},   {"flags", nlohmann::json::array()},
                        {"speed", nullptr},     {"mutation", nullptr},
                        {"feedback", nullptr},  {"reward", nullptr},
                        {"cached", row.cached}, {"queue_ms", nullptr},
                        {"run_ms", nullptr}};
  if (row.detail) out["detail"] = *row.detail;
  nlohmann::json report;
  std::optional<verify::HarnessReport> harness;  // the stored report, parsed
  std::vector<std::string> flags;
  if (row.verdict) {
    if (row.result_json) report = nlohmann::json::parse(*row.result_json, nullptr, false);
    if (report.is_discarded()) report = nullptr;
    if (auto parsed = verify::parse_stored_report(report); parsed.ok()) harness = *parsed;
    auto fj = nlohmann::json::parse(row.flags_json.value_or("[]"), nullptr, false);
    if (fj.is_array())
      for (const auto& f : fj)
        if (f.is_string()) flags.push_back(f.get<std::string>());
    out["verdict"] = *row.verdict;
    out["flags"] = flags;
    if (harness && harness->speed) out["speed"] = harness->speed->to_json();
    if (harness && harness->mutation) out["mutation"] = harness->mutation->raw;
    out["detail"] = row.vdetail.value_or("");
    pipeline::VerdictEvidence ev{*row.verdict,
                                 flags,
                                 row.vdetail.value_or(""),
                                 report,
                                 row.script.value_or(""),
                                 row.stderr_tail.value_or("")};
    if (evidence) {
      auto text = pipeline::render_evidence(*evidence, ev);
      out["feedback"] = text.ok() ? *text : row.vdetail.value_or("");
    } else {
      out["feedback"] = row.vdetail.value_or("");
    }
    if (row.cached) {
      out["queue_ms"] = 0;
      out["run_ms"] = 0;
    } else {
      out["queue_ms"] =
          std::max<std::int64_t>(0, row.verified_ms - row.duration_ms - row.created_ms);
      out["run_ms"] = row.duration_ms;
    }
  } else if (row.ended_ms) {
    out["queue_ms"] = *row.ended_ms - row.created_ms;
  }
  Components c = components_of(row, harness ? harness->speed : std::nullopt, flags);
  out["reward_components"] = c.to_json();
  if (auto r = reward(preset, params, c)) out["reward"] = *r;
  return out;
}

}  // namespace kforge::score
