#include "kforge/verify/figures.hpp"

#include <algorithm>
#include <iterator>

namespace kforge::verify {
namespace {

std::int64_t num(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return -1;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<std::int64_t>() : -1;
}

}  // namespace

nlohmann::json sample_figures(const VerifyResult& r) {
  // The harness's fields from its parsed report; the pool's (report["pool"], report["mutant"])
  // from the stored report, read through the same declaration (report_fields.txt). A result the
  // pool made without the harness has neither; one whose stored report does not read as
  // declared has no pool facts and says why (report_error).
  static const HarnessReport kNone;
  auto stored = parse_stored_report(r.report);
  const HarnessReport& p = stored.ok() && *stored ? **stored : kNone;
  const HarnessReport& h = r.harness ? *r.harness : p;
  nlohmann::json phases = nlohmann::json::object();
  auto put = [&](const char* name, std::int64_t v) {
    if (v >= 0) phases[name] = v;
  };
  auto opt = [](const std::optional<std::int64_t>& v) { return v.value_or(-1); };
  if (p.pool) {
    put("queue", opt(p.pool->queue_ms));
    put("dispatched", opt(p.pool->dispatched_ms));
  }
  if (h.prestart) {
    put("context", opt(h.prestart->ms));
    put("context_cpu", opt(h.prestart->cpu_ms));
    put("context_waited", opt(h.prestart->waited_ms));
  }
  std::int64_t import_ms = opt(h.import_ms);
  std::int64_t tests_ms = -1;
  if (h.tests) {
    tests_ms = 0;
    for (const auto& t : *h.tests) {
      // A script whose import failed: its one entry is the import's.
      if (t.name == "<import>") {
        import_ms = std::max<std::int64_t>(0, opt(t.duration_ms));
        continue;
      }
      if (!t.ran_at_import) tests_ms += std::max<std::int64_t>(0, opt(t.duration_ms));
    }
  }
  put("import", import_ms);
  put("tests", tests_ms);
  nlohmann::json autotune = nlohmann::json::array();
  if (h.triton) {
    const auto& c = h.triton->compile;
    const auto& l = h.triton->launcher;
    put("compile", c.ms);
    put("compile_cpu", opt(c.cpu_ms));
    put("compile_child_cpu", opt(c.child_cpu_ms));
    put("compiles", c.count);
    put("launcher", l.ms);
    put("launcher_builds", l.count);
    if (import_ms >= 0)
      put("run",
          std::max<std::int64_t>(0, import_ms + std::max<std::int64_t>(0, tests_ms) - c.ms - l.ms));
    for (const auto& [kernel, config] : h.triton->autotune_used)
      autotune.push_back({{"kernel", kernel}, {"config", config}});
  }
  if (p.mutant) {
    put("mutant", opt(p.mutant->duration_ms));
    put("mutant_compiles", opt(p.mutant->compiles));
  }
  // Each phase's wall and CPU time, of the real run's process and of the mutant run's (the
  // pool's facts; its "prepare" as mutant_prepare: a process of its own).
  nlohmann::json phase_times = nlohmann::json::object();
  for (const auto& [name, t] : h.phase_times.items())
    if (t.is_object()) phase_times[name] = t;
  if (p.mutant)
    for (const auto& [name, t] : p.mutant->phase_times.items())
      phase_times[name == "prepare" ? "mutant_prepare" : name] = t;
  nlohmann::json out = {{"duration_ms", r.duration_ms},
                        {"cpu_ms", p.pool ? opt(p.pool->cpu_ms) : -1},
                        {"device", r.device},
                        {"phases", std::move(phases)},
                        {"phase_times", std::move(phase_times)},
                        {"autotune", std::move(autotune)}};
  if (!stored.ok()) out["report_error"] = stored.error().message;
  return out;
}

std::string phase_times_line(const nlohmann::json& phase_times) {
  static const char* const order[] = {"prepare",       "test",           "speed",
                                      "cross_compile", "bounds",         "mutant_prepare",
                                      "skip_launch",   "output_mutants", "kernel_battery"};
  std::string out;
  auto add = [&](const std::string& name, const nlohmann::json& t) {
    if (!t.is_object()) return;
    out += (out.empty() ? "" : "  ") + name + " " + std::to_string(num(t, "wall_ms")) + "/" +
           std::to_string(num(t, "cpu_ms"));
    if (t.contains("compile_ms"))
      out += " (compile " + std::to_string(num(t, "compile_ms")) + "/" +
             std::to_string(num(t, "compile_cpu_ms")) + ")";
  };
  if (!phase_times.is_object()) return out;
  for (const char* name : order)
    if (phase_times.contains(name)) add(name, phase_times[name]);
  for (const auto& [name, t] : phase_times.items())  // a phase this build does not know
    if (std::find(std::begin(order), std::end(order), name) == std::end(order)) add(name, t);
  return out;
}

}  // namespace kforge::verify
