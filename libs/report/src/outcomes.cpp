#include "kforge/report/outcomes.hpp"

#include <map>

#include "kforge/store/run_params.hpp"
#include "kforge/store/run_prompts.hpp"
#include "kforge/store/vocabulary.hpp"
#include "queries.hpp"

namespace kforge::report {

namespace {
using store::Verdict;
// The categories a verdict gives are named as the verdict, those a stage output gives as its
// status (store's tables: the one place each is spelled).
constexpr EnumName<Category> kCategoryNames[] = {
    {Category::verified, "verified"},
    {Category::flagged, "flagged"},
    {Category::failed, store::verdict_name(Verdict::failed)},
    {Category::error, store::verdict_name(Verdict::error)},
    {Category::timeout, store::verdict_name(Verdict::timeout)},
    {Category::crashed, store::verdict_name(Verdict::crashed)},
    {Category::invalid, store::verdict_name(Verdict::invalid)},
    {Category::skipped, store::verdict_name(Verdict::skipped)},
    {Category::llm_error, store::to_string(store::OutputStatus::llm_error)},
    {Category::parse_error, store::to_string(store::OutputStatus::parse_error)},
    {Category::rejected, store::to_string(store::OutputStatus::rejected)},
    {Category::other, "other"},
    {Category::unfinished, "unfinished"}};

// verification_speed.flags_json as a list (the migration's trigger keeps it a list of known
// names; anything else reads as none).
std::vector<std::string> speed_flags_of(const std::optional<std::string>& text) {
  std::vector<std::string> out;
  if (!text || *text == "[]") return out;  // most labels: no parse
  auto j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_array())
    for (const auto& f : j)
      if (f.is_string()) out.push_back(f.get<std::string>());
  return out;
}
}  // namespace

std::string_view to_string(Category c) {
  return name_of(kCategoryNames, c);
}

const std::vector<Category>& all_categories() {
  static const std::vector<Category> all = [] {
    std::vector<Category> out;
    for (const auto& e : kCategoryNames) out.push_back(e.value);
    return out;
  }();
  return all;
}

Category SampleOutcome::category() const {
  if (!finished()) return Category::unfinished;
  if (verdict) {
    auto v = value_of(store::kVerdictNames, *verdict);
    if (!v) return Category::other;
    if (*v == Verdict::passed) return flags.empty() ? Category::verified : Category::flagged;
    return *value_of(kCategoryNames, store::verdict_name(*v));  // named as its verdict
  }
  if (stage_status) {
    switch (*stage_status) {
      case store::OutputStatus::llm_error:
        return Category::llm_error;
      case store::OutputStatus::parse_error:
        return Category::parse_error;
      case store::OutputStatus::rejected:
        return Category::rejected;
      case store::OutputStatus::ok:
        break;
    }
  }
  return Category::other;
}

std::vector<std::string> RunInfo::stages(store::StageKind kind) const {
  return store::stages_of_kind(prompts, kind);
}

std::optional<int> SampleOutcome::verified_round() const {
  for (const auto& r : rounds)
    if (r.verified()) return r.round;
  return std::nullopt;
}

Result<RunInfo> find_run(store::Db& db, const std::string& tag) {
  KF_TRY(store::Stmt s, db.prepare(queries()["run_by_tag"]));
  s.bind(1, tag);
  KF_TRY(bool row, s.step());
  if (!row) {
    std::string known;
    KF_TRY(store::Stmt t, db.prepare(queries()["run_tags"]));
    KF_CHECK(t.each([&](store::Stmt& r) { known += (known.empty() ? "" : ", ") + r.text(0); }));
    return fail("not_found", "unknown tag '" + tag + "' in " + db.path() +
                                 " (known tags: " + (known.empty() ? "none" : known) + ")");
  }
  RunInfo r;
  r.id = s.int64(0);
  r.tag = s.text(1);
  r.pipeline = s.text(2);
  r.model = s.text(3);
  r.state = s.text(4);
  r.prompts = nlohmann::ordered_json::parse(s.text(5), nullptr, false);
  if (r.prompts.is_discarded())
    return fail("parse", "run '" + tag + "': runs.prompts_json is not valid JSON");
  auto params = store::parse_run_params(s.text(6));
  if (!params.ok()) return fail("parse", "run '" + tag + "': " + params.error().message);
  r.params = std::move(params.value());
  return r;
}

namespace {

// The rounds of each sample: verdicts and costs per round, attached to `out`'s outcomes.
Status attach_rounds(store::Db& db, const RunInfo& run, std::vector<SampleOutcome>& out) {
  std::map<std::int64_t, std::map<int, RoundOutcome>> rounds;
  {
    KF_TRY(store::Stmt v, db.prepare(queries()["run_round_verdicts"]));
    v.bind(1, run.id);
    KF_CHECK(v.each([&](store::Stmt& row) {
      RoundOutcome& r = rounds[row.int64(0)][static_cast<int>(row.int64(1))];
      r.verdict = row.text(2);
      auto flags = nlohmann::json::parse(row.text(3), nullptr, false);
      if (flags.is_array())
        for (const auto& f : flags)
          if (f.is_string()) r.flags.push_back(f.get<std::string>());
    }));
  }
  {
    KF_TRY(store::Stmt c, db.prepare(queries()["run_round_costs"]));
    c.bind(1, run.id);
    KF_CHECK(c.each([&](store::Stmt& row) {
      RoundOutcome& r = rounds[row.int64(0)][static_cast<int>(row.int64(1))];
      r.cost_usd = row.real(2);
      r.tokens = row.int64(3);
      r.llm_ms = row.int64(4);
    }));
  }
  for (auto& o : out) {
    auto it = rounds.find(o.sample_id);
    if (it == rounds.end()) continue;
    for (auto& [n, r] : it->second) {
      r.round = n;
      o.rounds.push_back(std::move(r));
    }
  }
  return {};
}

}  // namespace

