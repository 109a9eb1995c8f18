// kforge status: samples, runs and jobs by state.

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "kforge/store/samples.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::cli {
namespace {

struct StatusArgs {
  bool json = false;
};

Result<nlohmann::ordered_json> collect(store::Db& db) {
  using nlohmann::ordered_json;
  const auto& q = store::store_queries();
  ordered_json out;
  store::Samples samples(db);
  KF_TRY(std::int64_t n, samples.count());
  out["samples"] = n;
  KF_TRY(int version, db.schema_version());
  out["schema_version"] = version;
  out["database"] = db.path();
  ordered_json all = ordered_json::object();
  {
    KF_TRY(store::Stmt s, db.prepare(q["jobs_by_state_all"]));
    while (true) {
      KF_TRY(bool row, s.step());
      if (!row) break;
      all[s.text(0)] = s.int64(1);
    }
  }
  out["jobs"] = all;
  ordered_json runs = ordered_json::array();
  KF_TRY(store::Stmt r, db.prepare(q["runs_overview"]));
  while (true) {
    KF_TRY(bool row, r.step());
    if (!row) break;
    ordered_json run = {{"tag", r.text(1)},         {"pipeline", r.text(2)},
                        {"model", r.text(3)},       {"state", r.text(4)},
                        {"created_ms", r.int64(5)}, {"jobs_total", r.int64(6)}};
    ordered_json by_state = ordered_json::object();
    KF_TRY(store::Stmt s, db.prepare(q["jobs_by_state"]));
    s.bind(1, r.int64(0));
    while (true) {
      KF_TRY(bool row2, s.step());
      if (!row2) break;
      by_state[s.text(0)] = s.int64(1);
    }
    run["jobs"] = by_state;
    runs.push_back(run);
  }
  out["runs"] = runs;
  ordered_json alerts = ordered_json::array();
  KF_TRY(auto devs, verify::device_alerts(db));
  for (const auto& d : devs)
    alerts.push_back({{"device", d.device},
                      {"start_failures", d.start_failures},
                      {"reason", d.reason},
                      {"since_ms", d.updated_ms}});
  out["verifier_alerts"] = alerts;
  return out;
}

}  // namespace

Command add_status(CLI::App& root, Globals& g) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = root.add_subcommand("status", "Show samples, runs and jobs by state");
  cmd->add_flag("--json", args->json, "Print one JSON object (for scripts)");
  return {cmd, [args, &g]() -> int {
            KF_TRY_OR_REPORT(app::Config cfg, load(g));
            KF_TRY_OR_REPORT(auto db, app::open_store(cfg));
            KF_TRY_OR_REPORT(auto st, collect(*db));
            if (args->json) {
              std::printf("%s\n", st.dump().c_str());
              return kOk;
            }
            std::printf("database   %s (schema %d)\n", st["database"].get<std::string>().c_str(),
                        st["schema_version"].get<int>());
            std::printf("samples    %lld\n",
                        static_cast<long long>(st["samples"].get<std::int64_t>()));
            for (const auto& a : st["verifier_alerts"])
              std::printf(
                  "ALERT      verifier device %s out of rotation (%lld failed worker starts): %s\n",
                  a["device"].get<std::string>().c_str(),
                  static_cast<long long>(a["start_failures"].get<std::int64_t>()),
                  a["reason"].get<std::string>().c_str());
            if (st["runs"].empty()) {
              std::printf("runs       none (kforge run create TAG --pipeline v2)\n");
              return kOk;
            }
            std::printf("runs\n");
            for (const auto& run : st["runs"]) {
              std::string states;
              for (const auto& [k, v] : run["jobs"].items())
                states += " " + k + "=" + std::to_string(v.get<std::int64_t>());
              std::printf(
                  "  %-16s %-3s %-24s %-9s jobs %lld:%s\n", run["tag"].get<std::string>().c_str(),
                  run["pipeline"].get<std::string>().c_str(),
                  run["model"].get<std::string>().c_str(), run["state"].get<std::string>().c_str(),
                  static_cast<long long>(run["jobs_total"].get<std::int64_t>()), states.c_str());
            }
            return kOk;
          }};
}

}  // namespace kforge::cli
