#include "kforge/report/outcomes.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "huge_pages.hpp"
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

// What a read keeps of a sample beyond its outcome until the parts are joined.
struct Scratch {
  std::int64_t last_output = 0, stage_output = 0;  // ids: the newest output, of the job's stage
  std::string last_stage;
  std::optional<store::OutputStatus> last_status, stage_status;
  std::int64_t newest = 0;  // the newest verification's id
  std::optional<std::string> verdict, flags_json;
  // Each round's newest verification id, in the order of the outcome's rounds (round_of).
  std::vector<std::int64_t> round_newest;
};

// The outcome's round `n`, added in round order when it has none yet (with its newest
// verification id in `x`): the rounds are built in place, a handful a sample, with no map.
RoundOutcome& round_of(SampleOutcome& o, Scratch& x, int n) {
  auto it = std::lower_bound(o.rounds.begin(), o.rounds.end(), n,
                             [](const RoundOutcome& r, int round) { return r.round < round; });
  if (it != o.rounds.end() && it->round == n) return *it;
  const auto at = it - o.rounds.begin();
  x.round_newest.insert(x.round_newest.begin() + at, 0);
  it = o.rounds.insert(it, RoundOutcome{});
  it->round = n;
  return *it;
}

// A read of the outcomes of a run's samples whose ids lie in ranges: each part of the outcome
// (jobs, stage outputs, verifications, speed labels, cross-compile results) read as one index
// range and joined here by sample id.
class OutcomeReader {
 public:
  OutcomeReader(store::Db& db, const RunInfo& run) : db_(db), run_(run) {}
  // Room for n samples at once, the outcomes' and their scratch's vectors on huge pages where
  // the kernel offers them (huge_pages.hpp): each 4 KiB page of them first touched is a fault.
  void reserve(std::size_t n) {
    out_.reserve(n);
    detail::advise_huge_pages(out_.data(), out_.capacity() * sizeof(SampleOutcome));
    scratch_.reserve(n);
    detail::advise_huge_pages(scratch_.data(), scratch_.capacity() * sizeof(Scratch));
    at_.reserve(n);
  }
  Status read(std::int64_t first, std::int64_t last) {
    KF_CHECK(read_jobs(first, last));
    KF_CHECK(read_outputs(first, last));
    KF_CHECK(read_verifications(first, last));
    KF_CHECK(read_speed(first, last));
    return read_targets(first, last);
  }
  // The outcomes read, by key.
  Result<std::vector<SampleOutcome>> finish();

 private:
  store::Stmt* bound(store::Stmt& s, std::int64_t first, std::int64_t last) {
    s.bind(1, run_.id).bind(2, first).bind(3, last);
    return &s;
  }
  // The sample's place among those read; null for a row of a sample without a job.
  std::size_t* place(std::int64_t sample_id) {
    auto it = at_.find(sample_id);
    return it == at_.end() ? nullptr : &it->second;
  }
  Result<std::optional<store::OutputStatus>> status_of(const SampleOutcome& o,
                                                       const std::string& text) const {
    auto st = store::parse_output_status(text);
    if (!st.ok())
      return fail("data", "run '" + run_.tag + "', sample '" + o.key +
                              "': stage_outputs.status: " + st.error().message);
    return std::optional<store::OutputStatus>(*st);
  }
  Status read_jobs(std::int64_t first, std::int64_t last);
  Status read_outputs(std::int64_t first, std::int64_t last);
  Status read_verifications(std::int64_t first, std::int64_t last);
  Status read_speed(std::int64_t first, std::int64_t last);
  Status read_targets(std::int64_t first, std::int64_t last);
  Status settle(SampleOutcome& o, Scratch& x, store::Stmt& error);

  store::Db& db_;
  const RunInfo& run_;
  std::vector<SampleOutcome> out_;
  std::vector<Scratch> scratch_;
  std::unordered_map<std::int64_t, std::size_t> at_;
};

Status OutcomeReader::read_jobs(std::int64_t first, std::int64_t last) {
  KF_TRY(store::Stmt s, db_.prepare(queries()["outcome_jobs"]));
  return bound(s, first, last)->each([&](store::Stmt& row) -> Status {
    // Made in its place: an outcome moved is some 40 members copied.
    SampleOutcome& o = out_.emplace_back();
    o.job_id = row.int64(0);
    o.sample_id = row.int64(1);
    o.key = row.text(2);
    auto state = store::parse_job_state(row.text(3));
    if (!state.ok())
      return fail("data", "run '" + run_.tag + "', sample '" + o.key +
                              "': jobs.state: " + state.error().message);
    o.state = *state;
    o.stage = row.text(4);
    o.job_error_kind = row.opt_text(5);
    o.job_error = row.opt_text(6);
    o.repair_round = static_cast<int>(row.int64(7));
    if (!row.is_null(8)) {
      o.dup_group = row.int64(8);
      o.dup_group_size = row.int64(9);
    }
    at_[o.sample_id] = out_.size() - 1;
    scratch_.emplace_back();
    return {};
  });
}

