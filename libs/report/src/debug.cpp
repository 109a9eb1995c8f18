#include "kforge/report/debug.hpp"

#include <spdlog/fmt/fmt.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>

#include "kforge/core/clock.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/report/escape.hpp"
#include "kforge/report/outcomes.hpp"
#include "kforge/verify/harness_report.hpp"
#include "queries.hpp"
#include "sample_data.hpp"

namespace kforge::report {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kMarker = ".kforge-debug";

using store::OutputStatus;
using store::StageKind;

// The request's messages as Markdown, one section per message; the raw JSON when it has none.
std::string prompt_markdown(const std::string& request_json) {
  auto j = ojson::parse(request_json, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("messages") || !j["messages"].is_array())
    return "```json\n" + request_json + "\n```\n";
  std::string out;
  for (const auto& m : j["messages"]) {
    std::string role =
        m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "message";
    out += "## " + role + "\n\n";
    if (m.contains("content") && m["content"].is_string()) {
      out += m["content"].get<std::string>();
    } else if (m.contains("content") && m["content"].is_array()) {
      for (const auto& part : m["content"])
        out += part.contains("text") && part["text"].is_string() ? part["text"].get<std::string>()
                                                                 : part.dump(2);
    } else {
      out += m.dump(2);
    }
    out += "\n\n";
  }
  return out;
}

std::string pretty(const std::string& text) {
  auto j = ojson::parse(text, nullptr, false);
  return j.is_discarded() ? text : j.dump(2) + "\n";
}

Status put(const fs::path& p, std::string_view data) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (out) out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return fail("io", p.string() + ": cannot write: " + std::strerror(errno));
  return {};
}

const StageAttempt* latest(const SampleData& d, const std::string& stage) {
  const StageAttempt* found = nullptr;
  for (const auto& a : d.outputs)
    if (a.stage == stage) found = &a;
  return found;
}

std::string or_dash(const std::optional<std::string>& s) {
  return s && !s->empty() ? *s : "-";
}

ojson verdict_json(const VerifyAttempt& v) {
  ojson verdict = {{"verdict", v.verdict},
                   {"flags", ojson::parse(v.flags_json, nullptr, false)},
                   {"detail", v.detail ? ojson(*v.detail) : ojson(nullptr)},
                   {"duration_ms", v.duration_ms},
                   {"device", v.device ? ojson(*v.device) : ojson(nullptr)},
                   {"attempt", v.attempt},
                   {"repair_round", v.repair_round},
                   {"created", format_utc_ms(v.created_ms)}};
  if (verdict["flags"].is_discarded()) verdict["flags"] = v.flags_json;
  if (v.result_json) {
    auto r = ojson::parse(*v.result_json, nullptr, false);
    verdict["result"] = r.is_discarded() ? ojson(*v.result_json) : r;
  }
  return verdict;
}

// "mutants  killed K of A that apply; ..." from the verdict's mutation score (docs/VERIFIER.md),
// or "" when no mutant ran.
std::string mutants_line(const VerifyAttempt& v) {
  if (!v.mutants_applicable) return "";
  auto names = [&](const std::optional<std::string>& list) {
    std::string out;
    for (const auto& n : list_items(list))
      if (n.is_string()) out += (out.empty() ? "" : ", ") + n.get<std::string>();
    return out.empty() ? std::string("none") : out;
  };
  std::string line =
      fmt::format("mutants  killed {} of {} that apply; survived: {}; not applicable: {}\n",
                  v.mutants_killed.value_or(0), *v.mutants_applicable,
                  names(v.mutants_survived_json), names(v.mutants_not_applicable_json));
  if (v.kernel_applicable) {
    line += fmt::format("kernel   killed {} of {} that apply, {} equivalent",
                        v.kernel_killed.value_or(0), *v.kernel_applicable,
                        v.kernel_equivalent.value_or(0));
    for (const auto& s : list_items(v.kernel_survived_json))
      if (auto k = verify::KernelSurvivor::from_json(s))  // as verify's store wrote it
        line += fmt::format("; survived: {} ({} line {})", k->desc, k->section.value_or("code"),
                            k->section_line.value_or(0));
    line += "\n";
  }
  return line;
}

// The answer whose code the sample shows (debug_shown_code): the newest that holds code, a
// repair's corrected wrapper and test or the generation, or a newer generation attempt.
const StageAttempt* final_code(const SampleData& d) {
  for (const auto& a : d.outputs)
    if (a.id == d.shown_code) return &a;
  return nullptr;
}

