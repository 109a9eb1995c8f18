#include "kforge/verify/verdict.hpp"

#include <sys/wait.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <vector>

#include "kforge/core/embedded.hpp"

namespace kforge::verify {

std::span<const EmbeddedFile> harness_fault_words();

const char* to_string(Verdict v) {
  return name_of(store::kVerdictNames, v).data();  // the table's names are C string literals
}

std::string signal_name(int sig) {
  static const std::pair<int, const char*> kNames[] = {
      {SIGHUP, "SIGHUP"},   {SIGINT, "SIGINT"},   {SIGQUIT, "SIGQUIT"}, {SIGILL, "SIGILL"},
      {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"}, {SIGBUS, "SIGBUS"},   {SIGFPE, "SIGFPE"},
      {SIGKILL, "SIGKILL"}, {SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
      {SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"}, {SIGXCPU, "SIGXCPU"},
      {SIGXFSZ, "SIGXFSZ"}, {SIGSYS, "SIGSYS"}};
  for (const auto& [n, name] : kNames)
    if (n == sig) return name;
  return "signal " + std::to_string(sig);
}

std::string last_lines(const std::string& text, std::size_t max_lines, std::size_t max_bytes) {
  std::vector<std::string> lines;
  std::size_t end = text.size();
  while (end > 0 && lines.size() < max_lines) {
    std::size_t start = text.rfind('\n', end - 1);
    std::size_t from = start == std::string::npos ? 0 : start + 1;
    std::string line = text.substr(from, end - from);
    bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    if (!blank) lines.push_back(line);
    if (start == std::string::npos) break;
    end = start;
  }
  std::string out;
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) out += *it + "\n";
  if (out.size() > max_bytes) out = out.substr(out.size() - max_bytes);
  return out;
}

namespace {

// The line of stderr that best says why a process died: an LLVM or CUDA error if there is one,
// else the last line.
std::string telling_line(const std::string& err) {
  std::string last = last_lines(err, 1, 400);
  if (!last.empty() && last.back() == '\n') last.pop_back();
  for (const char* marker : {"LLVM ERROR", "CUDA error", "error:", "Error", "Fatal Python error"}) {
    std::size_t p = err.rfind(marker);
    if (p != std::string::npos) {
      std::size_t s = err.rfind('\n', p);
      s = s == std::string::npos ? 0 : s + 1;
      std::size_t e = err.find('\n', p);
      std::string line = err.substr(s, e == std::string::npos ? std::string::npos : e - s);
      if (line.size() > 400) line = line.substr(0, 400);
      return line;
    }
  }
  return last;
}

}  // namespace

Classified classify(const RunFacts& f) {
  Classified c;
  char buf[160];
  switch (f.killed) {
    case KillReason::timeout:
      std::snprintf(buf, sizeof buf, "no result within the %.0f s deadline; process group killed",
                    f.timeout_s);
      c.verdict = Verdict::timeout;
      c.detail = buf;
      return c;
    case KillReason::memory_rss:
      std::snprintf(buf, sizeof buf,
                    "killed: resident memory %lld MiB passed the %lld MiB cap (RSS watch; no "
                    "cgroup memory limit)",
                    static_cast<long long>(f.peak_rss_kb / 1024),
                    static_cast<long long>(f.memory_cap_mb));
      c.verdict = Verdict::crashed;
      c.detail = buf;
      return c;
    case KillReason::memory_cgroup:
      std::snprintf(buf, sizeof buf, "killed by the cgroup memory limit (%lld MiB)",
                    static_cast<long long>(f.memory_cap_mb));
      c.verdict = Verdict::crashed;
      c.detail = buf;
      return c;
    case KillReason::worker_lost:
      c.verdict = Verdict::error;
      c.detail = "the verifier worker died while running the sample" +
                 (f.lost.empty() ? std::string() : ": " + f.lost);
      c.flags.emplace_back(kInfrastructure);
      return c;
    case KillReason::cancelled:  // the pool hands over no verdict for it (Pool::cancel)
      c.verdict = Verdict::error;
      c.detail = "cancelled by the caller; process group killed";
      c.flags.emplace_back(kInfrastructure);
      return c;
    case KillReason::none:
      break;
  }
  if (!f.report_error.empty()) {
    // The harness wrote a report this kforge does not read as declared (report_fields.txt):
    // nothing in it is taken for a default. The verifier failed, not the sample.
    c.verdict = Verdict::error;
    c.detail = f.report_error;
    c.flags.emplace_back(kInfrastructure);
    return c;
  }
  if (f.report) {
    const HarnessReport& r = *f.report;
    c.verdict = r.verdict;
    c.detail = r.detail;
    if (r.phase == "sandbox" || r.phase == "request" || r.phase == "harness")
      c.flags.emplace_back(kInfrastructure);
    if (r.environment) {
      c.flags.emplace_back(kEnvironment);
      c.detail += "; " + *r.environment;
    }
    return c;
  }
  c.verdict = Verdict::crashed;
  std::string why = telling_line(f.stderr_tail);
  if (f.wait_status >= 0 && WIFSIGNALED(f.wait_status)) {
    int sig = WTERMSIG(f.wait_status);
    c.detail = signal_name(sig) + " (signal " + std::to_string(sig) + ")";
  } else if (f.wait_status >= 0 && WIFEXITED(f.wait_status)) {
    c.detail = "exit code " + std::to_string(WEXITSTATUS(f.wait_status)) + " without a report";
  } else {
    c.detail = "ended without a report";
  }
  if (!why.empty()) c.detail += ": " + why;
  return c;
}

nlohmann::json KernelScore::to_json() const {
  nlohmann::json j = {{"killed", killed},
                      {"applicable", applicable},
                      {"equivalent", equivalent},
                      {"tried", tried},
                      {"survived", nlohmann::json::array()}};
  for (const auto& s : survived) j["survived"].push_back(s.to_json());
  if (!stopped.empty()) j["stopped"] = stopped;
  return j;
}

nlohmann::json MutationScore::to_json() const {
  nlohmann::json j = {{"killed", killed},
                      {"applicable", applicable},
                      {"survived", survived},
                      {"not_applicable", not_applicable},
                      {"not_run", not_run}};
  if (!stopped.empty()) j["stopped"] = stopped;
  if (!per_launch.empty()) {
    nlohmann::json pl = nlohmann::json::object();
    for (const auto& [name, launch] : per_launch) pl[name] = launch;
    j["survived_in_launch"] = pl;
  }
  if (kernel.ran) j["kernel"] = kernel.to_json();
  return j;
}

namespace {

KernelScore score_kernel(const HarnessReport::KernelBattery& kb) {
  KernelScore k;
  k.ran = true;
  for (const auto& result : kb.results) {
    ++k.tried;
    if (result == "killed") ++k.killed, ++k.applicable;
    if (result == "survived") ++k.applicable;
    if (result == "equivalent") ++k.equivalent;
  }
  k.survived = kb.survived;
  k.stopped = kb.stopped;
  return k;
}

}  // namespace

namespace {
// The harness's decision that no mutant run's result stands (report["controls"]["void"], or a
// failed control: HarnessReport::Controls::voided).
bool voided(const HarnessReport* mutant_report) {
  return mutant_report && mutant_report->controls && mutant_report->controls->voided;
}

// Why a sample flagged out_of_bounds gets no mutation score (docs/VERIFIER.md, "Control runs").
constexpr const char* kForeignMemory =
    "its kernel reads or writes outside its buffers (out_of_bounds): what every run of its tests "
    "computes depends on memory it does not own, so no mutant run's or control's result counts";
}  // namespace

MutationScore score_mutants(Verdict skip_verdict, bool skip_infrastructure,
                            const HarnessReport* mutant_report, bool foreign_memory) {
  MutationScore s;
  // Results the harness voided count for nothing, the skip-launch run's too, a kill or a
  // survival (apply_controls flags it): after a failed control (a control that kills the GPU
  // context before the skip-launch run leaves it nothing to show, so counting its survival when
  // the lot put the control after it would make the flags the lot's, issue 52), or when the
  // real run's kernel faulted in its bounds replay (controls.void_reason). The batteries' entries
  // the harness marked void or as_control are not counted below. A kernel flagged out_of_bounds
  // (foreign_memory) gets nothing counted at all.
  if (!skip_infrastructure && !voided(mutant_report) && !foreign_memory) {
    ++s.applicable;
    if (skip_verdict == Verdict::passed)
      s.survived.push_back("skip_launch");
    else
      ++s.killed;
  }
  // The harness's own reason (a fault in the bounds replay) says more than the rule's words.
  const bool harness_reason = voided(mutant_report) && mutant_report->controls->void_reason;
  if (foreign_memory) {  // nor do the batteries' results, which the harness did not void itself
    s.stopped = harness_reason ? *mutant_report->controls->void_reason : kForeignMemory;
    return s;
  }
  if (mutant_report && mutant_report->kernel_battery)
    s.kernel = score_kernel(*mutant_report->kernel_battery);
  if (harness_reason) s.stopped = *mutant_report->controls->void_reason;
  if (!mutant_report || !mutant_report->battery) return s;
  const auto& b = *mutant_report->battery;
  for (const auto& e : b.mutants) {
    if (e.result == "killed") {
      ++s.killed, ++s.applicable;
    } else if (e.result == "survived") {
      ++s.applicable;
      s.survived.push_back(e.mutant);
      if (e.launch) s.per_launch.emplace_back(e.mutant, *e.launch);
    } else if (e.result == "not_applicable") {
      s.not_applicable.push_back(e.mutant);
    }
  }
  s.not_run = b.not_run;
  if (s.stopped.empty()) s.stopped = b.stopped;
  return s;
}

namespace {
void add_flag(VerifyResult& r, std::string_view flag) {
  if (std::find(r.flags.begin(), r.flags.end(), flag) == r.flags.end()) r.flags.emplace_back(flag);
}
}  // namespace

void apply_mutation_score(VerifyResult& primary, const MutationScore& score) {
  primary.report["mutation"] = score.to_json();
  std::vector<std::string> outputs;
  for (const auto& m : score.survived)
    if (m != "skip_launch") outputs.push_back(m);
  if (!outputs.empty()) {
    add_flag(primary, kWeakTest);
    std::string names;
    for (const auto& m : outputs) names += (names.empty() ? "" : ", ") + m;
    std::string where;
    for (const auto& [name, launch] : score.per_launch)
      if (name == outputs.front())
        where = " in launch " + std::to_string(launch) +
                " alone (a smaller launch that the test checks whole hid it when every launch "
                "was changed)";
    primary.detail += "; weak test: it still passes under the " + names + " mutant" +
                      (outputs.size() > 1 ? "s" : "") + where + " (" +
                      mutant_meaning(outputs.front()) + ")";
  }
  if (!score.kernel.survived.empty()) {
    add_flag(primary, kWeakInputs);
    primary.detail += "; weak inputs: " + kernel_mutant_meaning(score.kernel.survived.front());
  }
}

ResultLines split_result_lines(std::string_view result) {
  ResultLines out;
  std::size_t at = 0;
  while (at < result.size()) {
    auto nl = result.find('\n', at);
    bool whole = nl != std::string_view::npos;
    auto line = result.substr(at, whole ? nl - at : std::string_view::npos);
    at = whole ? nl + 1 : result.size();
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    auto g = j.find("guard");
    if (g != j.end() && j.size() == 1) {
      if (whole && g->is_string()) out.guard.push_back(*g);
      continue;
    }
    if (j.size() == 1 && j.contains("lend")) continue;  // the pool read it as it came
    out.reports.push_back(std::move(j));
  }
  return out;
}

void apply_integrity(VerifyResult& r, const HarnessReport* report, const nlohmann::json& guard) {
  bool tampered = report && report->integrity && report->integrity->tampered;
  // The guard's lines, written on the result pipe the moment of a scan (split_result_lines):
  // they stand even when the sample rewrote the report that followed.
  bool scanned = guard.is_array() && !guard.empty();
  if (!tampered && !scanned) return;
  bool first = std::find(r.flags.begin(), r.flags.end(), kTampered) == r.flags.end();
  add_flag(r, kTampered);
  if (!first) return;
  std::string what;
  auto add = [&](const std::string& name, const std::string& how, const std::string& phase) {
    if (what.size() > 300) return;
    what += (what.empty() ? "" : "; ") + name + " " + how +
            (phase.empty() ? std::string() : " (in the " + phase + " run)");
  };
  if (scanned)
    for (const auto& e : guard)
      if (e.is_string()) add(e.get<std::string>(), "called by the sample's code", "");
  if (tampered) {
    for (const auto& e : report->integrity->replaced) add(e.what, e.how, e.phase);
    if (!scanned)
      for (const auto& e : report->integrity->scans)
        add(e.event, "called by the sample's code", e.phase);
  }
  r.detail += "; tampered: " + (what.empty() ? std::string("the guard found a change") : what) +
              " (a sample must not change what its verdict rests on, nor look for the verifier)";
}

void apply_controls(VerifyResult& primary, const HarnessReport* mutant_report,
                    bool foreign_memory) {
  // A kernel that reads or writes out of bounds: its controls pass or fail as the memory around
  // its buffers lies, so they flag nothing (score_mutants voided its mutant runs; issue 52).
  if (foreign_memory || !voided(mutant_report)) return;
  const auto& c = *mutant_report->controls;
  // A run after the real one ran out of GPU memory (controls.infrastructure): the verifier's
  // failure, not the test's. No unstable_test; the sample is verified again (an infrastructure
  // result goes back to the queue, up to verifier.max_requeues).
  if (c.infrastructure) {
    add_flag(primary, kInfrastructure);
    primary.detail += "; infrastructure: " +
                      c.void_reason.value_or("a run after the real one ran out of GPU memory");
    return;
  }
  add_flag(primary, kUnstableTest);
  // Voided for the harness's reason (the kernel faulted in its bounds replay): that reason, the
  // cause of any control that failed after it too.
  if (c.void_reason || !c.failed) {
    primary.detail += "; unstable test: " +
                      c.void_reason.value_or("the harness voided every mutant run's result");
    return;
  }
  std::string by;
  for (const auto& run : c.runs)
    if (run.result == to_string(Verdict::failed)) {
      by = run.by.value_or("");
      break;
    }
  primary.detail += "; unstable test: a control run of the unmutated sample failed" +
                    (by.empty() ? std::string() : " (" + by + ")") +
                    ", so no mutant run's failure counts as a kill";
}

void apply_missing_mutant_runs(VerifyResult& primary, const std::string& why, bool infrastructure,
                               std::size_t attempts) {
  const std::string tries = attempts > 1 ? "in each of its " + std::to_string(attempts) +
                                               " attempts (the last: " + why + ")"
                                         : "(" + why + ")";
  if (infrastructure) {
    add_flag(primary, kInfrastructure);
    primary.detail +=
        "; infrastructure: the process of its mutant runs failed for the verifier's "
        "reasons " +
        tries + ", so none of its mutant runs or controls ran";
    return;
  }
  add_flag(primary, kUnstableTest);
  primary.detail +=
      "; unstable test: the process of its mutant runs (the skip-launch run, the output and "
      "kernel mutants, the controls) ended without their report " +
      tries +
      ", while its real run passed: none of them ran, so nothing shows that its test checks the "
      "kernel (a sample must run alike in every process that runs it)";
}

std::string kernel_mutant_meaning(const KernelSurvivor& s) {
  std::string where;
  if (s.section_line)
    where = " (" + s.section.value_or("code") + " line " + std::to_string(*s.section_line) + ")";
  std::string out = "the test still passes when " + s.desc + where;
  if (!s.hint.empty()) out += ": " + s.hint;
  return out;
}

std::string kernel_mutant_meaning(const nlohmann::json& s) {
  auto survivor = KernelSurvivor::from_json(s);
  return survivor ? kernel_mutant_meaning(*survivor) : "a kernel mutant survived";
}

void apply_output_facts(VerifyResult& r) {
  if (r.verdict != Verdict::passed || !r.harness || !r.harness->coverage) return;
  if (r.harness->coverage->constant_outputs) {
    add_flag(r, kConstantOutput);
    r.detail +=
        "; constant output: every output its launches wrote had all elements equal, so the test "
        "cannot tell the right kernel from many wrong ones (inputs of all zeros or constant "
        "rows?)";
  }
}

std::string origin_meaning(const HarnessReport& report) {
  const auto* c = report.origin ? report.origin->host_check() : nullptr;
  if (c == nullptr) return std::string();
  const std::string on = c->on == "inputs()" ? c->on : "inputs() " + c->on;
  const int percent = static_cast<int>(100.0 * c->share.value_or(1.0) + 0.5);
  return "on " + on + ", " + std::to_string(percent) +
         "% of the output's elements still agree with the declared reference when every output "
         "of the sample's kernels is replaced right after its launch (NaN, then random values): "
         "the wrapper launches its kernel but answers with what the host computed (PyTorch or "
         "Python), so the kernel's own result is never what the verifier compares";
}

void apply_origin_facts(VerifyResult& r) {
  if (r.verdict != Verdict::passed || !r.harness) return;
  std::string what = origin_meaning(*r.harness);
  if (what.empty()) return;
  add_flag(r, kKernelNotUsed);
  r.detail += "; kernel not used: " + what;
}

namespace {

// A run (or a control run) that died of an illegal memory access, found by the drivers' `words`
// in what it printed: the sample is out of bounds, the report's "bounds" says where (`in`) and
// what, and the typed report agrees (repair's prompt reads it). A control's finding keeps what
// the real run's bounds check left in the object (its figures); a dead run had none.
void record_fault(VerifyResult& r, const std::string& words, const std::string& in,
                  const std::string& what, bool keep_bounds) {
  add_flag(r, kOutOfBounds);
  nlohmann::json& bounds = r.report["bounds"];
  if (!keep_bounds || !bounds.is_object()) bounds = nlohmann::json::object();
  bounds["out_of_bounds"] = true;
  bounds["detail"] = what;
  bounds["fault"] = {{"error", words}, {"in", in}};
  if (r.harness) r.harness->bounds = HarnessReport::Bounds{true, what, true};
  r.detail += "; out of bounds: " + what;
}

}  // namespace

void apply_bounds_facts(VerifyResult& r) {
  if (std::find(r.flags.begin(), r.flags.end(), kOutOfBounds) != r.flags.end()) return;
  // The report comes from the sample's own process: its fields were checked as it was parsed.
  if (r.harness && r.harness->bounds && r.harness->bounds->out_of_bounds) {
    add_flag(r, kOutOfBounds);
    const std::string& what = r.harness->bounds->detail;
    r.detail += "; out of bounds: " +
                (what.empty() ? std::string("a kernel reads or writes outside its buffers") : what);
    return;
  }
  if (r.verdict != Verdict::error && r.verdict != Verdict::crashed) return;
  // The drivers' words for an access to an address no allocation holds (CUDA, HIP), from the
  // file the harness's guard-zone check reads too (kforge_harness/fault_words.txt).
  static const std::vector<std::string> kFault = listed_lines(harness_fault_words());
  for (const std::string* text : {&r.detail, &r.stderr_tail})
    for (const auto& words : kFault)
      if (text->find(words) != std::string::npos) {
        record_fault(r, words, "the run",
                     "the run died of an illegal memory access (a kernel read or wrote outside "
                     "its buffers; whether that faults depends on what lies next to them)",
                     false);
        return;
      }
}

void apply_control_faults(VerifyResult& primary, const HarnessReport* mutant_report) {
  if (!mutant_report || !mutant_report->controls ||
      std::find(primary.flags.begin(), primary.flags.end(), kOutOfBounds) != primary.flags.end())
    return;
  static const std::vector<std::string> kFault = listed_lines(harness_fault_words());
  for (const auto& run : mutant_report->controls->runs) {
    if (run.result != to_string(Verdict::failed) || !run.by) continue;
    for (const auto& words : kFault) {
      if (run.by->find(words) == std::string::npos) continue;
      record_fault(primary, words, "a " + run.kind + " control run",
                   "a " + run.kind +
                       " control run of the unmutated sample died of an illegal memory access "
                       "(a kernel read or wrote outside its buffers; whether that faults depends "
                       "on what lies next to them)",
                   true);
      return;
    }
  }
}

std::string mutant_meaning(std::string_view mutant) {
  if (mutant == "skip_launch")
    return "the test still passes when the kernel is not launched at all: it checks nothing the "
           "kernel computes";
  if (mutant == "tail")
    return "the test still passes when the last element of each output is far off: it never "
           "checks the tail";
  if (mutant == "interior")
    return "the test still passes when one element in the middle of each output is far off: it "
           "checks only part of the output, or an aggregate";
  if (mutant == "permute")
    return "the test still passes when the output's elements are reordered: it compares sums, "
           "norms or sorted values, not the elements in place";
  if (mutant == "permute_row")
    return "the test still passes when the elements inside each row (the last dimension) are "
           "reordered: it checks row sums or rows as sets, not the elements in place";
  if (mutant == "scale")
    return "the test still passes when every output element is a few percent off: its "
           "tolerance is too loose";
  if (mutant == "zero")
    return "the test still passes when every output is zeroed: its golden result comes from "
           "the kernel itself, or it checks nothing";
  return "the test still passes under mutant " + std::string(mutant);
}

}  // namespace kforge::verify
