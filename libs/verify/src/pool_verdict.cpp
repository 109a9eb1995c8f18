#include "pool_impl.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kforge/core/fs.hpp"
#include "kforge/verify/targets.hpp"

namespace kforge::verify {

namespace fs = std::filesystem;

namespace {

// One report of the result pipe (split_result_lines): the JSON (kept in `raw`, to be stored) and
// its report, parsed once against report_fields.txt (harness_report.hpp). A report that does not
// match is an infrastructure error naming the field (RunFacts::report_error), never read with
// defaults.
void take_report(nlohmann::json line, nlohmann::json& raw, RunFacts& facts) {
  raw = std::move(line);
  if (!raw.is_object()) {
    raw = nlohmann::json::object();
    return;
  }
  auto h = parse_harness_report(raw, ReportOrigin::harness);
  if (h.ok())
    facts.report = std::move(*h);
  else
    facts.report_error = h.error().message;
}

}  // namespace

// What the pool knows of a run, for the report's "pool": mode, slot, device, exit, memory, CPU,
// output sizes, deadline, uid, whether prestarted, time in the queue.
nlohmann::json Pool::Impl::run_facts_json(const Slot& s, const SampleProcess& r,
                                          const std::string& device) const {
  return {
      {"mode", warm ? "warm" : "fresh"},
      {"slot", s.index},
      {"device", device},
      {"wait_status", r.wait_status},
      {"maxrss_kb", r.maxrss_kb},
      {"cpu_ms", r.cpu_ms},
      {"peak_rss_kb", r.peak_rss_kb},
      {"memory_watch", r.cgroup.empty() && !(cgroups && cgroups->available()) ? "rss" : "cgroup"},
      {"stdout_bytes", r.out.total()},
      {"stderr_bytes", r.err.total()},
      {"output_truncated", r.out.truncated() || r.err.truncated()},
      {"timeout_s", r.timeout_s},
      {"uid", s.own_uid ? static_cast<std::int64_t>(r.uid) : -1},
      {"prestarted", r.prestarted},
      {"lent", s.lent},  // ran on a lent slot (verifier.timing.lend)
      {"queue_ms",
       r.job.submitted == SteadyTime{}
           ? std::int64_t{-1}
           : std::chrono::duration_cast<milliseconds>(r.dispatched - r.job.submitted).count()},
      // When it left the queue, counted from the pool's creation (the workers' start): the
      // first samples' say how long the pool took to start (bench/verify/pool_start.py).
      {"dispatched_ms", std::chrono::duration_cast<milliseconds>(r.dispatched - created).count()}};
}

void Pool::Impl::finish_run(Slot& s) {
  std::unique_ptr<SampleProcess> run = std::move(s.run);
  SampleProcess& r = *run;
  if (s.lent)
    stats.lent_ms += std::chrono::duration_cast<milliseconds>(now() - r.dispatched).count();
  // Whatever the sample left behind dies with it.
  std::int64_t oom = 0;
  if (!r.cgroup.empty()) {
    oom = cgroups->oom_kills(r.cgroup);
    cgroups->destroy(r.cgroup), r.cgroup.clear();
  }
  if (s.own_uid)
    sys::sweep_uid(*env, r.uid);
  else if (r.pid > 0)
    kill_group(*env, r.pid);
  drain_fd(r.out_fd, r, Stream::out);
  drain_fd(r.err_fd, r, Stream::err);
  drain_fd(r.res_fd, r, Stream::result);
  drop_process(r);
  if (r.prestarted && r.killed == KillReason::none) s.spare_failures = 0;
  if (!r.cancelled.empty()) {  // Pool::cancel: no verdict, whatever the run wrote
    verdicts.cancel(std::move(r.job), r.cancelled);
    return;
  }

  // The result pipe holds the real run's report and, after a mutant run in the same process,
  // the mutant run's: one JSON object per line.
  // The guard's lines ({"guard": EVENT}) come between them, read apart (split_result_lines).
  nlohmann::json raw = nlohmann::json::object(), second_raw = nlohmann::json::object();
  RunFacts f, mf;  // mf: the mutant run's facts: how the process ended belongs to it
  nlohmann::json guard = nlohmann::json::array();
  if (!r.result.empty() && !r.result_overflow) {
    auto lines = split_result_lines(r.result);
    guard = std::move(lines.guard);
    if (!lines.reports.empty()) take_report(std::move(lines.reports[0]), raw, f);
    if (r.mutant_phase && lines.reports.size() > 1)
      take_report(std::move(lines.reports[1]), second_raw, mf);
  }
  if (r.mutant_phase) {
    mf.killed = r.killed;
    mf.wait_status = r.wait_status;
    mf.timeout_s = r.timeout_s + (cfg.mutant_check && cfg.kernel_mutants > 0
                                      ? cfg.kernel_mutant_time_s
                                      : 0);  // its deadline had the kernel battery's budget
    mf.memory_cap_mb = cfg.memory_cap_mb;
    mf.peak_rss_kb = std::max(r.peak_rss_kb, r.maxrss_kb);
    mf.stderr_tail = r.err.tail(8192);
    if (mf.killed == KillReason::none && oom > 0 && !mf.report && mf.report_error.empty())
      mf.killed = KillReason::memory_cgroup;
    oom = 0;
  }
  f.killed = r.mutant_phase ? KillReason::none : r.killed;
  if (f.killed == KillReason::none && oom > 0 && !f.report && f.report_error.empty())
    f.killed = KillReason::memory_cgroup;
  f.wait_status = r.mutant_phase ? 0 : r.wait_status;
  f.timeout_s = r.timeout_s;
  f.memory_cap_mb = cfg.memory_cap_mb;
  f.peak_rss_kb = std::max(r.peak_rss_kb, r.maxrss_kb);
  f.stderr_tail = r.err.tail(8192);
  f.lost = r.lost;
  auto c = classify(f);

  // A lost worker says nothing about the sample: run it once more.
  if (r.killed == KillReason::worker_lost && r.job.infra_attempts < 1) {
    r.job.infra_attempts++;
    samples.push_front(std::move(r.job));
    return;
  }

  VerifyResult res;
  res.key = r.job.request.key;
  res.verdict = c.verdict;
  res.detail = c.detail;
  res.flags = c.flags;
  if (f.report) {
    res.report = std::move(raw);
    res.harness = std::move(f.report);
    if (res.harness->script) {
      res.script = std::move(*res.harness->script);
      res.harness->script.reset();
      res.report.erase("script");
    }
  }
  res.stdout_text = r.out.text();
  res.stderr_tail = last_lines(r.err.text(), 60, 8192);
  SteadyTime end = now();
  res.duration_ms =
      std::chrono::duration_cast<milliseconds>((r.mutant_phase ? r.primary_done : end) - r.started)
          .count();
  res.device = devices[s.device].device.id;
  nlohmann::json pool_facts = run_facts_json(s, r, res.device);
  if (r.result_overflow) pool_facts["report_overflow"] = true;
  if (!f.report_error.empty()) pool_facts["rejected_report"] = std::move(raw);
  res.report["pool"] = pool_facts;
  if (!r.job.mutant) {
    apply_output_facts(res);
    apply_origin_facts(res);
    apply_bounds_facts(res);
  }
  if (!guard.empty()) res.report["guard"] = guard;
  apply_integrity(res, res.harness ? &*res.harness : nullptr, guard);
  verdicts.note_unavailable_targets(res);
  ++stats.completed;
  if (r.mutant_phase) {
    auto mc = classify(mf);
    if (verdicts.rerun_mutant(r.job, res, mf.report, mc)) return;
    VerdictAssembly::attach_mutant(
        res, mc.verdict, mc.detail, mc.flags,
        std::chrono::duration_cast<milliseconds>(end - r.primary_done).count(), mf.report,
        nlohmann::json::array(), "same");  // the pipe's guard lines are on res already
    ++stats.mutant_runs;
    samples.deliver(std::move(r.job.done), std::move(res));
    return;
  }
  verdicts.complete(std::move(r.job), std::move(res), guard);
}

// Applies the quality checks and the mutant re-run, then hands the result over.
// Records the mutant run on the real run's result. A mutant run that passes (and did not
// fail for the verifier's own reasons) means the test checks nothing about the kernel.
void VerdictAssembly::attach_mutant(VerifyResult& primary, Verdict verdict,
                                    const std::string& detail,
                                    const std::vector<std::string>& flags, std::int64_t duration_ms,
                                    const std::optional<HarnessReport>& report,
                                    const nlohmann::json& guard, const char* process,
                                    const std::vector<std::string>& lost_before) {
  nlohmann::json skipped = nlohmann::json::object();
  if (report && report->triton)
    for (const auto& [kernel, n] : report->triton->launches) skipped[kernel] = n;
  nlohmann::json m = {{"verdict", to_string(verdict)},
                      {"detail", detail},
                      {"duration_ms", duration_ms},
                      {"launches_skipped", std::move(skipped)},
                      {"process", process}};
  if (report && report->poisoned_bytes) m["poisoned_bytes"] = *report->poisoned_bytes;
  // Whether the mutant run compiled anything (it should not: its launches are skipped).
  if (report && report->triton) {
    m["compiles"] = report->triton->compile.count;
    m["compile_ms"] = report->triton->compile.ms;
  }
  bool infra = std::find(flags.begin(), flags.end(), kInfrastructure) != flags.end();
  if (infra) m["infrastructure"] = true;
  // How each attempt of the mutant runs' process that wrote no report of them ended, this one's
  // last (rerun_mutant: an earlier one was made again).
  const bool missing = mutant_checks_missing(flags, report);
  std::vector<std::string> lost = lost_before;
  if (missing) lost.push_back(detail);
  if (!lost.empty()) m["lost"] = lost;
  // The mutant runs' own reports, as the harness wrote them (what they ran, for debug).
  if (report && report->battery) m["battery"] = report->battery->raw;
  if (report && report->kernel_battery) m["kernel_battery"] = report->kernel_battery->raw;
  // The control runs among them, and what the guard found in the process that ran them.
  if (report && report->controls) m["controls"] = report->controls->raw;
  if (report && report->integrity) m["integrity"] = report->integrity->raw;
  if (guard.is_array() && !guard.empty()) m["guard"] = guard;
  // Its phases (skip_launch, output_mutants, kernel_battery): times, and what broke or was left
  // behind (docs/VERIFIER.md, "Phases").
  if (report) {
    if (!report->phase_times.empty()) m["phase_times"] = report->phase_times;
    if (!report->phase_errors.empty()) m["phase_errors"] = report->phase_errors;
    if (!report->phase_state.empty()) m["phase_state"] = report->phase_state;
  }
  primary.report["mutant"] = std::move(m);
  // Results the harness voided (a failed control, or the sample's own kernel dying of an illegal
  // memory access in its bounds replay: controls.void) void the skip-launch run's survival as
  // well as its kill (issue 52: score_mutants): the sample is flagged unstable_test instead,
  // whichever side the lot put it. A sample flagged out_of_bounds (a read or write outside its
  // buffers in its bounds replay, or a fault) gets neither flag from its mutant runs: what they
  // and its controls compute is the memory around its buffers, which differs from run to run; it
  // is never verified anyway.
  const HarnessReport* h = report ? &*report : nullptr;
  apply_control_faults(primary, h);  // a control dying of an illegal access is out of bounds too
  const bool foreign =
      std::find(primary.flags.begin(), primary.flags.end(), kOutOfBounds) != primary.flags.end();
  bool voided = (report && report->controls && report->controls->voided) || foreign;
  if (verdict == Verdict::passed && !infra && !voided) primary.flags.emplace_back(kMutantSurvived);
  apply_mutation_score(primary, score_mutants(verdict, missing, h, foreign));
  apply_controls(primary, h, foreign);
  apply_integrity(primary, h, guard);
  // Its mutant runs' process ended without their report again: none of its checks ran.
  if (missing && !foreign)
    apply_missing_mutant_runs(primary, detail, infra, lost_before.size() + 1);
}

void VerdictAssembly::note_unavailable_targets(const VerifyResult& res) {
  for (const auto& t : cross_compile_results(res)) {
    if (t.result != store::TargetResultKind::unavailable ||
        !warned_unavailable_targets.insert(t.target).second)
      continue;
    spdlog::warn(
        "verifier: cannot cross-compile for {}: {}; its samples record 'unavailable' for it and "
        "are not failed (a Triton with that backend is needed)",
        t.target, t.error);
  }
}

bool VerdictAssembly::mutant_checks_missing(const std::vector<std::string>& flags,
                                            const std::optional<HarnessReport>& report) {
  return !report || std::find(flags.begin(), flags.end(), kInfrastructure) != flags.end();
}

// The process of a passing sample's mutant runs (its skip-launch run, output and kernel mutant
// runs, controls) that wrote no report of them, or failed for the verifier's reasons, leaves the
// sample with none of its checks. A sample's code can cause that on purpose (it ends, kills or
// hangs its own process when it is imported again, issue 52), a lost worker by chance: the runs
// are made once more, in a process of their own (a mutant re-run, next in the queue), and a second
// such end flags the sample (attach_mutant). `job` is the sample's run (its real run with the
// mutant runs after it in the same process) or its mutant re-run; `primary` its real run's result.
bool VerdictAssembly::rerun_mutant(Sample& job, VerifyResult& primary,
                                   const std::optional<HarnessReport>& report,
                                   const Classified& c) {
  const std::size_t before = job.mutant ? job.mutant_lost.size() : 0;
  if (before >= 1 || !mutant_checks_missing(c.flags, report)) return false;
  // A kernel flagged out_of_bounds gets nothing from its mutant runs (attach_mutant): no re-run.
  const VerifyResult& real = job.mutant ? *job.primary : primary;
  if (real.verdict != Verdict::passed ||
      std::find(real.flags.begin(), real.flags.end(), kOutOfBounds) != real.flags.end())
    return false;
  spdlog::info(
      "verifier: sample {}: its mutant runs' process ended without their report ({}); "
      "running them once more in a process of their own",
      job.request.key, c.detail);
  std::vector<std::string> lost = job.mutant_lost;
  lost.push_back(c.detail);
  queue_mutant_run(job, job.mutant ? std::move(*job.primary) : std::move(primary), std::move(lost));
  return true;
}

void VerdictAssembly::queue_mutant_run(Sample& job, VerifyResult primary,
                                       std::vector<std::string> lost) {
  Sample m;
  m.id = samples.new_id();
  m.origin = job.origin;
  m.request = job.request;
  m.done = std::move(job.done);
  m.mutant = true;
  m.primary = std::move(primary);
  m.mutant_lost = std::move(lost);
  ++stats.mutant_runs;
  samples.push_front(std::move(m));
}

void VerdictAssembly::complete(Sample job, VerifyResult res, const nlohmann::json& guard) {
  if (job.mutant) {
    if (rerun_mutant(job, res, res.harness, Classified{res.verdict, res.detail, res.flags})) return;
    VerifyResult primary = std::move(*job.primary);
    attach_mutant(primary, res.verdict, res.detail, res.flags, res.duration_ms, res.harness, guard,
                  "new", job.mutant_lost);
    samples.deliver(std::move(job.done), std::move(primary));
    return;
  }
  if (res.verdict == Verdict::passed) {
    static const HarnessReport::Triton kNone;
    const auto& t = res.harness && res.harness->triton ? *res.harness->triton : kNone;
    const auto& kernels = t.kernels;
    if (t.total_launches() == 0) {
      // The code defines no Triton kernel, or none of its kernels ran: nothing was verified.
      res.flags.emplace_back(kNoKernelLaunch);
      bool defines = !kernels.empty() || (res.harness && !res.harness->code_kernels.empty());
      res.report["no_kernel_launch"] =
          defines ? "no kernel of its code was launched" : "the code defines no @triton.jit kernel";
    } else if (!kernels.empty() && cfg.mutant_check) {
      queue_mutant_run(job, std::move(res), {});
      return;
    }
  }
  samples.deliver(std::move(job.done), std::move(res));
}

void VerdictAssembly::fail_job(Sample job, const std::string& why) {
  VerifyResult res;
  res.key = job.request.key;
  res.verdict = Verdict::error;
  res.detail = why;
  res.flags = {std::string(kInfrastructure)};
  res.report = {{"pool", {{"error", why}}}};
  if (job.mutant && job.primary) {
    VerifyResult primary = std::move(*job.primary);
    primary.report["mutant"] = {{"verdict", to_string(Verdict::error)}, {"detail", why}};
    // Its mutant runs never ran: it is not verified without them (issue 52).
    apply_missing_mutant_runs(primary, why, true, 1);
    samples.deliver(std::move(job.done), std::move(primary));
    return;
  }
  samples.deliver(std::move(job.done), std::move(res));
}

void VerdictAssembly::cancel(Sample job, const std::string& why) {
  VerifyResult res;
  res.key = job.request.key;
  res.verdict = Verdict::error;
  res.detail = why;
  res.flags = {std::string(kInfrastructure)};  // says nothing about the sample
  res.cancelled = true;
  res.report = {{"pool", {{"cancelled", why}}}};
  samples.deliver(std::move(job.done), std::move(res));
}

bool Pool::Impl::any_device_in_rotation() const {
  return std::any_of(devices.begin(), devices.end(),
                     [](const DeviceEntry& d) { return d.in_rotation; });
}

}  // namespace kforge::verify