// Every stage output's and verification's figures (attempts.json).
ojson attempts_json(const SampleData& d) {
  ojson attempts = ojson::array();
  for (const auto& a : d.outputs)
    attempts.push_back({{"stage", a.stage},
                        {"attempt", a.attempt},
                        {"repair_round", a.repair_round},
                        {"status", std::string(store::to_string(a.status))},
                        {"error_kind", a.error_kind ? ojson(*a.error_kind) : ojson(nullptr)},
                        {"error", a.error ? ojson(*a.error) : ojson(nullptr)},
                        {"prompt_version", a.prompt_version},
                        {"prompt_sha256", a.prompt_sha256},
                        {"request_sha256", a.request_sha256 ? ojson(*a.request_sha256) : ojson()},
                        {"prompt_tokens", a.prompt_tokens},
                        {"completion_tokens", a.completion_tokens},
                        {"cost_usd", a.cost_usd},
                        {"latency_ms", a.latency_ms},
                        {"created", format_utc_ms(a.created_ms)}});
  for (const auto& x : d.verifications)
    attempts.push_back({{"stage", std::string(store::to_string(store::JobStep::verify))},
                        {"attempt", x.attempt},
                        {"repair_round", x.repair_round},
                        {"verdict", x.verdict},
                        {"flags", ojson::parse(x.flags_json, nullptr, false).is_discarded()
                                      ? ojson(x.flags_json)
                                      : ojson::parse(x.flags_json)},
                        {"detail", x.detail ? ojson(*x.detail) : ojson(nullptr)},
                        {"duration_ms", x.duration_ms},
                        {"created", format_utc_ms(x.created_ms)}});
  return attempts;
}

// The sample's outcome by the same rules as compare and export: `v` its latest verification
// (or null), `before_verify` whether its job is before the verifier.
SampleOutcome outcome_of(const SampleData& d, const VerifyAttempt* v, bool before_verify) {
  SampleOutcome o;
  o.key = d.key;
  o.state = d.state;
  o.stage = d.stage;
  if (before_verify) {
    if (const StageAttempt* a = latest(d, d.stage)) o.stage_status = a->status;
  } else if (v == nullptr) {
    if (!d.outputs.empty()) o.stage_status = d.outputs.back().status;
  } else {
    o.verdict = v->verdict;
    auto flags = ojson::parse(v->flags_json, nullptr, false);
    if (flags.is_array())
      for (const auto& f : flags)
        if (f.is_string()) o.flags.push_back(f.get<std::string>());
  }
  return o;
}

using FileWriter = std::function<Status(const std::string&, std::string_view)>;

