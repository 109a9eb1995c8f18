#include "kforge/pipeline/repair.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/targets.hpp"
#include "kforge/verify/verdict.hpp"

namespace kforge::pipeline {

namespace {

std::string str(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The first lines of text, within both caps.
std::string first_lines(const std::string& text, std::size_t max_lines, std::size_t max_bytes) {
  std::string out;
  std::size_t at = 0, lines = 0;
  while (at < text.size() && lines < max_lines) {
    std::size_t nl = text.find('\n', at);
    std::string l = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? text.size() : nl + 1;
    if (out.size() + l.size() + 1 > max_bytes) {
      out += l.substr(0, max_bytes > out.size() ? max_bytes - out.size() : 0) + "...";
      return out;
    }
    out += (lines++ == 0 ? "" : "\n") + l;
  }
  if (at < text.size()) out += "\n...";
  return out;
}

std::string trim_end(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

// Line `n` (1-based) of text, or "".
std::string line_of(const std::string& text, long n) {
  if (n < 1) return "";
  std::size_t at = 0;
  for (long i = 1; i < n; ++i) {
    at = text.find('\n', at);
    if (at == std::string::npos) return "";
    ++at;
  }
  std::size_t nl = text.find('\n', at);
  return text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
}

// The differential check's disagreement (report["differential"], docs/VERIFIER.md): the
// transform of inputs() on which the wrapper and the declared reference disagreed, what
// differed, and the transforms they agreed on. Empty where the check failed nothing.
std::string differential_evidence(const nlohmann::json& report) {
  const auto d = report.is_object() ? report.find("differential") : report.end();
  if (d == report.end() || str(*d, "failed").empty()) return "";
  std::string out, agreed;
  if (d->contains("transforms") && (*d)["transforms"].is_array())
    for (const auto& t : (*d)["transforms"]) {
      std::string name = str(t, "transform");
      if (str(t, "result") == "differs")
        out += "- on the inputs of `inputs()` " + name + ": " + str(t, "detail");
      else if (str(t, "result") == "agrees")
        agreed += (agreed.empty() ? "" : ", ") + name;
    }
  if (out.empty()) out = "- on the inputs of `inputs()` " + str(*d, "failed");
  if (!agreed.empty()) out += "\n- they agreed on the inputs " + agreed;
  return out;
}

// What the guard found, from the stored report: each function replaced (how, in which run) and
// each look for the verifier, of the real run and of the mutant runs' process, one line each.
std::string tampering_lines(const nlohmann::json& report) {
  std::vector<std::string> lines;
  auto add = [&](const std::string& l) {
    if (lines.size() < 8 && std::find(lines.begin(), lines.end(), l) == lines.end())
      lines.push_back(l);
  };
  auto in_run = [](const nlohmann::json& e) {
    std::string phase = str(e, "phase");
    if (phase.empty()) return std::string();
    return phase == "run" ? std::string(" (in the real run)") : " (in the " + phase + " run)";
  };
  auto from = [&](const nlohmann::json& r) {
    if (!r.is_object()) return;
    const auto in = r.find("integrity");
    if (in != r.end() && in->is_object()) {
      for (const char* list : {"replaced", "scans"}) {
        const auto es = in->find(list);
        if (es == in->end() || !es->is_array()) continue;
        for (const auto& e : *es)
          add(std::string(list) == "replaced"
                  ? "- `" + str(e, "what") + "` was " + str(e, "how") + in_run(e) + "."
                  : "- the code called `" + str(e, "event") + "`" + in_run(e) + ".");
      }
    }
    const auto g = r.find("guard");
    if (g != r.end() && g->is_array())
      for (const auto& e : *g)
        if (e.is_string()) add("- the code called `" + e.get<std::string>() + "`.");
  };
  from(report);
  if (report.is_object() && report.contains("mutant")) from(report["mutant"]);
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

// The output mutants the test let through, in plain words, one line each.
std::string output_survivors(const nlohmann::json& report) {
  std::string survivors;
  const nlohmann::json* m =
      report.is_object() && report.contains("mutation") ? &report["mutation"] : nullptr;
  if (m != nullptr && m->contains("survived") && (*m)["survived"].is_array())
    for (const auto& name : (*m)["survived"])
      if (name.is_string() && name != "skip_launch")
        survivors += (survivors.empty() ? "" : "\n") + std::string("- `") +
                     name.get<std::string>() +
                     "`: " + verify::mutant_meaning(name.get<std::string>()) + ".";
  return survivors;
}

// The kernel mutants the test let through: what changed, where, and what that says about the
// inputs.
std::string kernel_survivors(const nlohmann::json& report) {
  std::string lines;
  const nlohmann::json* m =
      report.is_object() && report.contains("mutation") ? &report["mutation"] : nullptr;
  const nlohmann::json* kernel =
      m != nullptr && m->contains("kernel") ? &(*m)["kernel"] : nullptr;  // the pool's score
  if (kernel != nullptr && kernel->is_object() && kernel->contains("survived") &&
      (*kernel)["survived"].is_array())
    for (const auto& s : (*kernel)["survived"])
      lines +=
          (lines.empty() ? "" : "\n") + std::string("- ") + verify::kernel_mutant_meaning(s) + ".";
  return lines;
}

// Each required target that failed: the kernel, the stage and the compiler's first lines.
std::string failed_targets(const VerdictEvidence& v, const EvidenceCaps& caps) {
  // The stored report, parsed as the pool parsed it (harness_report.hpp).
  auto stored = verify::parse_stored_report(v.report);
  static const verify::HarnessReport kNone;
  const verify::HarnessReport& h = stored.ok() && *stored ? **stored : kNone;
  std::vector<std::string> required;  // the pool's field (require_targets)
  const auto cc = v.report.is_object() ? v.report.find("cross_compile") : v.report.end();
  if (cc != v.report.end() && cc->is_object() && cc->contains("required") &&
      (*cc)["required"].is_array())
    for (const auto& name : (*cc)["required"])
      if (name.is_string()) required.push_back(name.get<std::string>());
  std::string targets;
  for (const auto& res : h.cross_compile.value_or(std::vector<verify::TargetResult>())) {
    if (res.result != store::TargetResultKind::error) continue;
    if (!required.empty() &&
        std::find(required.begin(), required.end(), res.target) == required.end())
      continue;
    targets += (targets.empty() ? "" : "\n") + std::string("- `") + res.target + "`" +
               (res.kernel.empty() ? "" : ", kernel `" + res.kernel + "`") + ":\n\n  ```\n  " +
               first_lines(res.error, caps.message_lines, caps.message_bytes) + "\n  ```";
  }
  return targets;
}

// The control runs that failed (the mutant runs' "controls"): which kind, where among the checks,
// and the test and exception that failed it.
std::string failed_controls(const nlohmann::json& report) {
  std::string out;
  const nlohmann::json* runs = nullptr;
  if (report.is_object() && report.contains("mutant") && report["mutant"].is_object() &&
      report["mutant"].contains("controls") && report["mutant"]["controls"].is_object() &&
      report["mutant"]["controls"].contains("runs"))
    runs = &report["mutant"]["controls"]["runs"];
  if (runs == nullptr || !runs->is_array()) return out;
  for (const auto& c : *runs) {
    if (str(c, "result") == "passed") continue;
    std::string by = str(c, "by");
    std::string kind = str(c, "kind");
    out += (out.empty() ? "" : "\n") + std::string("- a `") + kind + "` control run (" +
           (kind == "fresh" ? "the code imported afresh" : "the same tests again") + ", " +
           str(c, "at") + "): " + str(c, "result") + (by.empty() ? "" : ", `" + by + "`") + ".";
  }
  return out;
}

// The first test that did not pass, as the harness reported it: its line, message and
// traceback, and the blocks that show them.
void failing_test_values(const VerdictEvidence& v, const EvidenceCaps& caps,
                         std::map<std::string, std::string>& values,
                         std::vector<std::string>& use) {
  const nlohmann::json* bad = nullptr;
  if (v.report.is_object() && v.report.contains("tests") && v.report["tests"].is_array())
    for (const auto& test : v.report["tests"]) {
      std::string status = str(test, "status");
      if (!status.empty() && status != "passed" && status != "skipped") {
        bad = &test;
        break;
      }
    }
  if (bad != nullptr) {
    const nlohmann::json& where = bad->contains("where") ? (*bad)["where"] : nlohmann::json();
    std::string section = str(where, "section");
    if (!section.empty() && where.contains("line") && where["line"].is_number_integer()) {
      long line = where["line"].get<long>();
      // The line's text, from the script that ran (sections give each part's first line).
      std::string source;
      const nlohmann::json& secs =
          v.report.contains("sections") ? v.report["sections"] : nlohmann::json();
      if (secs.is_object() && secs.contains(section) && secs[section].is_array() &&
          !secs[section].empty() && secs[section][0].is_number_integer())
        source = line_of(v.script, secs[section][0].get<long>() + line - 1);
      values["test"] = str(*bad, "name");
      values["section"] = section;
      values["line"] = std::to_string(line);
      values["source_line"] = source.empty() ? "(the line is not available)" : trim_end(source);
      use.push_back("failing_test");
    }
    std::string exception = str(*bad, "exception");
    std::string message = trim_end(str(*bad, "message"));
    if (!exception.empty() || !message.empty()) {
      values["exception"] = exception.empty() ? str(*bad, "status") : exception;
      values["message"] = message.empty()
                              ? "(empty: a bare `assert` with no message)"
                              : first_lines(message, caps.message_lines, caps.message_bytes);
      use.push_back("message");
    }
    std::string tb = trim_end(str(*bad, "traceback"));
    if (!tb.empty()) {
      values["traceback"] =
          trim_end(verify::last_lines(tb, caps.traceback_lines, caps.traceback_bytes));
      use.push_back("traceback");
    }
  }
}

}  // namespace

Result<std::string> render_evidence(const EvidenceTemplate& t, const VerdictEvidence& v,
                                    const EvidenceCaps& caps) {
  std::map<std::string, std::string> values = {
      {"verdict", v.verdict},
      {"detail", v.detail.empty() ? "(no detail recorded)" : v.detail},
  };
  std::vector<std::string> use = {"verdict"};
  failing_test_values(v, caps, values, use);
  std::string err = trim_end(v.stderr_tail);
  if (v.verdict != store::verdict_name(store::Verdict::passed) && !err.empty()) {
    values["stderr"] = trim_end(verify::last_lines(err, caps.stderr_lines, caps.stderr_bytes));
    use.push_back("stderr");
  }
  if (std::string d = differential_evidence(v.report); !d.empty()) {
    values["differential"] = d;
    use.push_back("differential");
  }
  for (const char* flag : {verify::kMutantSurvived, verify::kNoKernelLaunch})
    if (std::find(v.flags.begin(), v.flags.end(), flag) != v.flags.end()) use.push_back(flag);
  if (std::find(v.flags.begin(), v.flags.end(), verify::kWeakTest) != v.flags.end()) {
    std::string survivors = output_survivors(v.report);
    values["survivors"] = survivors.empty() ? "- (the survivors were not recorded)" : survivors;
    use.push_back(verify::kWeakTest);
  }
  if (std::find(v.flags.begin(), v.flags.end(), verify::kWeakInputs) != v.flags.end()) {
    std::string lines = kernel_survivors(v.report);
    values["kernel_mutants"] =
        lines.empty() ? "- (the surviving mutants were not recorded)" : lines;
    use.push_back(verify::kWeakInputs);
  }
  if (std::find(v.flags.begin(), v.flags.end(), verify::kConstantOutput) != v.flags.end())
    use.push_back(verify::kConstantOutput);
  if (std::find(v.flags.begin(), v.flags.end(), verify::kOutOfBounds) != v.flags.end()) {
    // Which kernel read or wrote outside which buffer (the guard-zone check), or the fault.
    const nlohmann::json b = v.report.is_object() && v.report.contains("bounds")
                                 ? v.report["bounds"]
                                 : nlohmann::json::object();
    std::string what = str(b, "detail");
    if (what.empty() && b.is_object() && b.contains("fault"))
      what = "the run died of an illegal memory access";
    values["bounds"] = what.empty() ? "(which kernel was not recorded)" : what;
    use.push_back(verify::kOutOfBounds);
  }
  if (std::find(v.flags.begin(), v.flags.end(), verify::kCrossCompileFailed) != v.flags.end()) {
    std::string targets = failed_targets(v, caps);
    values["targets"] = targets.empty() ? "- (the compiler's errors were not recorded)" : targets;
    use.push_back(verify::kCrossCompileFailed);
  }
  if (std::find(v.flags.begin(), v.flags.end(), verify::kTampered) != v.flags.end()) {
    std::string what = tampering_lines(v.report);
    values["tampering"] = what.empty() ? "- (what was changed was not recorded)" : what;
    use.push_back(verify::kTampered);
  }
  if (std::find(v.flags.begin(), v.flags.end(), verify::kUnstableTest) != v.flags.end()) {
    std::string what = failed_controls(v.report);
    values["controls"] = what.empty() ? "- (which control run failed was not recorded)" : what;
    use.push_back(verify::kUnstableTest);
  }

  std::string out;
  for (const auto& [name, text] : t.blocks) {
    if (std::find(use.begin(), use.end(), name) == use.end()) continue;
    KF_TRY(std::string part, render(text, values, t.path.string() + " (block " + name + ")"));
    out += (out.empty() ? "" : "\n\n") + part;
  }
  return out;
}

Result<RepairAnswer> read_repair_answer(const nlohmann::json& parsed) {
  RepairAnswer a;
  std::string reason = trim_end(str(parsed, "unfixable"));
  if (!reason.empty()) {
    a.unfixable = true;
    a.reason = reason;
    return a;
  }
  a.kernel_wrapper = str(parsed, "kernel_wrapper");
  a.unitest_code = str(parsed, "unitest_code");
  if (a.kernel_wrapper.empty() || a.unitest_code.empty())
    return fail("parse",
                "the answer has neither \"unfixable\" nor both \"kernel_wrapper\" and "
                "\"unitest_code\"");
  return a;
}

}  // namespace kforge::pipeline
