#include "kforge/report/export.hpp"

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dataset_rows.hpp"
#include "export_select.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/dedup/groups.hpp"
#include "kforge/report/dataset.hpp"
#include "kforge/report/outcomes.hpp"
#include "queries.hpp"

namespace kforge::report {

using ojson = nlohmann::ordered_json;

const std::vector<std::string>& verdict_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> out;
    for (const auto& e : store::kVerdictNames) out.emplace_back(e.name);
    return out;
  }();
  return v;
}

Status check_json_extension(const std::filesystem::path& out) {
  static const std::vector<std::pair<std::string, std::string>> kOther = {
      {".parquet", "Parquet"}, {".pq", "Parquet"},  {".csv", "CSV"},
      {".tsv", "TSV"},         {".arrow", "Arrow"}, {".feather", "Arrow"},
      {".xlsx", "Excel"},      {".avro", "Avro"},   {".orc", "ORC"}};
  std::string ext = out.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& [e, name] : kOther)
    if (ext == e)
      return fail("usage", "--out " + out.string() +
                               ": kforge export writes JSON (a .json list or " +
                               ".jsonl lines), not " + name +
                               "; name the file .json or .jsonl (a dataset folder of JSON Lines: "
                               "--out-dir DIR)");
  return {};
}

Result<ExportFormat> parse_export_format(const std::string& s, const std::filesystem::path& out) {
  KF_CHECK(check_json_extension(out));
  if (s == "json") return ExportFormat::json;
  if (s == "jsonl") return ExportFormat::jsonl;
  if (s == "auto" || s.empty()) {
    const std::string ext = out.extension().string();
    if (ext == ".jsonl") return ExportFormat::jsonl;
    if (ext == ".json" || ext.empty() || out == "-") return ExportFormat::json;
    return fail("usage", "--out " + out.string() + ": the extension '" + ext +
                             "' names no format kforge export writes: name the file .json (one "
                             "JSON list) or .jsonl (JSON Lines), or give --format json|jsonl");
  }
  return fail("usage", "--format: '" + s +
                           "' is not one of json, jsonl, auto (kforge's records) or sft, "
                           "prompt-completion, trajectory, rl (training rows)");
}

