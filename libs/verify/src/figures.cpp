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

const nlohmann::json& obj(const nlohmann::json& j, const char* key) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

}  // namespace

nlohmann::json sample_figures(const VerifyResult& r) {
  const auto& rep = r.report;
  const auto& pool = obj(rep, "pool");
  nlohmann::json phases = nlohmann::json::object();
  auto put = [&](const char* name, std::int64_t v) {
    if (v >= 0) phases[name] = v;
  };
  put("queue", num(pool, "queue_ms"));
  const auto& pre = obj(rep, "prestart");
  put("context", num(pre, "ms"));
  put("context_cpu", num(pre, "cpu_ms"));
  put("context_waited", num(pre, "waited_ms"));
  std::int64_t import_ms = num(rep, "import_ms");
  std::int64_t tests_ms = -1;
  if (rep.is_object() && rep.contains("tests") && rep["tests"].is_array()) {
    tests_ms = 0;
    for (const auto& t : rep["tests"]) {
      if (!t.is_object()) continue;
      // A script whose import failed: its one entry is the import's.
      if (t.value("name", "") == "<import>") {
        import_ms = std::max<std::int64_t>(0, num(t, "duration_ms"));
        continue;
      }
      if (!t.value("ran_at_import", false))
        tests_ms += std::max<std::int64_t>(0, num(t, "duration_ms"));
    }
  }
  put("import", import_ms);
  put("tests", tests_ms);
  const auto& compile = obj(obj(rep, "triton"), "compile");
  std::int64_t compile_ms = num(compile, "ms");
  put("compile", compile_ms);
  put("compile_cpu", num(compile, "cpu_ms"));
  put("compile_child_cpu", num(compile, "child_cpu_ms"));
  put("compiles", num(compile, "count"));
  const auto& launcher = obj(obj(rep, "triton"), "launcher");
  put("launcher", num(launcher, "ms"));
  put("launcher_builds", num(launcher, "count"));
  if (import_ms >= 0 && compile_ms >= 0)
    put("run",
        std::max<std::int64_t>(0, import_ms + std::max<std::int64_t>(0, tests_ms) - compile_ms -
                                      std::max<std::int64_t>(0, num(launcher, "ms"))));
  const auto& mutant = obj(rep, "mutant");
  put("mutant", num(mutant, "duration_ms"));
  put("mutant_compiles", num(mutant, "compiles"));
  nlohmann::json autotune = nlohmann::json::array();
  // Each phase's wall and CPU time, of the real run's process and of the mutant run's (its
  // "prepare" as mutant_prepare: a process of its own).
  nlohmann::json phase_times = nlohmann::json::object();
  for (const auto* from : {&rep, &mutant})
    for (const auto& [name, t] : obj(*from, "phase_times").items())
      if (t.is_object())
        phase_times[from == &mutant && name == "prepare" ? "mutant_prepare" : name] = t;
  const auto& triton = obj(rep, "triton");
  if (triton.contains("autotune_used") && triton["autotune_used"].is_array())
    for (const auto& a : triton["autotune_used"])
      if (a.is_object())
        autotune.push_back({{"kernel", a.value("kernel", "")}, {"config", a.value("config", "")}});
  return {{"duration_ms", r.duration_ms},
          {"cpu_ms", num(pool, "cpu_ms")},
          {"device", r.device},
          {"phases", std::move(phases)},
          {"phase_times", std::move(phase_times)},
          {"autotune", std::move(autotune)}};
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