Status OutcomeReader::read_outputs(std::int64_t first, std::int64_t last) {
  KF_TRY(store::Stmt s, db_.prepare(queries()["outcome_outputs"]));
  return bound(s, first, last)->each([&](store::Stmt& row) -> Status {
    std::size_t* i = place(row.int64(0));
    if (i == nullptr) return {};
    SampleOutcome& o = out_[*i];
    Scratch& x = scratch_[*i];
    const std::int64_t id = row.int64(2);
    const std::string stage = row.text(3);
    KF_TRY(auto status, status_of(o, row.text(4)));
    const std::int64_t prompt = row.int64(5), completion = row.int64(6);
    const double cost = row.real(7);
    const std::int64_t latency = row.int64(8);
    o.prompt_tokens += prompt;
    o.completion_tokens += completion;
    o.cost_usd += cost;
    o.llm_ms += latency;
    ++o.llm_calls;
    o.reasoning_tokens += row.int64(9);
    o.cached_prompt_tokens += row.int64(10);
    o.mended_outputs += row.int64(11);
    RoundOutcome& r = round_of(o, x, static_cast<int>(row.int64(1)));
    r.cost_usd += cost;
    if (!row.is_null(5) && !row.is_null(6)) r.tokens += prompt + completion;
    r.llm_ms += latency;
    if (id > x.last_output) {
      x.last_output = id;
      x.last_stage = stage;
      x.last_status = status;
    }
    if (stage == o.stage && id > x.stage_output) {
      x.stage_output = id;
      x.stage_status = status;
    }
    return {};
  });
}

Status OutcomeReader::read_verifications(std::int64_t first, std::int64_t last) {
  KF_TRY(store::Stmt s, db_.prepare(queries()["outcome_verifications"]));
  return bound(s, first, last)->each([&](store::Stmt& row) -> Status {
    std::size_t* i = place(row.int64(0));
    if (i == nullptr) return {};
    SampleOutcome& o = out_[*i];
    Scratch& x = scratch_[*i];
    const int round = static_cast<int>(row.int64(1));
    const std::int64_t id = row.int64(2);
    o.verify_ms += row.int64(4);
    ++o.verifications;
    if (id > x.newest) {
      x.newest = id;
      x.verdict = row.text(3);
      x.flags_json = row.text(7);
      o.detail = row.opt_text(8);
      o.kernel_killed.reset();
      o.kernel_applicable.reset();
      if (!row.is_null(5) && !row.is_null(6)) {
        o.kernel_killed = row.int64(5);
        o.kernel_applicable = row.int64(6);
      }
    }
    RoundOutcome& r = round_of(o, x, round);
    std::int64_t& newest = x.round_newest[static_cast<std::size_t>(&r - o.rounds.data())];
    if (id > newest) {
      newest = id;
      r.verdict = row.text(3);
      r.flags.clear();
      const std::string flags_json = row.text(7);
      if (flags_json != "[]") {
        auto flags = nlohmann::json::parse(flags_json, nullptr, false);
        if (flags.is_array())
          for (const auto& f : flags)
            if (f.is_string()) r.flags.push_back(f.get<std::string>());
      }
    }
    return {};
  });
}

Status OutcomeReader::read_speed(std::int64_t first, std::int64_t last) {
  KF_TRY(store::Stmt s, db_.prepare(queries()["outcome_speed"]));
  return bound(s, first, last)->each([&](store::Stmt& row) {
    std::size_t* i = place(row.int64(0));
    if (i == nullptr || row.int64(1) != scratch_[*i].newest) return;
    SampleOutcome& o = out_[*i];
    if (!row.is_null(2)) o.speedup = row.real(2);
    if (!row.is_null(3)) o.pass_perf = row.int64(3) == 1;
    o.timed = !row.is_null(4) && row.int64(4) == 1;
    o.speed_flags = speed_flags_of(row.opt_text(5));
    if (!row.is_null(6)) o.kernel_share = row.real(6);
  });
}

Status OutcomeReader::read_targets(std::int64_t first, std::int64_t last) {
  KF_TRY(store::Stmt s, db_.prepare(queries()["outcome_targets"]));
  return bound(s, first, last)->each([&](store::Stmt& row) {
    std::size_t* i = place(row.int64(0));
    if (i == nullptr || row.int64(1) != scratch_[*i].newest) return;
    out_[*i].targets[row.text(2)] = row.text(3);
  });
}