// Every round: round 0's verdict, and each repair round's prompt, answer and verdict; a line
// each for the README.
Status write_rounds(const SampleData& d, const FileWriter& file,
                    std::vector<std::string>& round_lines) {
  // Every round: round 0's verdict, and each repair round's prompt, answer and verdict.
  int last_round = 0;
  for (const auto& a : d.outputs) last_round = std::max(last_round, a.repair_round);
  for (const auto& x : d.verifications) last_round = std::max(last_round, x.repair_round);
  for (int n = 0; n <= last_round && last_round > 0; ++n) {
    std::string prefix = n == 0 ? "round-0" : "repair-" + std::to_string(n);
    std::string line = n == 0 ? "round 0 (generate)" : "repair " + std::to_string(n);
    if (n > 0) {
      const StageAttempt* a = nullptr;
      for (const auto& o : d.outputs)
        if (o.stage == store::kRepairStage && o.repair_round == n) a = &o;
      if (a != nullptr) {
        if (a->request_json) {
          KF_CHECK(file(prefix + ".prompt.md", prompt_markdown(*a->request_json)));
          KF_CHECK(file(prefix + ".request.json", pretty(*a->request_json)));
        }
        if (a->response_raw) KF_CHECK(file(prefix + ".response.txt", *a->response_raw));
        if (a->error)
          KF_CHECK(file(prefix + ".error.txt", or_dash(a->error_kind) + ": " + *a->error + "\n"));
        line += ": answer " + std::string(store::to_string(a->status));
        auto parsed = a->parsed_json ? ojson::parse(*a->parsed_json, nullptr, false) : ojson();
        if (parsed.is_object() && parsed.contains("unfixable") && parsed["unfixable"].is_string()) {
          KF_CHECK(file(prefix + ".unfixable.txt", parsed["unfixable"].get<std::string>() + "\n"));
          line += " (unfixable: " + parsed["unfixable"].get<std::string>() + ")";
        } else if (parsed.is_object()) {
          for (const char* f : {"kernel_wrapper", "unitest_code"})
            if (parsed.contains(f) && parsed[f].is_string())
              KF_CHECK(file(prefix + "." + f + ".py", parsed[f].get<std::string>()));
        }
      } else {
        line += ": no answer yet";
      }
    }
    const VerifyAttempt* rv = nullptr;
    for (const auto& x : d.verifications)
      if (x.repair_round == n) rv = &x;
    if (rv != nullptr) {
      KF_CHECK(file(prefix + ".verdict.json", verdict_json(*rv).dump(2) + "\n"));
      if (rv->script && n > 0) KF_CHECK(file(prefix + ".script.py", *rv->script));
      line += ", verdict " + rv->verdict + " " + rv->flags_json + ": " + or_dash(rv->detail);
    }
    round_lines.push_back(line);
  }
  return {};
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (auto p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
    text.replace(p, from.size(), to);
  return text;
}

// run.sh: the template with the verifier's Python and its python_path filled in.
std::string run_sh(const DebugPython& py) {
  std::string path;
  for (const auto& p : py.python_path) path += (path.empty() ? "" : ":") + p;
  std::string text = replace_all(std::string(template_file("run.sh")), "@PYTHON@",
                                 shell_quote(py.python.empty() ? "python3" : py.python));
  return replace_all(std::move(text), "@PYTHON_PATH@", shell_quote(path));
}

// Writes the folder's files into `tmp`. Returns the README's list of files.
Status write_files(const fs::path& tmp, const RunInfo& run, const SampleData& d,
                   const DebugPython& py) {
  std::vector<std::string> files;
  auto file = [&](const std::string& name, std::string_view data) -> Status {
    files.push_back(name);
    return put(tmp / name, data);
  };
  KF_CHECK(file("record.json", pretty(d.record_json)));
  KF_CHECK(file("code.py", d.code));
  // The stages before the verifier, as the run recorded them: analysis stages, then the code.
  std::vector<std::string> stages = run.stages(StageKind::analysis);
  const std::string first_analysis = stages.empty() ? std::string() : stages.front();
  for (auto& c : run.stages(StageKind::code)) stages.push_back(c);
  for (const std::string& stage : stages) {
    const StageAttempt* a = latest(d, stage);
    if (a == nullptr) continue;
    if (a->request_json) {
      KF_CHECK(file(stage + ".prompt.md", prompt_markdown(*a->request_json)));
      KF_CHECK(file(stage + ".request.json", pretty(*a->request_json)));
    }
    if (a->response_raw) KF_CHECK(file(stage + ".response.txt", *a->response_raw));
    if (a->error)
      KF_CHECK(file(stage + ".error.txt", or_dash(a->error_kind) + ": " + *a->error + "\n"));
    if (stage != first_analysis || !a->parsed_json) continue;
    auto parsed = ojson::parse(*a->parsed_json, nullptr, false);
    if (parsed.is_discarded()) continue;
    const ojson& an = parsed.contains("analysis") ? parsed["analysis"] : parsed;
    KF_CHECK(file("analysis.json", an.dump(2) + "\n"));
  }
  // The final round's wrapper and test (the ones the last verdict judged, when there is one).
  if (const StageAttempt* a = final_code(d); a != nullptr && a->parsed_json) {
    auto parsed = ojson::parse(*a->parsed_json, nullptr, false);
    if (parsed.is_object())
      for (const char* f : {"kernel_wrapper", "unitest_code"})
        if (parsed.contains(f) && parsed[f].is_string())
          KF_CHECK(file(std::string(f) + ".py", parsed[f].get<std::string>()));
  }
  std::vector<std::string> round_lines;
  KF_CHECK(write_rounds(d, file, round_lines));
  const VerifyAttempt* v = d.verifications.empty() ? nullptr : &d.verifications.back();
  if (v != nullptr) {
    if (v->script) {
      KF_CHECK(file("script.py", *v->script));
      KF_CHECK(file("run.sh", run_sh(py)));
      std::error_code ec;
      fs::permissions(tmp / "run.sh",
                      fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                          fs::perms::others_read | fs::perms::others_exec,
                      ec);
      if (ec) return fail("io", (tmp / "run.sh").string() + ": " + ec.message());
    }
    KF_CHECK(file("verdict.json", verdict_json(*v).dump(2) + "\n"));
    KF_CHECK(file("stderr.txt", v->stderr_tail.value_or("")));
  }
  ojson attempts = attempts_json(d);
  KF_CHECK(file("attempts.json", attempts.dump(2) + "\n"));

  // What happened, in words, using the same rules as compare and export.
  bool before_verify = store::before_verifier(d.stage);
  SampleOutcome o = outcome_of(d, v, before_verify);
  std::string readme = fmt::format(
      "kforge debug workspace\n\n"
      "run      {} (pipeline {}, model {})\n"
      "sample   {}\n"
      "job      state {}, stage {}, {} attempt(s) at this stage\n"
      "outcome  {}\n",
      run.tag, run.pipeline, run.model, d.key, store::to_string(d.state), d.stage, d.attempts,
      to_string(o.category()));
  if (d.error_kind || d.error)
    readme += fmt::format("error    {}: {}\n", or_dash(d.error_kind), or_dash(d.error));
  if (v != nullptr) {
    readme += fmt::format("verdict  {} {} ({} ms): {}\n", v->verdict, v->flags_json, v->duration_ms,
                          or_dash(v->detail));
    readme += mutants_line(*v);
    if (before_verify)
      readme += "         (this verdict is from before the job went back to " + d.stage +
                "; it does not apply to the current code)\n";
  }
  if (!round_lines.empty()) {
    readme += "\nrounds\n";
    for (const auto& l : round_lines) readme += "  " + l + "\n";
  }
  readme += "\nfiles\n";
  for (const auto& f : files) readme += "  " + f + "\n";
  if (v != nullptr && v->script)
    readme += "\nRe-run the verifier's script by hand: ./run.sh (" +
              (py.python.empty() ? std::string("python3") : py.python) + " script.py)\n";
  else
    readme += "\nNo script: this sample never reached the verifier.\n";
  KF_CHECK(put(tmp / "README.txt", readme));
  KF_CHECK(put(tmp / kMarker, run.tag + "\n" + d.key + "\n"));
  return {};
}

Result<fs::path> write_folder(store::Db& db, const RunInfo& run, const std::string& key,
                              const fs::path& dir, const std::string& name, const DebugPython& py) {
  KF_TRY(SampleData d, load_sample(db, run, key));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail("io", dir.string() + ": " + ec.message());
  fs::path final_dir = dir / name;
  if (fs::exists(final_dir) && !fs::exists(final_dir / kMarker))
    return fail("conflict", final_dir.string() +
                                " exists and is not a kforge debug folder; choose another --out");
  fs::path tmp = dir / ("." + name + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return fail("io", tmp.string() + ": " + ec.message());
  auto st = write_files(tmp, run, d, py);
  if (st.ok()) {
    fs::remove_all(final_dir, ec);
    fs::rename(tmp, final_dir, ec);
    if (ec) st = fail("io", final_dir.string() + ": " + ec.message());
  }
  if (!st.ok()) {
    fs::remove_all(tmp, ec);
    return std::move(st).error();
  }
  return final_dir;
}

}  // namespace

Result<fs::path> write_debug(store::Db& db, const std::string& tag, const std::string& key,
                             const fs::path& dir, const DebugPython& python) {
  KF_TRY(RunInfo run, find_run(db, tag));
  return write_folder(db, run, key, dir, safe_file_name(key), python);
}

Result<std::vector<fs::path>> write_debug_failed(store::Db& db, const std::string& tag,
                                                 const fs::path& dir, const DebugPython& python) {
  KF_TRY(RunInfo run, find_run(db, tag));
  KF_TRY(auto outcomes, load_outcomes(db, run));
  std::vector<fs::path> out;
  std::set<std::string> names;
  for (const auto& o : outcomes) {
    if (!o.finished() || o.verified()) continue;
    std::string name = safe_file_name(o.key);
    // Two keys can map to the same safe name ("a/b" and "a_b"): the sample id tells them apart.
    if (!names.insert(name).second) name += "-" + std::to_string(o.sample_id);
    names.insert(name);
    KF_TRY(fs::path p, write_folder(db, run, o.key, dir, name, python));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kforge::report
