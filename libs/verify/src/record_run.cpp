#include "kforge/verify/record_run.hpp"

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>

#include "kforge/core/printable.hpp"
#include "kforge/verify/figures.hpp"
#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/speed.hpp"
#include "kforge/verify/targets.hpp"
#include "kforge/verify/verdict_line.hpp"

namespace kforge::verify {

namespace {

// printf into a string.
[[gnu::format(printf, 2, 3)]] void appendf(std::string& out, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    std::string buf(static_cast<std::size_t>(n) + 1, '\0');
    std::vsnprintf(buf.data(), buf.size(), fmt, ap2);
    buf.resize(static_cast<std::size_t>(n));
    out += buf;
  }
  va_end(ap2);
}

long long ll(std::int64_t v) {
  return static_cast<long long>(v);
}

}  // namespace

RecordRun::RecordRun(Pool& pool, RecordRunOptions opts, std::ostream* out)
    : pool_(pool), opts_(std::move(opts)), out_(out) {}

Status RecordRun::submit(std::int64_t index, VerifyRequest req) {
  if (!req.code) ++tally_.no_code;
  ++tally_.total;
  look_unwanted();
  while (!pool_.accepting() && unwanted_.count(index) == 0) {
    pool_.step(std::min(opts_.unwanted_every, std::chrono::milliseconds(100)));
    look_unwanted();
  }
  if (unwanted_.count(index) > 0) {  // withdrawn before it reached the pool
    withdraw(index);
    return {};
  }
  // A run given up before finish() (a bad record further on) is destroyed before the pool,
  // whose shutdown still hands its queued records back: those results go nowhere.
  auto id = pool_.submit(std::move(req),
                         [this, index, alive = std::weak_ptr<int>(alive_)](VerifyResult&& r) {
                           if (!alive.expired()) on_result(index, std::move(r));
                         });
  if (!id.ok()) return id.error();
  in_pool_[index] = *id;
  return {};
}

void RecordRun::look_unwanted() {
  if (!opts_.unwanted) return;
  const auto now = std::chrono::steady_clock::now();
  if (looked_ != std::chrono::steady_clock::time_point{} && now - looked_ < opts_.unwanted_every)
    return;
  looked_ = now;
  for (std::int64_t index : opts_.unwanted()) {
    if (!unwanted_.insert(index).second) continue;
    // Waiting for a slot: it never starts; running: its process group is killed. Its callback
    // comes in a later step with `cancelled` set.
    auto it = in_pool_.find(index);
    if (it == in_pool_.end()) continue;  // not submitted yet, or its result is in
    const std::uint64_t running = pool_.stats().cancelled_running;
    pool_.cancel(it->second, "no longer wanted (listed in the skip file)");
    if (pool_.stats().cancelled_running > running) ++tally_.stopped;
  }
}

void RecordRun::withdraw(std::int64_t index) {
  ++tally_.withdrawn;
  if (!opts_.full) {
    pending_[index] = nullptr;
    flush();
  }
}

void RecordRun::finish() {
  while (!pool_.idle()) {
    look_unwanted();
    pool_.step(std::min(opts_.unwanted_every, std::chrono::milliseconds(200)));
  }
  pool_.drain();  // results handed over but not yet delivered
}

void RecordRun::flush() {
  bool wrote = false;
  while (!pending_.empty() && pending_.begin()->first == written_ + passed_over_) {
    if (pending_.begin()->second.is_null()) {
      ++passed_over_;  // withdrawn: no line
    } else {
      if (out_ && *out_) *out_ << pending_.begin()->second.dump() << "\n";
      ++written_;
      wrote = true;
    }
    pending_.erase(pending_.begin());
  }
  if (wrote && out_) out_->flush();  // a reader sees each line once its turn came
}