Result<std::vector<SampleOutcome>> load_outcomes(store::Db& db, const RunInfo& run) {
  std::vector<SampleOutcome> out;
  {
    // Room for every row at once: growing the vector moves each outcome (some 40 members) again
    // at every doubling, which was a third of a 20,000-sample run's first read.
    KF_TRY(store::Stmt n, db.prepare(queries()["run_job_total"]));
    n.bind(1, run.id);
    KF_TRY(bool row, n.step());
    if (row && n.int64(0) > 0) out.reserve(static_cast<std::size_t>(n.int64(0)));
  }
  KF_TRY(store::Stmt s, db.prepare(queries()["run_outcomes"]));
  s.bind(1, run.id);
  KF_CHECK(s.each([&](store::Stmt& row) -> Status {
    SampleOutcome o;
    o.sample_id = row.int64(0);
    o.key = row.text(1);
    auto state = store::parse_job_state(row.text(2));
    if (!state.ok())
      return fail("data", "run '" + run.tag + "', sample '" + o.key +
                              "': jobs.state: " + state.error().message);
    o.state = *state;
    o.stage = row.text(3);
    o.job_error_kind = row.opt_text(4);
    o.job_error = row.opt_text(5);
    // The status of a stage output, read through store::parse_output_status.
    auto status = [&](int col) -> Result<std::optional<store::OutputStatus>> {
      if (row.is_null(col)) return std::optional<store::OutputStatus>();
      auto st = store::parse_output_status(row.text(col));
      if (!st.ok())
        return fail("data", "run '" + run.tag + "', sample '" + o.key +
                                "': stage_outputs.status: " + st.error().message);
      return std::optional<store::OutputStatus>(*st);
    };
    KF_TRY(auto latest, status(21));
    if (store::before_verifier(o.stage)) {
      o.failure_stage = o.stage;
      KF_TRY(o.stage_status, status(6));
      o.stage_error_kind = row.opt_text(7);
      o.stage_error = row.opt_text(8);
    } else if (row.is_null(9) && latest && *latest != store::OutputStatus::ok) {
      // Ended past generation with no verdict, yet the last stage output failed: a pipeline
      // that moves a failed job on still has that failure counted.
      o.failure_stage = row.text(20);
      o.stage_status = latest;
      o.stage_error_kind = row.opt_text(22);
      o.stage_error = row.opt_text(23);
    } else if (!row.is_null(9)) {
      o.verdict = row.text(9);
      const std::string flags_json = row.text(10);
      auto flags = flags_json == "[]" ? nlohmann::json::array()  // most verdicts: no parse
                                      : nlohmann::json::parse(flags_json, nullptr, false);
      bool ok = flags.is_array();
      if (ok) {
        for (const auto& f : flags) {
          if (!f.is_string()) {
            ok = false;
            break;
          }
          o.flags.push_back(f.get<std::string>());
        }
      }
      if (!ok)
        return fail("parse", "run '" + run.tag + "', sample '" + o.key +
                                 "': verifications.flags_json is not a JSON list of strings");
      o.detail = row.opt_text(11);
      const std::string targets_json = row.opt_text(28).value_or("{}");
      auto targets = targets_json == "{}" ? nlohmann::json::object()  // none cross-compiled
                                          : nlohmann::json::parse(targets_json, nullptr, false);
      if (targets.is_object())
        for (const auto& [t, r] : targets.items())
          if (r.is_string()) o.targets[t] = r.get<std::string>();
      if (!row.is_null(29) && !row.is_null(30)) {
        o.kernel_killed = row.int64(29);
        o.kernel_applicable = row.int64(30);
      }
      if (!row.is_null(31)) o.speedup = row.real(31);
      if (!row.is_null(32)) o.pass_perf = row.int64(32) == 1;
      o.timed = !row.is_null(33) && row.int64(33) == 1;
      o.speed_flags = speed_flags_of(row.opt_text(34));
      if (!row.is_null(35)) o.kernel_share = row.real(35);
    }
    if (!row.is_null(36)) {
      o.dup_group = row.int64(36);
      o.dup_group_size = row.int64(37);
    }
    o.prompt_tokens = row.int64(12);
    o.completion_tokens = row.int64(13);
    o.cost_usd = row.real(14);
    o.llm_ms = row.int64(15);
    o.llm_calls = row.int64(16);
    o.verify_ms = row.int64(17);
    o.verifications = row.int64(18);
    o.job_id = row.int64(19);
    o.repair_round = static_cast<int>(row.int64(24));
    o.mended_outputs = row.int64(25);
    o.reasoning_tokens = row.int64(26);
    o.cached_prompt_tokens = row.int64(27);
    out.push_back(std::move(o));
    return {};
  }));
  KF_CHECK(attach_rounds(db, run, out));
  return out;
}

}  // namespace kforge::report
