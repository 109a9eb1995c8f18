#include "sample_data.hpp"

#include "queries.hpp"

namespace kforge::report {

nlohmann::ordered_json list_items(const std::optional<std::string>& json_list) {
  if (!json_list) return nlohmann::ordered_json::array();
  auto j = nlohmann::ordered_json::parse(*json_list, nullptr, false);
  return j.is_array() ? j : nlohmann::ordered_json::array();
}

Result<SampleData> load_sample(store::Db& db, const RunInfo& run, const std::string& key) {
  SampleData d;
  {
    KF_TRY(store::Stmt s, db.prepare(queries()["debug_sample"]));
    s.bind(1, run.id).bind(2, key);
    KF_TRY(bool row, s.step());
    if (!row) {
      KF_TRY(store::Stmt e, db.prepare(queries()["sample_exists"]));
      e.bind(1, key);
      KF_TRY(bool r, e.step());
      if (r && e.int64(0) > 0)
        return fail("not_found", "sample '" + key + "' is not in run '" + run.tag + "'");
      return fail("not_found", "no sample with key '" + key + "' in " + db.path());
    }
    d.sample_id = s.int64(0);
    d.key = s.text(1);
    d.code = s.text(2);
    d.record_json = s.text(3);
    KF_TRY(d.state, store::parse_job_state(s.text(5)));
    d.stage = s.text(6);
    d.attempts = s.int64(7);
    d.error_kind = s.opt_text(8);
    d.error = s.opt_text(9);
  }
  {
    KF_TRY(store::Stmt s, db.prepare(queries()["debug_stage_outputs"]));
    s.bind(1, run.id).bind(2, d.sample_id);
    KF_CHECK(s.each([&](store::Stmt& r) -> Status {
      StageAttempt a;
      a.stage = r.text(0);
      a.attempt = r.int64(1);
      KF_TRY(a.status, store::parse_output_status(r.text(2)));
      a.prompt_version = r.text(3);
      a.prompt_sha256 = r.text(4);
      a.request_sha256 = r.opt_text(5);
      a.request_json = r.opt_text(6);
      a.response_raw = r.opt_text(7);
      a.parsed_json = r.opt_text(8);
      a.error_kind = r.opt_text(9);
      a.error = r.opt_text(10);
      a.prompt_tokens = r.int64(11);
      a.completion_tokens = r.int64(12);
      a.cost_usd = r.real(13);
      a.latency_ms = r.int64(14);
      a.created_ms = r.int64(15);
      a.repair_round = static_cast<int>(r.int64(16));
      a.reasoning = r.opt_text(17);
      a.id = r.int64(18);
      d.outputs.push_back(std::move(a));
      return {};
    }));
  }
  {
    KF_TRY(store::Stmt s, db.prepare(queries()["debug_shown_code"]));
    s.bind(1, run.id).bind(2, d.sample_id);
    KF_TRY(auto id, s.one([](store::Stmt& r) { return r.int64(0); }));
    d.shown_code = id.value_or(0);
  }
  {
    KF_TRY(store::Stmt s, db.prepare(queries()["debug_verifications"]));
    s.bind(1, run.id).bind(2, d.sample_id);
    KF_CHECK(s.each([&](store::Stmt& r) {
      VerifyAttempt v;
      v.attempt = r.int64(0);
      v.verdict = r.text(1);
      v.flags_json = r.text(2);
      v.detail = r.opt_text(3);
      v.result_json = r.opt_text(4);
      v.script = r.opt_text(5);
      v.stderr_tail = r.opt_text(6);
      v.duration_ms = r.int64(7);
      v.device = r.opt_text(8);
      v.created_ms = r.int64(9);
      v.repair_round = static_cast<int>(r.int64(10));
      v.id = r.int64(11);
      v.mutants_killed = r.opt_int64(12);
      v.mutants_applicable = r.opt_int64(13);
      v.mutants_survived_json = r.opt_text(14);
      v.mutants_not_applicable_json = r.opt_text(15);
      v.kernel_killed = r.opt_int64(16);
      v.kernel_applicable = r.opt_int64(17);
      v.kernel_equivalent = r.opt_int64(18);
      v.kernel_survived_json = r.opt_text(19);
      v.coverage_json = r.opt_text(20);
      v.failing_section = r.opt_text(21);
      v.failing_line = r.opt_int64(22);
      v.speed_flags_json = r.opt_text(23);
      v.speed_reason = r.opt_text(24);
      d.verifications.push_back(std::move(v));
    }));
  }
  return d;
}

}  // namespace kforge::report
