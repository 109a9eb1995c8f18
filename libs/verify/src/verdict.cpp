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
  switch (v) {
    case Verdict::passed:
      return "passed";
    case Verdict::failed:
      return "failed";
    case Verdict::error:
      return "error";
    case Verdict::timeout:
      return "timeout";
    case Verdict::crashed:
      return "crashed";
    case Verdict::invalid:
      return "invalid";
    case Verdict::skipped:
      return "skipped";
  }
  return "error";
}

std::optional<Verdict> parse_verdict(const std::string& s) {
  for (Verdict v : {Verdict::passed, Verdict::failed, Verdict::error, Verdict::timeout,
                    Verdict::crashed, Verdict::invalid, Verdict::skipped})
    if (s == to_string(v)) return v;
  return std::nullopt;
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
      c.detail = "the verifier worker died while running the sample";
      c.flags.push_back(kInfrastructure);
      return c;
    case KillReason::none:
      break;
  }
  if (f.report && f.report->is_object() && f.report->contains("verdict")) {
    const auto& r = *f.report;
    auto v = parse_verdict(r.value("verdict", std::string("error")));
    c.verdict = v.value_or(Verdict::error);
    c.detail = r.value("detail", std::string());
    std::string phase = r.value("phase", std::string());
    if (phase == "sandbox" || phase == "request" || phase == "harness")
      c.flags.push_back(kInfrastructure);
    if (r.contains("environment") && r["environment"].is_string()) {
      c.flags.push_back(kEnvironment);
      c.detail += "; " + r["environment"].get<std::string>();
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
                      {"survived", survived}};
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

KernelScore score_kernel(const nlohmann::json& kb) {
  KernelScore k;
  if (!kb.is_object()) return k;
  k.ran = true;
  for (const auto& e : kb.value("mutants", nlohmann::json::array())) {
    if (!e.is_object()) continue;
    ++k.tried;
    std::string result = e.value("result", std::string());
    if (result == "killed") ++k.killed, ++k.applicable;
    if (result == "survived") ++k.applicable;
    if (result == "equivalent") ++k.equivalent;
  }
  auto survived = kb.value("survived", nlohmann::json::array());
  for (const auto& s : survived)
    if (s.is_object()) k.survived.push_back(s);
  k.stopped = kb.value("stopped", std::string());
  return k;
}

}  // namespace

namespace {
bool control_failed(const nlohmann::json& mutant_report) {
  if (!mutant_report.is_object()) return false;
  auto c = mutant_report.find("controls");
  if (c == mutant_report.end() || !c->is_object()) return false;
  auto f = c->find("failed");
  return f != c->end() && f->is_boolean() && f->get<bool>();
}
}  // namespace

MutationScore score_mutants(Verdict skip_verdict, bool skip_infrastructure,
                            const nlohmann::json& mutant_report) {
  MutationScore s;
  // A failed control voids every kill, the skip-launch run's too (apply_controls flags it).
  if (!skip_infrastructure && !(control_failed(mutant_report) && skip_verdict != Verdict::passed)) {
    ++s.applicable;
    if (skip_verdict == Verdict::passed)
      s.survived.push_back("skip_launch");
    else
      ++s.killed;
  }
  if (mutant_report.is_object() && mutant_report.contains("kernel_battery"))
    s.kernel = score_kernel(mutant_report["kernel_battery"]);
  if (!mutant_report.is_object() || !mutant_report.contains("battery")) return s;
  const auto& b = mutant_report["battery"];
  if (!b.is_object()) return s;
  for (const auto& e : b.value("mutants", nlohmann::json::array())) {
    if (!e.is_object()) continue;
    std::string name = e.value("mutant", std::string());
    std::string result = e.value("result", std::string());
    if (result == "killed") {
      ++s.killed, ++s.applicable;
    } else if (result == "survived") {
      ++s.applicable;
      s.survived.push_back(name);
      if (e.contains("launch") && e["launch"].is_number_integer())
        s.per_launch.emplace_back(name, e["launch"].get<int>());
    } else if (result == "not_applicable") {
      s.not_applicable.push_back(name);
    }
  }
  for (const auto& n : b.value("not_run", nlohmann::json::array()))
    if (n.is_string()) s.not_run.push_back(n.get<std::string>());
  s.stopped = b.value("stopped", std::string());
  if (s.stopped.empty() && b.contains("error") && b["error"].is_string())
    s.stopped = b["error"].get<std::string>();
  return s;
}

namespace {
void add_flag(VerifyResult& r, const char* flag) {
  if (std::find(r.flags.begin(), r.flags.end(), flag) == r.flags.end()) r.flags.push_back(flag);
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
    out.reports.push_back(std::move(j));
  }
  return out;
}