nlohmann::ordered_json RecordRun::summary_line(std::int64_t index, const VerifyResult& r,
                                               const nlohmann::json& fig) {
  nlohmann::ordered_json line{{"index", index},
                              {"key", r.key},
                              {"verdict", to_string(r.verdict)},
                              {"detail", r.detail},
                              {"flags", r.flags}};
  for (const auto& [k, v] : fig.items()) line[k] = v;
  // The test's strength (docs/VERIFIER.md, "Output mutants": the pool's score, read from the
  // stored report through its declaration as sample_figures reads the pool's facts) and what it
  // exercised.
  if (auto stored = parse_stored_report(r.report); stored.ok() && *stored && (*stored)->mutation)
    line["mutation"] = (*stored)->mutation->raw;
  if (r.harness && r.harness->coverage) line["coverage"] = r.harness->coverage->raw;
  // The speed label (verifier.timing; docs/VERIFIER.md, "The speed label").
  if (auto l = speed_label(r)) line["speed"] = l->to_json();
  // Per target asked for: ok, error, unavailable or not_run (the sample did not pass, so
  // nothing was compiled); the errors' stage and first lines.
  auto targets = cross_compile_results(r);
  for (const auto& want : opts_.cross_compile)
    if (std::none_of(targets.begin(), targets.end(),
                     [&](const TargetResult& t) { return t.target == want; }))
      targets.push_back({want, store::TargetResultKind::not_run, "the sample did not pass", ""});
  std::sort(targets.begin(), targets.end(),
            [](const TargetResult& x, const TargetResult& y) { return x.target < y.target; });
  if (!targets.empty()) {
    line["cross_compile"] = cross_compile_summary(targets);
    nlohmann::ordered_json errors = nlohmann::ordered_json::object();
    for (const auto& t : targets) {
      ++tally_.by_target[t.target][std::string(to_string(t.result))];
      if (t.result == store::TargetResultKind::error) errors[t.target] = t.error;
    }
    if (!errors.empty()) line["cross_compile_errors"] = std::move(errors);
  }
  return line;
}

void RecordRun::note_slow(std::int64_t index, const VerifyResult& r, nlohmann::json fig) {
  auto& slow = tally_.slowest;
  std::int64_t ms = r.duration_ms + fig["phases"].value("mutant", std::int64_t{0});
  auto pos = std::find_if(slow.begin(), slow.end(), [&](const SlowSample& s) {
    return s.figures.value("total_ms", std::int64_t{0}) < ms;
  });
  if (pos != slow.end() || static_cast<int>(slow.size()) < opts_.slowest) {
    fig["total_ms"] = ms;
    slow.insert(pos, SlowSample{index, r.key, std::move(fig)});
    if (static_cast<int>(slow.size()) > opts_.slowest) slow.pop_back();
  }
}

void RecordRun::on_result(std::int64_t index, VerifyResult&& r) {
  in_pool_.erase(index);
  if (r.cancelled) {  // withdrawn (look_unwanted): nothing was judged
    withdraw(index);
    if (opts_.progress) opts_.progress(written_, tally_.total);
    return;
  }
  ++tally_.by_verdict[r.verdict];
  for (const auto& f : r.flags) ++tally_.by_flag[f];
  if (r.verified()) ++tally_.verified;
  if (r.harness && r.harness->gpu_lock) {
    tally_.timed_sections += r.harness->gpu_lock->timed_sections.value_or(0);
    tally_.stalls += r.harness->gpu_lock->stalls.value_or(0);
  }
  auto fig = sample_figures(r);
  nlohmann::ordered_json line = summary_line(index, r, fig);
  if (opts_.slowest > 0) note_slow(index, r, std::move(fig));
  if (opts_.full) {
    // The verdict line (verify/verdict_line.hpp) the Slurm backend reads back.
    VerdictLine full{index, std::move(r)};
    if (out_ && *out_)
      *out_ << to_json(full).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n"
            << std::flush;
    ++written_;
  } else {
    pending_[index] = std::move(line);
    flush();
  }
  if (opts_.progress) opts_.progress(written_, tally_.total);
}