// The outcome's verdict or failure from the parts read (the rule of SampleOutcome's fields).
Status OutcomeReader::settle(SampleOutcome& o, Scratch& x, store::Stmt& error) {
  auto error_of = [&](std::int64_t output) -> Status {
    error.bind(1, output);
    KF_TRY(bool row, error.step());
    if (row) {
      o.stage_error_kind = error.opt_text(0);
      o.stage_error = error.opt_text(1);
    }
    error.reset();
    return {};
  };
  const bool verified = x.newest != 0;
  if (store::before_verifier(o.stage)) {
    o.failure_stage = o.stage;
    o.stage_status = x.stage_status;
    if (x.stage_output != 0) KF_CHECK(error_of(x.stage_output));
  } else if (!verified && x.last_status && *x.last_status != store::OutputStatus::ok) {
    // Ended past generation with no verdict, yet the last stage output failed: a pipeline that
    // moves a failed job on still has that failure counted.
    o.failure_stage = x.last_stage;
    o.stage_status = x.last_status;
    KF_CHECK(error_of(x.last_output));
  } else if (verified) {
    o.verdict = std::move(x.verdict);
    const std::string& flags_json = *x.flags_json;
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
      return fail("parse", "run '" + run_.tag + "', sample '" + o.key +
                               "': verifications.flags_json is not a JSON list of strings");
  }
  if (store::before_verifier(o.stage) || !verified) {
    // What only a verdict shown carries.
    o.detail.reset();
    o.kernel_killed.reset();
    o.kernel_applicable.reset();
    o.targets.clear();
    o.speedup.reset();
    o.pass_perf.reset();
    o.timed = false;
    o.speed_flags.clear();
    o.kernel_share.reset();
  }
  return {};
}

Result<std::vector<SampleOutcome>> OutcomeReader::finish() {
  KF_TRY(store::Stmt error, db_.prepare(queries()["outcome_output_error"]));
  for (std::size_t i = 0; i < out_.size(); ++i) KF_CHECK(settle(out_[i], scratch_[i], error));
  std::vector<std::size_t> order(out_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return out_[a].key < out_[b].key; });
  // Put in key order in place, cycle by cycle (position i takes the outcome at order[i]): a
  // second vector of the run's outcomes is as much new memory again, each page of it a page
  // fault, which costs more than the moves (docs/BENCHMARKS.md, issue 57).
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (order[i] == i) continue;
    SampleOutcome held = std::move(out_[i]);
    std::size_t at = i;
    while (order[at] != i) {
      const std::size_t from = order[at];
      out_[at] = std::move(out_[from]);
      order[at] = at;
      at = from;
    }
    out_[at] = std::move(held);
    order[at] = at;
  }
  return std::move(out_);
}

}  // namespace

Result<std::vector<SampleOutcome>> load_outcomes(store::Db& db, const RunInfo& run) {
  OutcomeReader reader(db, run);
  {
    // Room for every row at once: growing the vectors moves each outcome (some 40 members)
    // again at every doubling.
    KF_TRY(store::Stmt n, db.prepare(queries()["run_job_total"]));
    n.bind(1, run.id);
    KF_TRY(bool row, n.step());
    if (row && n.int64(0) > 0) reader.reserve(static_cast<std::size_t>(n.int64(0)));
  }
  KF_CHECK(reader.read(std::numeric_limits<std::int64_t>::min(),
                       std::numeric_limits<std::int64_t>::max()));
  return reader.finish();
}

Result<std::vector<SampleOutcome>> load_outcomes_of(store::Db& db, const RunInfo& run,
                                                    std::vector<std::int64_t> sample_ids) {
  std::sort(sample_ids.begin(), sample_ids.end());
  OutcomeReader reader(db, run);
  // Ids close together are read as one range (the samples between are read again, unchanged):
  // kforged works through a run's jobs in id order, so those changed together are near.
  constexpr std::int64_t kGap = 32;
  for (std::size_t i = 0; i < sample_ids.size();) {
    std::size_t j = i + 1;
    while (j < sample_ids.size() && sample_ids[j] - sample_ids[j - 1] <= kGap) ++j;
    KF_CHECK(reader.read(sample_ids[i], sample_ids[j - 1]));
    i = j;
  }
  return reader.finish();
}

Result<std::int64_t> outcome_change_mark(store::Db& db, std::int64_t run_id) {
  KF_TRY(store::Stmt s, db.prepare(queries()["outcome_change_mark"]));
  s.bind(1, run_id);
  KF_TRY(bool row, s.step());
  return row ? s.int64(0) : 0;
}

Result<OutcomeChanges> outcome_changes_since(store::Db& db, std::int64_t run_id,
                                             std::int64_t mark) {
  KF_TRY(store::Stmt s, db.prepare(queries()["outcome_changes_since"]));
  s.bind(1, run_id).bind(2, mark);
  OutcomeChanges c;
  c.mark = mark;
  KF_CHECK(s.each([&](store::Stmt& row) {
    const std::int64_t sample = row.int64(0), seq = row.int64(1);
    c.mark = std::max(c.mark, seq);
    if (sample == 0)
      c.removed = true;
    else
      c.samples.push_back(sample);
  }));
  return c;
}

}  // namespace kforge::report