void apply_integrity(VerifyResult& r, const nlohmann::json& report) {
  // The report comes from the sample's own process: each field is checked, never trusted.
  if (!report.is_object()) return;
  const nlohmann::json none = nlohmann::json::object();
  auto in_it = report.find("integrity");
  const auto& in = in_it != report.end() && in_it->is_object() ? *in_it : none;
  auto t = in.find("tampered");
  bool tampered = t != in.end() && t->is_boolean() && t->get<bool>();
  // The guard's lines, written on the result pipe the moment of a scan (split_result_lines):
  // they stand even when the sample rewrote the report that followed.
  auto g = report.find("guard");
  bool scanned = g != report.end() && g->is_array() && !g->empty();
  if (!tampered && !scanned) return;
  bool first = std::find(r.flags.begin(), r.flags.end(), kTampered) == r.flags.end();
  add_flag(r, kTampered);
  if (!first) return;
  std::string what;
  if (scanned)
    for (const auto& e : *g)
      if (e.is_string() && what.size() < 300)
        what += (what.empty() ? "" : "; ") + e.get<std::string>() + " called by the sample's code";
  auto list = [&](const char* key, const char* name_key, const char* how_key) {
    auto l = in.find(key);
    if (l == in.end() || !l->is_array()) return;
    for (const auto& e : *l) {
      if (!e.is_object() || what.size() > 300) continue;
      std::string name = e.value(name_key, std::string());
      std::string how = how_key ? e.value(how_key, std::string()) : "called by the sample's code";
      what += (what.empty() ? "" : "; ") + name + " " + how + " (in the " +
              e.value("phase", std::string("?")) + " run)";
    }
  };
  list("replaced", "what", "how");
  if (!scanned) list("scans", "event", nullptr);
  r.detail += "; tampered: " + (what.empty() ? std::string("the guard found a change") : what) +
              " (a sample must not change what its verdict rests on, nor look for the verifier)";
}

void apply_controls(VerifyResult& primary, const nlohmann::json& mutant_report) {
  if (!control_failed(mutant_report)) return;
  add_flag(primary, kUnstableTest);
  std::string by;
  for (const auto& c : mutant_report["controls"].value("runs", nlohmann::json::array()))
    if (c.is_object() && c.value("result", std::string()) == "failed") {
      by = c.value("by", std::string());
      break;
    }
  primary.detail += "; unstable test: a control run of the unmutated sample failed" +
                    (by.empty() ? std::string() : " (" + by + ")") +
                    ", so no mutant run's failure counts as a kill";
}

std::string kernel_mutant_meaning(const nlohmann::json& s) {
  if (!s.is_object()) return "a kernel mutant survived";
  std::string where;
  if (s.contains("section_line") && s["section_line"].is_number_integer())
    where = " (" + s.value("section", std::string("code")) + " line " +
            std::to_string(s["section_line"].get<std::int64_t>()) + ")";
  std::string out = "the test still passes when " +
                    s.value("desc", std::string("the kernel is "
                                                "changed")) +
                    where;
  std::string hint = s.value("hint", std::string());
  if (!hint.empty()) out += ": " + hint;
  return out;
}

void apply_output_facts(VerifyResult& r) {
  if (r.verdict != Verdict::passed || !r.report.is_object()) return;
  const auto& cov = r.report.value("coverage", nlohmann::json::object());
  if (cov.is_object() && cov.value("constant_outputs", false)) {
    add_flag(r, kConstantOutput);
    r.detail +=
        "; constant output: every output its launches wrote had all elements equal, so the test "
        "cannot tell the right kernel from many wrong ones (inputs of all zeros or constant "
        "rows?)";
  }
}

void apply_bounds_facts(VerifyResult& r) {
  if (std::find(r.flags.begin(), r.flags.end(), kOutOfBounds) != r.flags.end()) return;
  // The report comes from the sample's own process: each field is checked, never trusted.
  const nlohmann::json none = nlohmann::json::object();
  const auto& b = r.report.is_object() && r.report.contains("bounds") ? r.report["bounds"] : none;
  auto found = b.is_object() ? b.find("out_of_bounds") : b.end();
  if (found != b.end() && found->is_boolean() && found->get<bool>()) {
    add_flag(r, kOutOfBounds);
    auto d = b.find("detail");
    std::string what = d != b.end() && d->is_string() ? d->get<std::string>() : std::string();
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
        add_flag(r, kOutOfBounds);
        r.report["bounds"] = {{"out_of_bounds", true},
                              {"fault", {{"error", words}, {"in", "the run"}}}};
        r.detail +=
            "; out of bounds: the run died of an illegal memory access (a kernel read or "
            "wrote outside its buffers; whether that faults depends on what lies next to "
            "them)";
        return;
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
