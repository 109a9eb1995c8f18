#pragma once
// What the verifier decides about one sample, and how a finished run becomes that decision.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::verify {

// Exactly the verdicts of the `verifications` table.
enum class Verdict { passed, failed, error, timeout, crashed, invalid, skipped };

const char* to_string(Verdict v);
std::optional<Verdict> parse_verdict(const std::string& s);

// Quality flags on a passing sample: it is not counted as verified when it has any.
inline constexpr const char* kNoKernelLaunch = "no_kernel_launch";  // no kernel of its code ran
inline constexpr const char* kMutantSurvived = "mutant_survived";   // passes with launches skipped
// Set when the verifier itself could not run the sample (sandbox set-up, no usable device):
// the verdict says nothing about the sample and the caller may retry.
inline constexpr const char* kInfrastructure = "infrastructure";
// Set when the sample needs what the verifier's Python lacks (torch, triton or numpy is not
// installed): the verdict stands, but says nothing about the sample, so it is not repaired.
inline constexpr const char* kEnvironment = "environment";

struct VerifyResult {
  std::string key;
  std::int64_t tag = 0;  // the caller's, from the request
  Verdict verdict = Verdict::error;
  std::string detail;  // one line: the assertion, exception, signal or deadline
  std::vector<std::string> flags;
  nlohmann::json report;         // the harness's report plus what the pool observed ("pool")
  std::string script;            // the exact script that ran (empty when none was assembled)
  std::string stdout_text;       // captured, capped (head and tail)
  std::string stderr_tail;       // the last lines of stderr
  std::int64_t duration_ms = 0;  // wall time of the sample's process(es)
  std::string device;

  // passed, with no quality flag.
  bool verified() const { return verdict == Verdict::passed && flags.empty(); }
};

// Why the pool ended a run, if it did.
enum class KillReason { none, timeout, memory_rss, memory_cgroup, worker_lost };

// Everything known about one finished run of the harness.
struct RunFacts {
  std::optional<nlohmann::json> report;  // the harness's JSON, if it wrote a whole one
  KillReason killed = KillReason::none;
  int wait_status = -1;  // raw waitpid status; -1 unknown
  double timeout_s = 0;
  std::int64_t memory_cap_mb = 0;
  std::int64_t peak_rss_kb = 0;
  std::string stderr_tail;
};

struct Classified {
  Verdict verdict = Verdict::error;
  std::string detail;
  std::vector<std::string> flags;
};

// The verdict for a run (the mutant check is applied separately, by the pool).
Classified classify(const RunFacts& f);

// "SIGSEGV" for 11; "signal N" when unknown.
std::string signal_name(int sig);

// The last non-empty lines of text (at most max_lines lines and max_bytes bytes).
std::string last_lines(const std::string& text, std::size_t max_lines, std::size_t max_bytes);

}  // namespace kforge::verify
