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

using verify::HarnessReport;

// The differential check's disagreement (report["differential"], docs/VERIFIER.md): the
// transform of inputs() on which the wrapper and the declared reference disagreed, what
// differed, and the transforms they agreed on. Empty where the check failed nothing.
std::string differential_evidence(const HarnessReport& h) {
  if (!h.differential || !h.differential->failed || h.differential->failed->empty()) return "";
  std::string out, agreed;
  for (const auto& t : h.differential->transforms) {
    if (t.result == "differs")
      out += "- on the inputs of `inputs()` " + t.transform + ": " + t.detail;
    else if (t.result == "agrees")
      agreed += (agreed.empty() ? "" : ", ") + t.transform;
  }
  if (out.empty()) out = "- on the inputs of `inputs()` " + *h.differential->failed;
  if (!agreed.empty()) out += "\n- they agreed on the inputs " + agreed;
  return out;
}

// What the guard found, from the stored report: each function replaced (how, in which run) and
// each look for the verifier, of the real run and of the mutant runs' process, one line each.
std::string tampering_lines(const HarnessReport& h) {
  std::vector<std::string> lines;
  auto add = [&](const std::string& l) {
    if (lines.size() < 8 && std::find(lines.begin(), lines.end(), l) == lines.end())
      lines.push_back(l);
  };
  auto in_run = [](const std::string& phase) {
    if (phase.empty()) return std::string();
    return phase == "run" ? std::string(" (in the real run)") : " (in the " + phase + " run)";
  };
  auto from = [&](const std::optional<HarnessReport::Integrity>& in,
                  const std::vector<std::string>& guard) {
    if (in) {
      for (const auto& e : in->replaced)
        add("- `" + e.what + "` was " + e.how + in_run(e.phase) + ".");
      for (const auto& e : in->scans)
        add("- the code called `" + e.event + "`" + in_run(e.phase) + ".");
    }
    for (const auto& e : guard) add("- the code called `" + e + "`.");
  };
  from(h.integrity, h.guard);
  if (h.mutant) from(h.mutant->integrity, h.mutant->guard);
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

// The output mutants the test let through, in plain words, one line each.
std::string output_survivors(const HarnessReport& h) {
  std::string survivors;
  if (h.mutation)
    for (const auto& name : h.mutation->survived)
      if (name != "skip_launch")
        survivors += (survivors.empty() ? "" : "\n") + std::string("- `") + name +
                     "`: " + verify::mutant_meaning(name) + ".";
  return survivors;
}

// The kernel mutants the test let through: what changed, where, and what that says about the
// inputs.
std::string kernel_survivors(const HarnessReport& h) {
  std::string lines;
  if (h.mutation)
    for (const auto& s : h.mutation->kernel_survived)
      lines +=
          (lines.empty() ? "" : "\n") + std::string("- ") + verify::kernel_mutant_meaning(s) + ".";
  return lines;
}

// Each required target that failed: the kernel, the stage and the compiler's first lines.
std::string failed_targets(const HarnessReport& h, const EvidenceCaps& caps) {
  const auto& required = h.required_targets;  // the pool's field (require_targets)
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
std::string failed_controls(const HarnessReport& h) {
  std::string out;
  if (!h.mutant || !h.mutant->controls) return out;
  for (const auto& c : h.mutant->controls->runs) {
    if (c.result == store::verdict_name(store::Verdict::passed)) continue;
    out += (out.empty() ? "" : "\n") + std::string("- a `") + c.kind + "` control run (" +
           (c.kind == "fresh" ? "the code imported afresh" : "the same tests again") + ", " + c.at +
           "): " + c.result + (c.by ? ", `" + *c.by + "`" : std::string()) + ".";
  }
  return out;
}

// The first test that did not pass, as the harness reported it: its line, message and
// traceback, and the blocks that show them.
void failing_test_values(const HarnessReport& h, const VerdictEvidence& v, const EvidenceCaps& caps,
                         std::map<std::string, std::string>& values,
                         std::vector<std::string>& use) {
  const HarnessReport::Test* bad = nullptr;
  static const std::vector<HarnessReport::Test> kNoTests;
  for (const auto& test : h.tests ? *h.tests : kNoTests)
    if (test.status != store::verdict_name(store::Verdict::passed) &&
        test.status != store::verdict_name(store::Verdict::skipped)) {
      bad = &test;
      break;
    }
  if (bad == nullptr) return;
  if (bad->where_section && !bad->where_section->empty() && bad->where_line) {
    const std::string& section = *bad->where_section;
    std::int64_t line = *bad->where_line;
    // The line's text, from the script that ran (sections give each part's first line).
    std::string source;
    for (const auto& [name, lines] : h.sections)
      if (name == section && !lines.empty())
        source = line_of(v.script, static_cast<long>(lines[0] + line - 1));
    values["test"] = bad->name;
    values["section"] = section;
    values["line"] = std::to_string(line);
    values["source_line"] = source.empty() ? "(the line is not available)" : trim_end(source);
    use.push_back("failing_test");
  }
  std::string exception = bad->exception.value_or("");
  std::string message = trim_end(bad->message.value_or(""));
  if (!exception.empty() || !message.empty()) {
    values["exception"] = exception.empty() ? bad->status : exception;
    values["message"] = message.empty()
                            ? "(empty: a bare `assert` with no message)"
                            : first_lines(message, caps.message_lines, caps.message_bytes);
    use.push_back("message");
  }
  std::string tb = trim_end(bad->traceback.value_or(""));
  if (!tb.empty()) {
    values["traceback"] =
        trim_end(verify::last_lines(tb, caps.traceback_lines, caps.traceback_bytes));
    use.push_back("traceback");
  }
}

// The stored report, parsed as the pool parsed it (harness_report.hpp): none when the pool made
// the result or the report does not parse (its blocks then say what was not recorded).
HarnessReport stored_report(const nlohmann::json& report) {
  auto stored = verify::parse_stored_report(report);
  return stored.ok() && *stored ? std::move(**stored) : HarnessReport();
}

}  // namespace

Result<std::string> render_evidence(const EvidenceTemplate& t, const VerdictEvidence& v,
                                    const EvidenceCaps& caps) {
  const HarnessReport h = stored_report(v.report);
  std::map<std::string, std::string> values = {
      {"verdict", v.verdict},
      {"detail", v.detail.empty() ? "(no detail recorded)" : v.detail},
  };
  std::vector<std::string> use = {"verdict"};
  failing_test_values(h, v, caps, values, use);
  std::string err = trim_end(v.stderr_tail);
  if (v.verdict != store::verdict_name(store::Verdict::passed) && !err.empty()) {
    values["stderr"] = trim_end(verify::last_lines(err, caps.stderr_lines, caps.stderr_bytes));
    use.push_back("stderr");
  }
  if (std::string d = differential_evidence(h); !d.empty()) {
    values["differential"] = d;
    use.push_back("differential");
  }
  auto flagged = [&](const char* flag) {
    return std::find(v.flags.begin(), v.flags.end(), flag) != v.flags.end();
  };
  for (const char* flag : {verify::kMutantSurvived, verify::kNoKernelLaunch})
    if (flagged(flag)) use.push_back(flag);
  if (flagged(verify::kWeakTest)) {
    std::string survivors = output_survivors(h);
    values["survivors"] = survivors.empty() ? "- (the survivors were not recorded)" : survivors;
    use.push_back(verify::kWeakTest);
  }
  if (flagged(verify::kWeakInputs)) {
    std::string lines = kernel_survivors(h);
    values["kernel_mutants"] =
        lines.empty() ? "- (the surviving mutants were not recorded)" : lines;
    use.push_back(verify::kWeakInputs);
  }
  if (flagged(verify::kConstantOutput)) use.push_back(verify::kConstantOutput);
  if (flagged(verify::kKernelNotUsed)) {
    // Which call outside the test answered with the host's result, and how much of it.
    std::string what = verify::origin_meaning(h);
    values["origin"] = what.empty() ? "(which call was not recorded)" : what;
    use.push_back(verify::kKernelNotUsed);
  }
  if (flagged(verify::kOutOfBounds)) {
    // Which kernel read or wrote outside which buffer (the guard-zone check), or the fault.
    std::string what = h.bounds ? h.bounds->detail : std::string();
    if (what.empty() && h.bounds && h.bounds->fault)
      what = "the run died of an illegal memory access";
    values["bounds"] = what.empty() ? "(which kernel was not recorded)" : what;
    use.push_back(verify::kOutOfBounds);
  }
  if (flagged(verify::kCrossCompileFailed)) {
    std::string targets = failed_targets(h, caps);
    values["targets"] = targets.empty() ? "- (the compiler's errors were not recorded)" : targets;
    use.push_back(verify::kCrossCompileFailed);
  }
  if (flagged(verify::kTampered)) {
    std::string what = tampering_lines(h);
    values["tampering"] = what.empty() ? "- (what was changed was not recorded)" : what;
    use.push_back(verify::kTampered);
  }
  if (flagged(verify::kUnstableTest)) {
    // Voided for the harness's reason (the kernel faulted in its bounds replay) with no control
    // failed: that reason, not a failed control that never happened.
    const auto* c = h.mutant && h.mutant->controls ? &*h.mutant->controls : nullptr;
    if (h.mutant && !h.mutant->lost.empty() && !(c && c->failed)) {
      // Its mutant runs' process ended without their report (no control ran to fail): how.
      std::string how;
      for (const auto& l : h.mutant->lost) how += "- " + l + "\n";
      values["lost"] = how;
      use.push_back("unstable_test_lost");
    } else if (c && !c->failed && c->void_reason) {
      values["void_reason"] = *c->void_reason;
      use.push_back("unstable_test_voided");
    } else {
      std::string what = failed_controls(h);
      values["controls"] = what.empty() ? "- (which control run failed was not recorded)" : what;
      use.push_back(verify::kUnstableTest);
    }
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