namespace {

// The fields an export adds after the original ones.
constexpr const char* kAdded[] = {
    "kernel_wrapper", "unitest_code",      "kernel_analysis", "verdict",       "flags",
    "status",         "repair_round",      "model",           "prompt",        "mutation_score",
    "coverage",       "near_duplicate_of", "reasoning",       "cross_compile", "speed"};

std::optional<ojson> parse_opt(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  auto j = ojson::parse(*text, nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// A stage output's status column (NULL: no output), through store::parse_output_status.
Result<std::optional<store::OutputStatus>> opt_status(const store::Stmt& s, int col) {
  if (s.is_null(col)) return std::optional<store::OutputStatus>();
  KF_TRY(auto st, store::parse_output_status(s.text(col)));
  return std::optional<store::OutputStatus>(st);
}

std::string first_of(const std::vector<std::string>& v) {
  return v.empty() ? std::string() : v.front();
}

ojson field_or_null(const std::optional<ojson>& obj, const char* name) {
  if (!obj || !obj->is_object()) return nullptr;
  auto it = obj->find(name);
  return it == obj->end() ? ojson(nullptr) : *it;
}

// Each grouped sample's closest other member, and its group (by the group's smallest key), at
// the threshold of the last corpus dedup.
struct CorpusGroups {
  std::unordered_map<std::int64_t, dedup::Member> link;
  std::unordered_map<std::int64_t, std::string> group_of;
};

Result<CorpusGroups> corpus_groups(store::Db& db) {
  CorpusGroups out;
  KF_TRY(auto dedup_state, dedup::state(db));
  if (!dedup_state) return out;
  KF_TRY(auto groups, dedup::groups_at(db, dedup_state->threshold));
  for (auto& g : groups) {
    std::string first;
    for (const auto& m : g.members)
      if (first.empty() || m.key < first) first = m.key;
    for (auto& m : g.members) {
      out.group_of.emplace(m.sample_id, first);
      out.link.emplace(m.sample_id, std::move(m));
    }
  }
  return out;
}

// What the verification found, from its columns: the mutation score (with the kernel
// battery's part), coverage, the cross-compile results and the speed label; null where the
// sample was not verified.
void add_verification_fields(const store::Stmt& s, bool before_verify, ojson cross, ojson& rec) {
  // How strong the test is: of the mutants that could change the outputs, how many it
  // caught; and what its launches exercised (docs/VERIFIER.md). Null where none ran.
  // The kernel battery's part (killed, applicable, equivalent, the surviving mutants) where
  // it ran.
  if (!before_verify && !s.is_null(22)) {
    rec["mutation_score"] = {{"killed", s.int64(21)}, {"applicable", s.int64(22)}};
    if (!s.is_null(29)) {
      auto survived = parse_opt(s.opt_text(31));
      rec["mutation_score"]["kernel"] = {
          {"killed", s.int64(28)},
          {"applicable", s.int64(29)},
          {"equivalent", s.int64(30)},
          {"survived", survived && survived->is_array() ? *survived : ojson::array()}};
    }
  } else {
    rec["mutation_score"] = nullptr;
  }
  auto coverage = before_verify ? std::nullopt : parse_opt(s.opt_text(23));
  rec["coverage"] = coverage ? *coverage : ojson(nullptr);
  rec["cross_compile"] = std::move(cross);
  // The speed label (docs/VERIFIER.md): null where the sample was not timed.
  auto speed = before_verify ? std::nullopt : parse_opt(s.opt_text(32));
  rec["speed"] = speed ? *speed : ojson(nullptr);
}

// near_duplicate_of: the eval-set kernel it is near, else its corpus group's closest other
// member. True for the latter.
bool add_near_duplicate(const std::optional<dedup::NearMatch>& near, const CorpusGroups& corpus,
                        std::int64_t sample_id, ojson& rec) {
  if (near) {
    rec["near_duplicate_of"] = {{"in", "eval"},
                                {"file", near->file},
                                {"key", near->key},
                                {"kernel", near->kernel},
                                {"eval_kernel", near->eval_kernel},
                                {"similarity", near->similarity},
                                {"exact", near->exact}};
  } else if (auto it = corpus.link.find(sample_id); it != corpus.link.end()) {
    rec["near_duplicate_of"] = {{"in", "corpus"},
                                {"key", it->second.linked_to},
                                {"similarity", it->second.similarity},
                                {"exact", it->second.exact}};
    return true;
  }
  return false;
}

// The record's prompt: the run's tag and pipeline, and per stage the prompt identity its
// answer was made with (the run's own for a stage without an answer).
ojson prompt_of(const RunInfo& run,
                const std::vector<std::pair<std::string, store::StageKind>>& stages,
                const store::Stmt& s, const std::string& code_stage) {
  ojson prompt = {{"tag", run.tag}, {"pipeline", run.pipeline}};
  for (const auto& [stage, kind] : stages) {
    int col = kind == store::StageKind::analysis ? 6 : stage == code_stage ? 10 : -1;
    if (col > 0 && !s.is_null(col)) {
      prompt[stage] = {{"version", s.text(col)}, {"sha256", s.text(col + 1)}};
    } else if (kind != store::StageKind::repair && run.prompts.is_object() &&
               run.prompts.contains(stage)) {
      prompt[stage] = run.prompts[stage];
      prompt[stage].erase("kind");  // the record names prompts; kinds are the run's
    }
  }
  return prompt;
}

// A row's outcome by the same rules as compare (the verdict applies only when the job is past
// generation) and its verification's flags. True when the job is before the verifier.
Result<bool> read_outcome(const store::Stmt& s, const std::string& tag,
                          const std::vector<std::string>& analysis_stages, SampleOutcome& o,
                          ojson& flags) {
  // The same rules as compare: the verdict applies only when the job is past generation.
  o.key = s.text(0);
  KF_TRY(o.state, store::parse_job_state(s.text(2)));
  o.stage = s.text(3);
  // Columns 4 and 8: the statuses of the analysis's and the code's latest outputs.
  KF_TRY(auto analysis_status, opt_status(s, 4));
  KF_TRY(auto code_status, opt_status(s, 8));
  bool before_verify = store::before_verifier(o.stage);
  if (before_verify)
    o.stage_status =
        std::find(analysis_stages.begin(), analysis_stages.end(), o.stage) != analysis_stages.end()
            ? analysis_status
            : code_status;
  if (!before_verify && !s.is_null(12)) {
    o.verdict = s.text(12);
    flags = ojson::parse(s.text(13), nullptr, false);
    if (!flags.is_array())
      return fail("parse", "run '" + tag + "', sample '" + o.key +
                               "': verifications.flags_json is not a JSON list");
    for (const auto& f : flags)
      if (f.is_string()) o.flags.push_back(f.get<std::string>());
  }
  if (!before_verify && !o.verdict) {
    // No verdict past generation: the latest failed stage output, as compare counts it.
    if (code_status) {
      if (*code_status != store::OutputStatus::ok) o.stage_status = code_status;
    } else if (analysis_status && *analysis_status != store::OutputStatus::ok) {
      o.stage_status = analysis_status;
    }
  }
  return before_verify;
}

// --verdict's names, each a verdict's.
Status check_verdict_names(const std::vector<std::string>& verdicts) {
  for (const auto& v : verdicts)
    if (std::find(verdict_names().begin(), verdict_names().end(), v) == verdict_names().end())
      return fail("usage", "--verdict: '" + v +
                               "' is not a verdict (passed, failed, error, timeout, crashed, "
                               "invalid, skipped)");
  return {};
}

// A "usage" error naming the first of opts.keys that the run does not have.
Status unknown_keys(const ExportOptions& opts, const std::set<std::string>& seen,
                    const std::string& tag) {
  if (!opts.keys) return {};
  for (const auto& k : *opts.keys)
    if (!seen.count(k)) return fail("usage", "--keys: run '" + tag + "' has no sample '" + k + "'");
  return {};
}

// Whether --verdict keeps the outcome (a flagged pass only with --include-flagged).
bool kept_by_verdict(const SampleOutcome& o, const std::vector<std::string>& verdicts,
                     bool include_flagged) {
  if (verdicts.empty()) return true;
  bool keep =
      o.verdict && std::find(verdicts.begin(), verdicts.end(), *o.verdict) != verdicts.end();
  return keep && !(*o.verdict == kPassed && !o.flags.empty() && !include_flagged);
}

// Binds the keys to keep as a JSON list, or NULL for every sample. A key that is not valid
// UTF-8 has no faithful JSON spelling: then every row is read and the keys are kept below alone.
void bind_keys(store::Stmt& s, int index, const ExportOptions& opts) {
  if (!opts.keys) {
    s.bind(index, nullptr);
    return;
  }
  const ojson keys(*opts.keys);
  std::string text = keys.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (text != keys.dump(-1, ' ', false, nlohmann::json::error_handler_t::ignore)) {
    s.bind(index, nullptr);
    return;
  }
  s.bind(index, text);
}

}  // namespace

namespace detail {

Status select_rows(store::Db& db, const RunInfo& run, const ExportOptions& opts,
                   const std::string& destination, bool check_conflicts, ExportSummary& sum,
                   const Emit& emit) {
  KF_CHECK(check_verdict_names(opts.verdicts));
  const std::string& tag = run.tag;
  // The run's stages by kind, as it recorded them: analysis stages, the code stage, repair.
  const auto analysis_stages = run.stages(store::StageKind::analysis);
  const auto code_stages = run.stages(store::StageKind::code);
  const bool has_analysis = !analysis_stages.empty();
  std::vector<std::pair<std::string, store::StageKind>> stages;
  for (auto kind : {store::StageKind::analysis, store::StageKind::code, store::StageKind::repair})
    for (auto& name : run.stages(kind)) stages.emplace_back(name, kind);
  KF_TRY(CorpusGroups corpus, corpus_groups(db));
  // The training shapes keep verified samples unless told otherwise.
  std::vector<std::string> verdicts = opts.verdicts;
  if (verdicts.empty() && opts.shape != RowShape::record) verdicts = {std::string(kPassed)};
  // A deferred transaction: one consistent snapshot of the run while the daemon goes on.
  KF_TRY(store::Transaction tx, store::Transaction::begin(db, store::TxMode::deferred));
  KF_TRY(store::Stmt s, db.prepare(queries()["export_rows"]));
  s.bind(1, run.id);
  bind_keys(s, 2, opts);
  std::set<std::string> seen;
  while (true) {
    KF_TRY(bool row, s.step());
    if (!row) break;
    std::string key = s.text(0);
    if (opts.keys) {
      if (!opts.keys->count(key)) continue;
      seen.insert(key);
    }
    SampleOutcome o;
    ojson flags = ojson::array();
    KF_TRY(bool before_verify, read_outcome(s, tag, analysis_stages, o, flags));
    Category cat = o.category();
    if (!kept_by_verdict(o, verdicts, opts.include_flagged)) {
      ++sum.skipped;
      continue;
    }
    // Per target: ok, error, unavailable or not_run (the verification's rows of
    // verification_targets); null when the verification had no target.
    ojson cross = nullptr;
    if (!before_verify && o.verdict) {
      auto targets = parse_opt(s.opt_text(24));
      if (targets && targets->is_object() && !targets->empty()) cross = std::move(*targets);
    }
    if (!opts.compiles_for.empty()) {
      bool keep = std::all_of(opts.compiles_for.begin(), opts.compiles_for.end(),
                              [&](const std::string& t) {
                                return cross.is_object() && cross.contains(t) &&
                                       cross[t] == to_string(store::TargetResultKind::ok);
                              });
      if (!keep) {
        ++sum.not_compiling;
        continue;
      }
    }
    std::optional<dedup::NearMatch> near;
    if (opts.exclude_near != nullptr) {
      near = opts.exclude_near->nearest(s.text(18), opts.near_threshold);
      if (near) {
        sum.near.push_back({key, *near, opts.mark_near});
        if (!opts.mark_near) continue;
      }
    }
    ojson rec = ojson::parse(s.text(1), nullptr, false);
    if (!rec.is_object())
      return fail("parse", "sample '" + key + "': samples.record_json is not a JSON object");
    for (const char* name : kAdded)
      if (check_conflicts && rec.contains(name) &&
          (opts.with_reasoning || std::string_view(name) != "reasoning"))
        return fail("conflict", "sample '" + key + "': the original record already has a field '" +
                                    name +
                                    "', which the export would overwrite; nothing was "
                                    "written to " +
                                    destination);
    auto analysis = parse_opt(s.opt_text(5));
    auto generated = parse_opt(s.opt_text(9));
    rec["kernel_wrapper"] = field_or_null(generated, "kernel_wrapper");
    rec["unitest_code"] = field_or_null(generated, "unitest_code");
    if (has_analysis) {
      ojson a = field_or_null(analysis, "analysis");
      rec["kernel_analysis"] = a.is_null() && analysis ? *analysis : a;
    }
    rec["verdict"] = o.verdict ? ojson(*o.verdict) : ojson(nullptr);
    rec["flags"] = flags;
    rec["status"] = to_string(cat);
    // The round the exported code comes from: 0 for the first generation, N for repair N.
    rec["repair_round"] = s.is_null(15) ? ojson(nullptr) : ojson(s.int64(15));
    rec["model"] = run.model;
    // The stage whose answer holds the exported code: the code stage, or a repair round's.
    std::string code_stage = s.is_null(16) ? first_of(code_stages) : s.text(16);
    ojson prompt = prompt_of(run, stages, s, code_stage);
    rec["prompt"] = std::move(prompt);
    add_verification_fields(s, before_verify, std::move(cross), rec);
    if (opts.with_reasoning) {
      ojson reasoning = ojson::object();
      if (has_analysis)
        reasoning[first_of(analysis_stages)] = s.is_null(19) ? ojson() : ojson(s.text(19));
      reasoning[code_stage] = s.is_null(20) ? ojson() : ojson(s.text(20));
      rec["reasoning"] = std::move(reasoning);
    }
    if (add_near_duplicate(near, corpus, s.int64(17), rec)) ++sum.corpus_near;
    Selected sel;
    sel.sample_id = s.int64(17);
    sel.key = key;
    sel.code = s.text(18);
    sel.rec = std::move(rec);
    sel.code_stage = code_stage;
    if (!before_verify && o.verdict) {
      if (auto l = parse_opt(s.opt_text(25)); l && l->is_object()) sel.launches = std::move(*l);
      if (auto t = parse_opt(s.opt_text(26)); t && t->is_array()) sel.tests = std::move(*t);
      sel.speed = s.opt_text(27);
    }
    if (auto it = corpus.group_of.find(sel.sample_id); it != corpus.group_of.end())
      sel.group = it->second;
    KF_CHECK(emit(sel));
  }
  return unknown_keys(opts, seen, tag);
}

}  // namespace detail

Result<std::set<std::string>> read_keys_file(const std::filesystem::path& path) {
  KF_TRY(std::string text, read_file(path));
  std::set<std::string> keys;
  std::size_t start = 0;
  for (int line = 1; start < text.size(); ++line) {
    auto nl = text.find('\n', start);
    std::string key = text.substr(start, nl == std::string::npos ? nl : nl - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    if (!key.empty() && key.back() == '\r') key.pop_back();
    if (key.empty()) continue;
    for (char c : key)
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("usage", path.string() + " line " + std::to_string(line) +
                                 ": a key holds a control character");
    keys.insert(std::move(key));
  }
  return keys;
}

Result<ExportSummary> export_run(store::Db& db, const std::string& tag,
                                 const std::filesystem::path& out, const ExportOptions& opts) {
  KF_TRY(AtomicFile file, AtomicFile::create(out));
  bool json = opts.shape == RowShape::record && opts.format == ExportFormat::json;
  if (json) KF_CHECK(file.write("["));
  std::int64_t n = 0;
  auto write = [&](std::string_view line) -> Status {
    if (json) {
      KF_CHECK(file.write(n++ == 0 ? "\n" : ",\n"));
      line.remove_suffix(1);  // the newline
    }
    return file.write(line);
  };
  KF_TRY(ExportSummary sum, export_lines(db, tag, opts, write, out.string()));
  if (json) KF_CHECK(file.write(sum.written == 0 ? "]\n" : "\n]\n"));
  KF_CHECK(file.commit());
  return sum;
}

Result<ExportSummary> export_lines(store::Db& db, const std::string& tag, const ExportOptions& opts,
                                   const std::function<Status(std::string_view)>& out,
                                   const std::string& destination) {
  KF_TRY(RunInfo run, find_run(db, tag));
  bool record = opts.shape == RowShape::record;
  KF_TRY(auto rows, detail::RowMaker::create(db, run, opts));
  ExportSummary sum;
  detail::Emit write = [&](detail::Selected& sel) -> Status {
    std::optional<ojson> row;
    if (record) {
      row = std::move(sel.rec);
    } else {
      KF_TRY(row, rows->make(sel, "train", sum.written));
      if (!row) {
        ++sum.no_answer;
        return {};
      }
    }
    std::string line = row->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line += '\n';
    KF_CHECK(out(line));
    ++sum.written;
    return {};
  };
  KF_CHECK(detail::select_rows(db, run, opts, destination, record, sum, write));
  return sum;
}

}  // namespace kforge::report
