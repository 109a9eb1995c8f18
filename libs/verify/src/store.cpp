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

Result<std::int64_t> store_verification(store::Db& db, const VerificationKey& key,
                                        const VerifyResult& r, std::int64_t now_ms) {
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
  s->bind(8, r.report.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (r.script.empty())
    s->bind(9, nullptr);
  else
    s->bind(9, r.script);
  s->bind(10, r.stderr_tail);
  s->bind(11, r.duration_ms);
  s->bind(12, r.device);
  s->bind(13, now_ms);
  s->bind(14, key.repair_round);
  const auto& mutation = r.report.contains("mutation") ? r.report["mutation"] : nlohmann::json();
  if (mutation.is_object() && mutation.contains("applicable")) {
    s->bind(15, mutation.value("killed", std::int64_t{0}));
    s->bind(16, mutation.value("applicable", std::int64_t{0}));
  } else {
    s->bind(15, nullptr);
    s->bind(16, nullptr);
  }
  auto st = s->run();
  if (!st.ok()) {
    Error e = st.error();
    return std::move(e).context("storing the verdict of sample " + std::to_string(key.sample_id) +
                                " (run " + std::to_string(key.run_id) + ")");
  }
  std::int64_t id = db.last_insert_rowid();
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
