#pragma once
// Internal: the pool's verdict assembly (part of Pool::Impl, pool_impl.hpp; pool_verdict.cpp).
// What a sample's result becomes once its run is read: the no-launch check, the mutant re-run
// queued for a passing sample whose kernels ran, the mutant run's result recorded on the real
// run's, a sample that cannot be run failed as the verifier's own error; then the result is
// handed over through the sample bookkeeping. Threads: as Pool, one thread.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/verify/config.hpp"
#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/pool.hpp"
#include "kforge/verify/verdict.hpp"
#include "pool_samples.hpp"

namespace kforge::verify {

class VerdictAssembly {
 public:
  // `cfg`, `samples` and `stats` are the pool's; they outlive this.
  VerdictAssembly(const VerifierConfig& pool_cfg, SampleBook& pool_samples, PoolStats& pool_stats)
      : cfg(pool_cfg), samples(pool_samples), stats(pool_stats) {}

  // Applies the quality checks and the mutant re-run, then hands the result over. guard: the
  // guard's lines of the process (split_result_lines; the pool also stores them as
  // res.report["guard"]).
  void complete(Sample job, VerifyResult res,
                const nlohmann::json& guard = nlohmann::json::array());
  // The sample could not be run: an error verdict flagged infrastructure, handed over.
  void fail_job(Sample job, const std::string& why);
  // The caller cancelled the sample (Pool::cancel): a result with `cancelled` set, handed over.
  void cancel(Sample job, const std::string& why);
  // Logs, once per pool and target, that this Triton cannot compile for a target.
  void note_unavailable_targets(const VerifyResult& res);
  // Queues the sample's mutant runs in a process of their own, next in the queue: `primary` its
  // real run's result, `lost` how earlier attempts of them ended.
  void queue_mutant_run(Sample& job, VerifyResult primary, std::vector<std::string> lost);
  // A passing sample's mutant runs whose process left them unrun (mutant_checks_missing): run
  // them once more in a process of their own; false when they already were (the caller then
  // attaches the result, which flags the sample).
  bool rerun_mutant(Sample& job, VerifyResult& primary, const std::optional<HarnessReport>& report,
                    const Classified& c);
  // Records the mutant run on the real run's result. A mutant run that passes (and did not
  // fail for the verifier's own reasons) means the test checks nothing about the kernel.
  static void attach_mutant(VerifyResult& primary, Verdict verdict, const std::string& detail,
                            const std::vector<std::string>& flags, std::int64_t duration_ms,
                            const std::optional<HarnessReport>& report, const nlohmann::json& guard,
                            const char* process, const std::vector<std::string>& lost_before = {});
  // Whether the mutant runs' process left its checks unrun: it wrote no report of them (it died,
  // hung or was killed) or failed for the verifier's reasons (infrastructure).
  static bool mutant_checks_missing(const std::vector<std::string>& flags,
                                    const std::optional<HarnessReport>& report);

 private:
  const VerifierConfig& cfg;
  SampleBook& samples;
  PoolStats& stats;
  std::set<std::string> warned_unavailable_targets;
};

}  // namespace kforge::verify
