#include "kforge/verify/store.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "kforge/verify/speed.hpp"
#include "kforge/verify/targets.hpp"

namespace kforge::verify {

std::span<const EmbeddedFile> verify_sql();

const store::QuerySet& verify_queries() {
  static const store::QuerySet q(verify_sql());
  return q;
}

namespace {

using nlohmann::json;

// What readers take from a verification beyond its verdict row (migration 0025), read once from
// the report here: report, export, the viewer and status read these columns and tables, never
// the report.
struct ReportColumns {
  std::optional<std::int64_t> mutants_killed, mutants_applicable;
  std::optional<std::string> mutants_survived, mutants_not_applicable;
  std::optional<std::int64_t> kernel_killed, kernel_applicable, kernel_equivalent;
  std::optional<std::string> kernel_survived, coverage, speed, bounds_detail;
  std::optional<std::int64_t> out_of_bounds;
  struct Test {
    std::int64_t ordinal;
    std::optional<std::string> name, status, section;
    std::optional<std::int64_t> line;
  };
  std::vector<Test> tests;
  std::vector<std::pair<std::string, std::int64_t>> launches;
};

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string dump_list(const std::vector<std::string>& names) {
  return dump(json(names));
}

// The columns of a stored report, read through its declared contract (parse_stored_report:
// report_fields.txt), never by key with a default: a field renamed on either side fails the
// parse, and store_verification stores an `error` naming it instead of NULL columns.
ReportColumns report_columns(const HarnessReport& h) {
  ReportColumns c;
  if (h.mutation) {
    const auto& m = *h.mutation;
    c.mutants_killed = m.killed;
    c.mutants_applicable = m.applicable;
    c.mutants_survived = dump_list(m.survived);
    c.mutants_not_applicable = dump_list(m.not_applicable);
    if (m.kernel) {
      c.kernel_killed = m.kernel->killed;
      c.kernel_applicable = m.kernel->applicable;
      c.kernel_equivalent = m.kernel->equivalent;
      json survived = json::array();
      for (const auto& k : m.kernel_survived) survived.push_back(k.to_json());
      c.kernel_survived = dump(survived);
    }
  }
  if (h.coverage) c.coverage = dump(h.coverage->raw);
  if (h.speed) c.speed = dump(h.speed->raw);
  if (h.bounds) {
    c.out_of_bounds = h.bounds->out_of_bounds ? 1 : 0;
    if (!h.bounds->detail.empty()) c.bounds_detail = h.bounds->detail;
  }
  if (h.tests)
    for (std::size_t i = 0; i < h.tests->size(); ++i) {
      const auto& t = (*h.tests)[i];
      c.tests.push_back(
          {static_cast<std::int64_t>(i), t.name, t.status, t.where_section, t.where_line});
    }
  if (h.triton) c.launches = h.triton->launches;
  return c;
}

// A verdict stored with a report that does not read as declared is an `error` of the verifier
// (kforge's own fault: the pool wrote a field report_fields.txt does not declare), naming the
// field, never a verdict whose columns are NULL.
void refuse_report(VerifyResult& r, const Error& why) {
  r.verdict = Verdict::error;
  r.detail = "the stored report does not read as declared (report_fields.txt): " + why.message +
             (r.detail.empty() ? "" : "; the verdict was: " + r.detail);
  if (std::find(r.flags.begin(), r.flags.end(), kInfrastructure) == r.flags.end())
    r.flags.emplace_back(kInfrastructure);
  r.harness.reset();  // nor its speed label or cross-compile results
}

Status insert_children(store::Db& db, std::int64_t id, const ReportColumns& c) {
  for (const auto& t : c.tests) {
    KF_TRY(store::Stmt * s, db.cached(verify_queries()["insert_test"]));
    s->bind(1, id).bind(2, t.ordinal).bind(3, t.name).bind(4, t.status).bind(5, t.section);
    s->bind(6, t.line);
    KF_CHECK(s->run());
  }
  std::int64_t ordinal = 0;
  for (const auto& [kernel, n] : c.launches) {
    KF_TRY(store::Stmt * s, db.cached(verify_queries()["insert_launches"]));
    s->bind(1, id).bind(2, ++ordinal).bind(3, kernel).bind(4, n);
    KF_CHECK(s->run());
  }
  return {};
}

Status insert_targets(store::Db& db, std::int64_t id, const VerificationKey& key,
                      const VerifyResult& r) {
  for (const auto& t : cross_compile_results(r)) {
    KF_TRY(store::Stmt * ins, db.cached(verify_queries()["insert_target"]));
    ins->bind(1, id);
    ins->bind(2, t.target);
    ins->bind(3, std::string(to_string(t.result)));
    if (t.error.empty())
      ins->bind(4, nullptr);
    else
      ins->bind(4, t.error);
    if (t.kernel.empty())
      ins->bind(5, nullptr);
    else
      ins->bind(5, t.kernel);
    auto tst = ins->run();
    if (!tst.ok()) {
      Error e = tst.error();
      return std::move(e).context("storing the " + t.target + " cross-compile of sample " +
                                  std::to_string(key.sample_id));
    }
  }
  return {};
}

}  // namespace

Result<std::int64_t> store_verification(store::Db& db, const VerificationKey& key,
                                        const VerifyResult& result, std::int64_t now_ms) {
  // A result the pool made without the harness (no "harness" field): no columns.
  ReportColumns c;
  const VerifyResult* stored = &result;
  std::optional<VerifyResult> refused;
  auto h = parse_stored_report(result.report);
  if (!h.ok()) {
    refused = result;
    refuse_report(*refused, h.error());
    stored = &*refused;
  } else if (*h) {
    c = report_columns(**h);
  }
  const VerifyResult& r = *stored;
  KF_TRY(store::Stmt * s, db.cached(verify_queries()["insert_verification"]));
  nlohmann::json flags = r.flags;
  if (key.job_id)
    s->bind(1, *key.job_id);
  else
    s->bind(1, nullptr);
  s->bind(2, key.run_id);
  s->bind(3, key.sample_id);
  s->bind(4, key.attempt);
  s->bind(5, to_string(r.verdict));
  s->bind(6, flags.dump());
  s->bind(7, r.detail);
  s->bind(8, dump(r.report));
  if (r.script.empty())
    s->bind(9, nullptr);
  else
    s->bind(9, r.script);
  s->bind(10, r.stderr_tail);
  s->bind(11, r.duration_ms);
  s->bind(12, r.device);
  s->bind(13, now_ms);
  s->bind(14, key.repair_round);
  s->bind(15, c.mutants_killed).bind(16, c.mutants_applicable);
  s->bind(17, c.kernel_killed).bind(18, c.kernel_applicable).bind(19, c.kernel_equivalent);
  s->bind(20, c.kernel_survived).bind(21, c.coverage).bind(22, c.speed);
  s->bind(23, c.out_of_bounds).bind(24, c.bounds_detail);
  s->bind(25, c.mutants_survived).bind(26, c.mutants_not_applicable);
  auto st = s->run();
  if (!st.ok()) {
    Error e = st.error();
    return std::move(e).context("storing the verdict of sample " + std::to_string(key.sample_id) +
                                " (run " + std::to_string(key.run_id) + ")");
  }
  std::int64_t id = db.last_insert_rowid();
  KF_CHECK(insert_children(db, id, c));
  KF_CHECK(insert_targets(db, id, key, r));
  if (auto l = speed_label(r)) KF_CHECK(store_speed(db, id, *l));
  return id;
}

Status store_speed(store::Db& db, std::int64_t verification_id, const SpeedLabel& l) {
  KF_TRY(store::Stmt * s, db.cached(verify_queries()["insert_speed"]));
  auto opt = [&](int i, const std::optional<double>& v) {
    if (v)
      s->bind(i, *v);
    else
      s->bind(i, nullptr);
  };
  s->bind(1, verification_id);
  s->bind(2, l.timed ? 1 : 0);
  s->bind(3, l.reason.empty() ? std::optional<std::string>() : l.reason);
  s->bind(4, l.device.empty() ? std::optional<std::string>() : l.device);
  opt(5, l.kernel_us);
  opt(6, l.gbps);
  opt(7, l.fraction_of_peak);
  opt(8, l.speedup);
  opt(9, l.speedup_lo);
  opt(10, l.speedup_hi);
  opt(11, l.reference_us);
  opt(12, l.min_speedup);
  if (l.pass_perf)
    s->bind(13, *l.pass_perf ? 1 : 0);
  else
    s->bind(13, nullptr);
  s->bind(14, nlohmann::json(l.flags).dump());
  s->bind(15, l.exclusive_ms);
  opt(16, l.kernel_share);
  auto st = s->run();
  if (!st.ok()) {
    Error e = st.error();
    return std::move(e).context("storing the speed label of verification " +
                                std::to_string(verification_id));
  }
  return {};
}

Status store_device_status(store::Db& db, const std::vector<DeviceStatus>& devices,
                           std::int64_t now_ms) {
  for (const auto& d : devices) {
    KF_TRY(store::Stmt * s, db.cached(verify_queries()["upsert_device"]));
    s->bind(1, d.device);
    s->bind(2, d.in_rotation ? 1 : 0);
    s->bind(3, d.workers);
    s->bind(4, d.ready_workers);
    s->bind(5, d.start_failures);
    if (d.reason.empty())
      s->bind(6, nullptr);
    else
      s->bind(6, d.reason);
    s->bind(7, now_ms);
    KF_CHECK(s->run());
  }
  return {};
}

Status replace_device_status(store::Db& db, const std::vector<DeviceStatus>& devices,
                             std::int64_t now_ms) {
  KF_TRY(auto tx, store::Transaction::begin(db));
  KF_TRY(store::Stmt * s, db.cached(verify_queries()["clear_devices"]));
  KF_CHECK(s->run());
  KF_CHECK(store_device_status(db, devices, now_ms));
  return tx.commit();
}

Result<std::vector<DeviceAlert>> device_alerts(store::Db& db) {
  std::vector<DeviceAlert> out;
  KF_TRY(store::Stmt * s, db.cached(verify_queries()["devices_out_of_rotation"]));
  KF_CHECK(s->each([&](store::Stmt& r) {
    out.push_back(
        {r.text(0), static_cast<int>(r.int64(1)), r.opt_text(2).value_or(""), r.int64(3)});
  }));
  return out;
}

}  // namespace kforge::verify
