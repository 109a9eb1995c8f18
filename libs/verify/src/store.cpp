#include "kforge/verify/store.hpp"

#include <nlohmann/json.hpp>

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

const json* member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

std::int64_t int_or_zero(const json& obj, const char* key) {
  const json* v = member(obj, key);
  return v != nullptr && v->is_number() ? v->get<std::int64_t>() : 0;
}

std::optional<std::string> text_of(const json* v) {
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<std::string> dumped(const json* v) {
  if (v == nullptr || v->is_null()) return std::nullopt;
  return dump(*v);
}

std::string list_of(const json& obj, const char* key) {
  const json* v = member(obj, key);
  return v != nullptr && v->is_array() ? dump(*v) : "[]";
}

// A test of the report's list: its name and status, and where a failing one failed.
ReportColumns::Test test_of(std::int64_t ordinal, const json& t) {
  ReportColumns::Test out{
      ordinal, text_of(member(t, "name")), text_of(member(t, "status")), {}, {}};
  if (const json* where = member(t, "where")) {
    out.section = text_of(member(*where, "section"));
    const json* line = member(*where, "line");
    if (line != nullptr && line->is_number_integer()) out.line = line->get<std::int64_t>();
  }
  return out;
}

ReportColumns report_columns(const json& report) {
  ReportColumns c;
  if (const json* m = member(report, "mutation"); m != nullptr && member(*m, "applicable")) {
    c.mutants_killed = int_or_zero(*m, "killed");
    c.mutants_applicable = int_or_zero(*m, "applicable");
    c.mutants_survived = list_of(*m, "survived");
    c.mutants_not_applicable = list_of(*m, "not_applicable");
  }
  const json* mutation = member(report, "mutation");
  const json* kernel = mutation != nullptr ? member(*mutation, "kernel") : nullptr;
  if (kernel != nullptr && kernel->is_object()) {
    c.kernel_killed = int_or_zero(*kernel, "killed");
    c.kernel_applicable = int_or_zero(*kernel, "applicable");
    c.kernel_equivalent = int_or_zero(*kernel, "equivalent");
    c.kernel_survived = list_of(*kernel, "survived");
  }
  c.coverage = dumped(member(report, "coverage"));
  c.speed = dumped(member(report, "speed"));
  if (const json* b = member(report, "bounds")) {
    const json* found = member(*b, "out_of_bounds");
    if (found != nullptr && found->is_boolean()) c.out_of_bounds = found->get<bool>() ? 1 : 0;
    c.bounds_detail = text_of(member(*b, "detail"));
    if (c.bounds_detail && c.bounds_detail->empty()) c.bounds_detail.reset();
  }
  if (const json* tests = member(report, "tests"); tests != nullptr && tests->is_array())
    for (std::size_t i = 0; i < tests->size(); ++i)
      if ((*tests)[i].is_object())
        c.tests.push_back(test_of(static_cast<std::int64_t>(i), (*tests)[i]));
  const json* triton = member(report, "triton");
  if (const json* l = triton != nullptr ? member(*triton, "launches") : nullptr;
      l != nullptr && l->is_object())
    for (const auto& [kernel_name, n] : l->items())
      if (n.is_number_integer()) c.launches.emplace_back(kernel_name, n.get<std::int64_t>());
  return c;
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
                                        const VerifyResult& r, std::int64_t now_ms) {
  const ReportColumns c = report_columns(r.report);
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