std::string RecordRun::summary(const std::string& file, double secs) const {
  std::string out;
  auto by_verdict = tally_.by_verdict;
  // Skipped records (a field missing) never reached the sandbox: they are not counted as
  // verified.
  const std::int64_t skipped = by_verdict[Verdict::skipped];
  const std::int64_t ran = tally_.total - skipped - tally_.withdrawn;
  appendf(out,
          "%s: %lld records, %lld run through the verifier in %.1f s (%.2f samples/s, %d "
          "workers, %s)",
          file.c_str(), ll(tally_.total), ll(ran), secs,
          secs > 0 ? static_cast<double>(ran) / secs : 0.0, pool_.slots(),
          std::string(to_string(opts_.mode)).c_str());
  if (skipped > 0) appendf(out, "; %lld skipped (a field missing), not run", ll(skipped));
  if (tally_.withdrawn > 0)
    appendf(out,
            "; %lld withdrawn (listed in the skip file): %lld stopped while they ran, %lld never "
            "started; no line for them",
            ll(tally_.withdrawn), ll(tally_.stopped), ll(tally_.withdrawn - tally_.stopped));
  out += "\n";
  for (const auto& [v, name] : store::kVerdictNames)
    appendf(out, "  %-8s %lld\n", std::string(name).c_str(), ll(by_verdict[v]));
  for (const auto& [f, n] : tally_.by_flag) appendf(out, "  flagged %s: %lld\n", f.c_str(), ll(n));
  appendf(out, "  verified (passed, no flag): %lld\n", ll(tally_.verified));
  auto by_target = tally_.by_target;
  for (const auto& want : opts_.cross_compile) by_target[want];  // even if none ran
  for (const auto& [target, counts] : by_target) {
    std::string parts;
    for (const auto& [result, n] : counts)
      parts += (parts.empty() ? "" : ", ") + result + " " + std::to_string(n);
    if (parts.empty()) parts = "no record";
    appendf(out, "  cross-compile %s (compiled, not run): %s\n", target.c_str(), parts.c_str());
  }
  if (tally_.no_code > 0)
    appendf(out,
            "  %lld records have no string field '%s' and were skipped; --map code=FIELD "
            "names the code's field (code=output for an export of a TritonBench "
            "corpus)\n",
            ll(tally_.no_code), opts_.code_field.c_str());
  if (tally_.timed_sections > 0) {
    appendf(out,
            "  speed label: %lld exclusive sections, %lld stalls of the other samples (one per "
            "burst)",
            ll(tally_.timed_sections), ll(tally_.stalls));
    // Lent slots (verifier.timing.lend): samples run while a timing sample waited.
    const PoolStats st = pool_.stats();
    if (st.lent_runs > 0)
      appendf(out, "; %lld runs on lent slots (%.1f s, at most %d at once)", ll(st.lent_runs),
              static_cast<double>(st.lent_ms) / 1000.0, st.lent_max);
    out += "\n";
  }
  appendf(out, "  workers: %s\n", pool_.sizing().c_str());
  if (!tally_.slowest.empty()) {
    out += "slowest samples (sample time = real run + mutant run; ms):\n";
    for (const auto& s : tally_.slowest) {
      const auto& ph = s.figures["phases"];
      auto f = [&](const char* k) { return ll(ph.value(k, std::int64_t{-1})); };
      appendf(out,
              "  %7lld  #%lld %s  cpu %lld  import %lld  tests %lld  compile %lld (%lld calls, "
              "cpu %lld + tools %lld)  mutant %lld  on %s\n",
              ll(s.figures.value("total_ms", std::int64_t{0})), ll(s.index),
              printable(s.key).c_str(), ll(s.figures.value("cpu_ms", std::int64_t{-1})),
              f("import"), f("tests"), f("compile"), f("compiles"), f("compile_cpu"),
              f("compile_child_cpu"), f("mutant"),
              s.figures.value("device", std::string()).c_str());
      auto line = phase_times_line(s.figures["phase_times"]);
      if (!line.empty()) appendf(out, "           phases (wall/cpu ms): %s\n", line.c_str());
    }
  }
  for (const auto& d : pool_.devices())
    if (!d.in_rotation)
      appendf(out, "  ALERT: %s out of rotation: %s\n", d.device.c_str(),
              printable(d.reason).c_str());
  return out;
}

}  // namespace kforge::verify
