// kforge status's text, from the typed data (status.hpp). Every string a model, a crawl, a
// sample or an operator wrote (keys, tags, messages, reasons) goes through printable() first: no
// escape sequence of theirs reaches the terminal.

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "kforge/core/clock.hpp"
#include "kforge/core/printable.hpp"
#include "kforge/pipeline/status.hpp"
#include "kforge/store/states.hpp"
#include "kforge/store/vocabulary.hpp"

namespace kforge::pipeline {

namespace {

std::string p(const std::string& s) {
  return printable(s);
}

std::string duration(std::int64_t s) {
  char buf[64];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  return buf;
}

std::string count(std::int64_t n) {
  char buf[32];
  if (n >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.1fM", static_cast<double>(n) / 1e6);
  else if (n >= 10'000)
    std::snprintf(buf, sizeof buf, "%.0fk", static_cast<double>(n) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(n));
  return buf;
}

// Bytes as MB (10^6), one decimal; kB below a megabyte.
std::string megabytes(std::int64_t n) {
  char buf[32];
  if (n >= 1'000'000)
    std::snprintf(buf, sizeof buf, "%.1f MB", static_cast<double>(n) / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.0f kB", static_cast<double>(n) / 1e3);
  return buf;
}

// printf into a string.
[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out(static_cast<std::size_t>(n > 0 ? n : 0), '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  va_end(again);
  return out;
}

long long ll(std::int64_t v) {
  return static_cast<long long>(v);
}

// `first` then `text` wrapped at word boundaries to `width` columns, continuation lines indented
// to where the text began: whole messages, never cut.
std::string wrapped(const std::string& first, const std::string& text, std::size_t width = 100) {
  std::size_t indent = first.size();
  std::string pad(indent, ' ');
  std::string out, line = first;
  std::size_t room = width > indent + 20 ? width - indent : 20;
  std::size_t used = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t j = text.find(' ', i);
    if (j == std::string::npos) j = text.size();
    std::string word = text.substr(i, j - i);
    for (char& ch : word)
      if (ch == '\n' || ch == '\r') ch = ' ';
    if (used > 0 && used + 1 + word.size() > room) {
      out += line + "\n";
      line = pad;
      used = 0;
    }
    if (used > 0) {
      line += ' ';
      ++used;
    }
    line += word;
    used += word.size();
    i = j + 1;
  }
  return out + line + "\n";
}

// "12.5", "20000"; "0.4" below one a minute.
std::string per_minute_text(double r) {
  return format(r >= 100 ? "%.0f" : "%.1f", r);
}

std::string ago(std::int64_t ms) {
  return duration(std::max<std::int64_t>(0, ms / 1000)) + " ago";
}

std::string daemon_text(const DaemonState& d) {
  if (d.liveness == Liveness::none || !d.row)
    return "daemon     none has run on this database (start kforged)\n";
  const DaemonRow& row = *d.row;
  std::string who = "pid " + std::to_string(row.pid) + " on " + p(row.host);
  std::string since = format_utc_ms(row.started_ms);
  std::string metrics = row.metrics.empty() ? "no metrics" : "metrics " + p(row.metrics);
  if (d.liveness == Liveness::running)
    return format("daemon     running since %s (%s, last beat %s, %s%s)\n", since.c_str(),
                  who.c_str(), ago(d.beat_age_ms).c_str(), metrics.c_str(),
                  row.verifies ? "" : ", not verifying");
  if (d.liveness == Liveness::stopped)
    return format("daemon     not running: the last one (%s, started %s) stopped at %s\n",
                  who.c_str(), since.c_str(), format_utc_ms(row.stopped_ms.value_or(0)).c_str());
  return wrapped("daemon     ", "STALE: " + who + ", started " + since + ", last beat " +
                                    ago(d.beat_age_ms) + ": " + p(d.why));
}

// The speed label's flags over a run's passing samples, and why those not timed were not
// (docs/VERIFIER.md, "The speed label"): "  speed flags  not_timed 2  library_work 1".
std::string speed_flags_text(const RunProgress& r) {
  if (r.speed_flags.empty()) return "";
  std::string flags;
  for (const auto& [f, n] : r.speed_flags) flags += "  " + p(f) + " " + std::to_string(n);
  std::string out = "  speed flags" + flags + "\n";
  for (const auto& [why, n] : r.not_timed_reasons)
    out += wrapped(format("    not timed %6lld  ", ll(n)), p(why));
  return out;
}

// The verifier's alerts (a device out of rotation, or the pool that could not start) and
// Slurm's tasks and alerts.
std::string alerts_text(const StatusData& st) {
  std::string out;
  for (const auto& a : st.alerts) {
    const char* head = a.old ? "old ALERT" : "ALERT    ";
    std::string when =
        a.old ? " (from " + format_utc_ms(a.since_ms) + ", a kforged that is no longer running)"
              : "";
    if (a.device == "verifier")  // the pool itself could not start
      out += format("%s  verifier%s: %s\n", head, when.c_str(), p(a.reason).c_str());
    else
      out +=
          format("%s  verifier device %s out of rotation (%lld failed worker starts)%s: %s\n", head,
                 p(a.device).c_str(), ll(a.start_failures), when.c_str(), p(a.reason).c_str());
  }
  if (!st.slurm.tasks_by_state.empty() || !st.slurm.alerts.empty()) {
    std::string line;
    for (const auto& [state, n] : st.slurm.tasks_by_state)
      line += "  " + p(state) + " " + std::to_string(n);
    out += format("slurm      tasks%s\n", line.empty() ? "  none" : line.c_str());
    for (const auto& a : st.slurm.alerts)
      out += format("ALERT      Slurm %s (%lld times since %s): %s\n",
                    a.kind == "submit" ? "rejects submissions" : "cannot be watched", ll(a.count),
                    format_utc_ms(a.since_ms).c_str(), p(a.message).c_str());
  }
  return out;
}

// A batch in flight (llm.mode batch): its state at the provider, counts and age.
std::string batch_text(const BatchInFlight& b) {
  std::string state = p(b.provider_status.empty() ? b.state : b.provider_status);
  std::string line = p(b.key).substr(0, 12) + " " + state + ", " + std::to_string(b.run_lines) +
                     " of this run's requests (" + std::to_string(b.lines) + " in all), " +
                     std::to_string(b.completed) + " completed, " + std::to_string(b.failed) +
                     " failed, age " + duration(b.age_s);
  if (b.poll_errors > 0) line += ", " + std::to_string(b.poll_errors) + " polls failed";
  if (!b.note.empty()) line += ": " + p(b.note);
  return wrapped("  batch    ", line);
}

// A run's head: what it is, its progress bar and phase, rate, ETA, tokens and cost, replayed and
// mended answers, what it waits for and its batches in flight.
std::string run_head_text(const RunStatus& rs) {
  const RunProgress& r = rs.progress;
  std::string out = format("\nrun %s  (pipeline %s, model %s, %s, created %s)\n",
                           p(r.run.tag).c_str(), p(r.run.pipeline).c_str(), p(r.run.model).c_str(),
                           std::string(store::to_string(r.run.state)).c_str(),
                           format_utc_ms(r.run.created_ms).c_str());
  // The bar counts jobs that ended (verified or failed), so it says 100% only once the
  // verifier is done too; cancelled jobs are named apart and never fill it.
  out += format("  %s  %lld/%lld jobs ended; %lld past the LLM stages, %lld at the verifier%s\n",
                progress_bar(r.ended_fraction()).c_str(), ll(r.ended), ll(r.total), ll(r.past_llm),
                ll(r.verifying),
                r.cancelled > 0 ? ("; " + std::to_string(r.cancelled) + " cancelled").c_str() : "");
  if (rs.waits_for.empty())
    out += format("  phase    %s\n", rs.phase.c_str());
  else
    out += wrapped("  phase    ", rs.phase + ": " + p(rs.waits_for));
  // The rate is of the LLM stages: once they are done it says nothing. With no daemon running
  // there is no rate and no ETA.
  const double per_minute = rs.live ? r.per_minute : 0.0;
  const bool llm_work = r.remaining > 0;
  std::string rate = llm_work && per_minute > 0 ? per_minute_text(per_minute) : "-";
  std::string eta = !llm_work || !rs.live || !r.eta_s ? "-" : duration(*r.eta_s);
  out += format("  rate %s samples/min   ETA %s   tokens %s in / %s out   cost $%.4f\n",
                rate.c_str(), eta.c_str(), count(r.prompt_tokens).c_str(),
                count(r.completion_tokens).c_str(), r.cost_usd);
  if (r.replayed_calls > 0)
    out += format("  replayed %lld answers from the store after a restart (saved $%.4f)\n",
                  ll(r.replayed_calls), r.saved_usd);
  if (r.reasoning_tokens > 0 || r.cached_prompt_tokens > 0)
    out += format("  reasoning %s tokens (%lld answers)   cached prompt %s tokens\n",
                  count(r.reasoning_tokens).c_str(), ll(r.with_reasoning),
                  count(r.cached_prompt_tokens).c_str());
  if (!r.mended.empty()) {
    std::string line;
    for (const auto& [what, n] : r.mended)
      line += (line.empty() ? "" : ", ") + p(what) + " " + std::to_string(n);
    out += wrapped("  mended   ", "answers read leniently: " + line);
  }
  if (r.wait_until_ms > 0) out += wrapped("  waiting  ", p(r.wait_reason));
  for (const auto& b : rs.batches) out += batch_text(b);
  return out;
}

// A run's jobs by the stage they are at, its answers by status, and the samples that wait for a
// verifier that has an alert.
std::string run_jobs_text(const StatusData& st, const RunProgress& r) {
  std::string out;
  // Jobs by the stage they are at (the run's LLM stages and the verifier; not the ended).
  for (const auto& [stage, states] : r.by_stage) {
    if (store::step_of(stage) == store::JobStep::none) continue;
    std::string line;
    for (const auto& [state, n] : states) line += "  " + p(state) + " " + std::to_string(n);
    out += format("  %-9s%s\n", p(stage).c_str(), line.c_str());
  }
  for (const auto& [stage, m] : r.outputs) {
    std::string line;
    for (const auto& [status, n] : m) line += "  " + p(status) + " " + std::to_string(n);
    out += format("  answers %-9s%s\n", p(stage).c_str(), line.c_str());
  }
  const std::string verify_step(store::to_string(store::JobStep::verify));
  auto v = r.by_stage.find(verify_step);
  if (!st.alerts.empty() && v != r.by_stage.end()) {
    auto q = v->second.find(std::string(store::to_string(store::JobState::verify_queued)));
    std::int64_t waiting = q == v->second.end() ? 0 : q->second;
    if (waiting > 0)
      out += format("  %lld samples wait for the verifier (see the ALERT above)\n", ll(waiting));
  }
  return out;
}

// The speed label's line (docs/VERIFIER.md): pass_perf of those timed against a reference.
std::string speed_text(const RunProgress& r) {
  if (r.speed_timed <= 0) return "";
  std::string median = r.speed_median ? format(", median speedup %.2fx", *r.speed_median) : "";
  return format("  speed: %lld timed, %lld against a reference, pass_perf %lld%s\n",
                ll(r.speed_timed), ll(r.speed_with_reference), ll(r.speed_pass_perf),
                median.c_str());
}

// What the verdicts other than passed came from, with an example and, for the verifier's own
// faults, the fix.
std::string causes_text(const RunProgress& r) {
  std::string out;
  for (const auto& c : r.causes) {
    std::string verdict = p(c.verdict), cause = p(c.cause);
    std::string head = format("    %-8s %-16s %6lld  e.g. ", verdict.c_str(),
                              cause == "sample" ? "sample error" : cause.c_str(), ll(c.count));
    std::string text = p(c.example_key) + ": " + p(c.example);
    if (cause == store::flag_name(store::Flag::environment))
      text +=
          " (the verifier's Python lacks a module: set verifier.python to a Python with "
          "torch and triton, then kforge retry " +
          p(r.run.tag) + " --verdict " + verdict + ")";
    else if (cause == store::flag_name(store::Flag::infrastructure))
      text += " (the verifier could not run the sample verifier.max_requeues times in a row)";
    out += wrapped(head, text);
  }
  return out;
}

// A run's verdicts, quality flags, out-of-bounds samples, speed labels, and what the verdicts
// other than passed came from.
std::string run_verdicts_text(const RunProgress& r) {
  if (r.verdicts.empty()) return "";
  std::string line;
  for (const auto& [v, n] : r.verdicts) line += "  " + p(v) + " " + std::to_string(n);
  std::string out = "  verdicts" + line + "\n";
  if (!r.flags.empty()) {
    // Passed, but not verified: what the test would let through (docs/VERIFIER.md).
    std::string flags;
    for (const auto& [f, n] : r.flags) flags += "  " + p(f) + " " + std::to_string(n);
    out += "  flagged (passed, not verified)" + flags + "\n";
  }
  if (r.out_of_bounds > 0)
    // Passed or not: a kernel read or wrote outside its buffers (docs/VERIFIER.md).
    out +=
        format("  out of bounds %lld (a kernel reads or writes outside its buffers; any verdict)\n",
               ll(r.out_of_bounds));
  return out + speed_text(r) + speed_flags_text(r) + causes_text(r);
}

// A run's failed jobs and recent errors by kind, and the daemon's refusal.
std::string run_failures_text(const RunProgress& r) {
  std::string out;
  if (!r.failures.empty()) out += "  failed jobs by kind:\n";
  for (std::size_t i = 0; i < r.failures.size() && i < 8; ++i) {
    const auto& f = r.failures[i];
    out += wrapped(format("    %-28s %6lld  e.g. ", p(f.kind).c_str(), ll(f.count)),
                   p(f.example_key) + ": " + p(f.example));
  }
  if (!r.errors.empty()) out += "  errors in the last 24 h, by kind:\n";
  for (std::size_t i = 0; i < r.errors.size() && i < 8; ++i) {
    const auto& e = r.errors[i];
    out += wrapped(format("    %-28s %6lld  last: ", p(e.kind).c_str(), ll(e.count)),
                   p(e.last_message));
  }
  if (!r.refused.empty())
    out +=
        format("  REFUSED by the daemon: %s; create a new run (a new tag)\n", p(r.refused).c_str());
  return out;
}

}  // namespace

std::string status_text(const StatusData& st) {
  std::string out =
      format("database   %s (schema %d, %s: file %s + WAL %s)\n", p(st.database).c_str(),
             st.schema_version, megabytes(st.file_bytes + st.wal_bytes).c_str(),
             megabytes(st.file_bytes).c_str(), megabytes(st.wal_bytes).c_str());
  out += format("samples    %lld\n", ll(st.samples));
  out += daemon_text(st.daemon);
  if (st.prompts_error)
    out += format("prompts    cannot be read: %s\n", p(*st.prompts_error).c_str());
  out += alerts_text(st);
  if (st.runs.empty()) return out + "runs       none (kforge run create TAG --pipeline v2)\n";
  for (const auto& r : st.runs)
    out += run_head_text(r) + run_jobs_text(st, r.progress) + run_verdicts_text(r.progress) +
           run_failures_text(r.progress);
  return out;
}

}  // namespace kforge::pipeline
