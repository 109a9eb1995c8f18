// One sample of a run: the code, the analysis, every round side by side (its wrapper and test,
// the differences from the round before, verdict, failing line, mutants, coverage, cross-compile
// results, reasoning, tokens and cost), every attempt, and the command that reproduces it.

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "kforge/verify/harness_report.hpp"
#include "labels.hpp"
#include "queries.hpp"
#include "sample_data.hpp"
#include "viewer_impl.hpp"

namespace kforge::report::viewer {

using ojson = nlohmann::ordered_json;

Diff line_diff(std::string_view a, std::string_view b, std::size_t max_cells) {
  auto split = [](std::string_view s) {
    std::vector<std::string_view> out;
    while (!s.empty()) {
      auto nl = s.find('\n');
      out.push_back(s.substr(0, nl));
      if (nl == std::string_view::npos) break;
      s.remove_prefix(nl + 1);
    }
    return out;
  };
  auto x = split(a), y = split(b);
  Diff d;
  // Common head and tail need no table.
  std::size_t head = 0;
  while (head < x.size() && head < y.size() && x[head] == y[head]) ++head;
  std::size_t tail = 0;
  while (tail < x.size() - head && tail < y.size() - head &&
         x[x.size() - 1 - tail] == y[y.size() - 1 - tail])
    ++tail;
  const std::size_t n = x.size() - head - tail, m = y.size() - head - tail;
  if ((n + 1) * (m + 1) > max_cells) {
    d.too_large = true;
    return d;
  }
  // lcs[i][j]: the longest common subsequence of x[head+i..] and y[head+j..] (middle part).
  std::vector<std::uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](std::size_t i, std::size_t j) -> std::uint32_t& { return lcs[i * (m + 1) + j]; };
  for (std::size_t i = n; i-- > 0;)
    for (std::size_t j = m; j-- > 0;)
      at(i, j) =
          x[head + i] == y[head + j] ? at(i + 1, j + 1) + 1 : std::max(at(i + 1, j), at(i, j + 1));
  for (std::size_t i = 0; i < head; ++i) d.lines.push_back({' ', std::string(x[i])});
  std::size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[head + i] == y[head + j]) {
      d.lines.push_back({' ', std::string(x[head + i])});
      ++i, ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      d.lines.push_back({'-', std::string(x[head + i++])});
      ++d.removed;
    } else {
      d.lines.push_back({'+', std::string(y[head + j++])});
      ++d.added;
    }
  }
  for (std::size_t k = x.size() - tail; k < x.size(); ++k)
    d.lines.push_back({' ', std::string(x[k])});
  return d;
}

namespace {

// The speed label's flags (verify's store: verification_speed), in words, with why it was not
// timed: "; speed flagged: not timed: timing failed: ...", "" when it has none.
std::string speed_label_flags(const VerifyAttempt& v) {
  std::string out;
  for (const auto& f : list_items(v.speed_flags_json))
    if (f.is_string()) out += (out.empty() ? "" : ", ") + detail::flag_words(f.get<std::string>());
  if (out.empty()) return "";
  out = "; speed flagged: " + out;
  if (v.speed_reason) out += ": " + *v.speed_reason;
  return out;
}

// "passed", or "passed, flagged: mutant survived" when the verdict has flags, then the speed
// label's flags where it has any.
std::string verdict_text(const VerifyAttempt& v) {
  std::string flags;
  for (const auto& f : list_items(v.flags_json))
    if (f.is_string())
      flags += (flags.empty() ? "" : ", ") + detail::flag_words(f.get<std::string>());
  return (flags.empty() ? v.verdict : v.verdict + ", flagged: " + flags) + speed_label_flags(v);
}

// Coverage facts as words: "output_sizes: 4; tail_path: false".
std::string coverage_text(const std::string& json) {
  auto j = ojson::parse(json, nullptr, false);
  if (!j.is_object()) return json;
  std::string out;
  for (const auto& [k, v] : j.items()) {
    std::string value;
    if (v.is_array())
      for (const auto& x : v)
        value += (value.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
    else
      value = v.is_string() ? v.get<std::string>() : v.dump();
    out += (out.empty() ? "" : "; ") + detail::flag_words(k) + ": " + value;
  }
  return out;
}

// A text in a <pre>, with 1-based line `mark` (0: none) highlighted; code is numbered by line
// (each line a span the stylesheet numbers).
std::string pre(std::string_view text, int mark = 0, std::string_view cls = "code") {
  const bool numbered = cls == "code";
  if (mark <= 0 && !numbered)
    return "<pre class=\"" + std::string(cls) + "\">" + html_escape(text) + "</pre>";
  std::string out = "<pre class=\"" + std::string(cls) + "\">";
  int line = 1;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto nl = text.find('\n', start);
    std::string_view l = text.substr(start, nl == std::string_view::npos ? nl : nl - start);
    if (nl == std::string_view::npos && l.empty() && line > 1) break;
    if (numbered) out += "<span class=\"ln\">";
    if (line == mark)
      out += "<mark class=\"failing\">" + html_escape(l) + "</mark>";
    else
      out += html_escape(l);
    if (numbered) out += "</span>";
    if (nl == std::string_view::npos) break;
    out += "\n";
    start = nl + 1;
    ++line;
  }
  return out + "</pre>";
}

std::string diff_html(std::string_view before, std::string_view after) {
  Diff d = line_diff(before, after);
  if (d.too_large) return "<p class=\"muted\">too large to compare line by line</p>";
  if (d.added == 0 && d.removed == 0) return "<p class=\"muted\">unchanged</p>";
  std::string out =
      fmt::format("<p class=\"muted\">+{} -{} lines</p><pre class=\"diff\">", d.added, d.removed);
  for (const auto& l : d.lines) {
    std::string text = html_escape(std::string(1, l.op) + " " + l.text);
    if (l.op == '+')
      out += "<ins>" + text + "</ins>\n";
    else if (l.op == '-')
      out += "<del>" + text + "</del>\n";
    else
      out += text + "\n";
  }
  return out + "</pre>";
}

std::string json_text(const ojson& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// What a round's answer and verification hold, for the page.
struct Round {
  int n = 0;
  const StageAttempt* answer = nullptr;
  const VerifyAttempt* verdict = nullptr;
  std::string wrapper, test, unfixable;
  bool has_code = false;
  std::int64_t tokens = 0;
  double cost_usd = 0;
};

// The first failing test's location, "(section, line)", from a verification's report.
std::pair<std::string, int> failing_line(const VerifyAttempt* v) {
  if (v == nullptr) return {};
  return {v->failing_section.value_or(""), static_cast<int>(v->failing_line.value_or(0))};
}

std::string line_of(std::string_view text, int n) {
  std::size_t start = 0;
  for (int i = 1; i < n; ++i) {
    auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) return "";
    start = nl + 1;
  }
  return std::string(text.substr(start, text.find('\n', start) - start));
}

// Mutants that survived the test: output mutants by name, kernel mutants with their place.
std::string mutants_html(const VerifyAttempt& v) {
  if (!v.mutants_applicable) return "";
  std::string out = fmt::format("<dt>mutants</dt><dd>killed {} of {} that apply",
                                v.mutants_killed.value_or(0), *v.mutants_applicable);
  std::string survived;
  for (const auto& s : list_items(v.mutants_survived_json))
    if (s.is_string()) survived += (survived.empty() ? "" : ", ") + s.get<std::string>();
  if (!survived.empty()) out += "; survived: " + html_escape(survived);
  out += "</dd>";
  if (v.kernel_applicable) {
    out += fmt::format("<dt>kernel mutants</dt><dd>killed {} of {} that apply, {} equivalent",
                       v.kernel_killed.value_or(0), *v.kernel_applicable,
                       v.kernel_equivalent.value_or(0));
    for (const auto& s : list_items(v.kernel_survived_json))
      if (auto k = verify::KernelSurvivor::from_json(s))  // as verify's store wrote it
        out += "<br>survived: " +
               html_escape(fmt::format("{} ({} line {})", k->desc, k->section.value_or("code"),
                                       k->section_line.value_or(0)));
    out += "</dd>";
  }
  return out;
}

Result<std::string> targets_html(store::Db& db, std::int64_t verification_id) {
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_targets"]));
  s.bind(1, verification_id);
  std::string out;
  KF_CHECK(s.each([&](store::Stmt& r) {
    out += "<li>" + html_escape(r.text(0)) + ": " + html_escape(r.text(1));
    if (auto k = r.opt_text(3)) out += " (kernel " + html_escape(*k) + ")";
    if (auto e = r.opt_text(2)) out += "<pre class=\"small\">" + html_escape(*e) + "</pre>";
    out += "</li>";
  }));
  return out.empty() ? out : "<dt>cross-compile</dt><dd><ul>" + out + "</ul></dd>";
}

std::vector<Round> rounds_of(const RunInfo& run, const SampleData& d) {
  // Round 0's code comes from the run's code stage, later rounds' from its repair stage.
  const auto code = run.stages(store::StageKind::code);
  const auto repair = run.stages(store::StageKind::repair);
  int last = 0;
  for (const auto& a : d.outputs) last = std::max(last, a.repair_round);
  for (const auto& v : d.verifications) last = std::max(last, v.repair_round);
  std::vector<Round> rounds(static_cast<std::size_t>(last) + 1);
  for (int n = 0; n <= last; ++n) rounds[static_cast<std::size_t>(n)].n = n;
  for (const auto& a : d.outputs) {
    Round& r = rounds[static_cast<std::size_t>(a.repair_round)];
    r.tokens += a.prompt_tokens + a.completion_tokens;
    r.cost_usd += a.cost_usd;
    const auto& names = a.repair_round == 0 ? code : repair;
    if (std::find(names.begin(), names.end(), a.stage) != names.end()) r.answer = &a;
  }
  for (const auto& v : d.verifications)
    rounds[static_cast<std::size_t>(v.repair_round)].verdict = &v;
  for (auto& r : rounds) {
    if (r.answer == nullptr || !r.answer->parsed_json) continue;
    auto p = ojson::parse(*r.answer->parsed_json, nullptr, false);
    r.wrapper = json_text(p, "kernel_wrapper");
    r.test = json_text(p, "unitest_code");
    r.unfixable = json_text(p, "unfixable");
    r.has_code = p.is_object() && p.contains("kernel_wrapper");
  }
  return rounds;
}

}  // namespace

namespace {

// The prompt a round's answer was asked with, as text: each message's role and content (the
// request as stored when it is not a chat request).
std::string prompt_text(const std::string& request_json) {
  auto j = ojson::parse(request_json, nullptr, false);
  if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array() ||
      j["messages"].empty())
    return request_json;
  std::string out;
  for (const auto& m : j["messages"]) {
    if (!m.is_object()) continue;
    out += "--- " + json_text(m, "role") + "\n";
    out += m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>()
                                                             : m.value("content", ojson()).dump();
    out += "\n";
  }
  return out;
}

// Where the sample is in the list it was opened from (the samples page's filter, carried by its
// links): the filter's parameters, its outcome, and the samples before and after it.
struct Place {
  Params filter;
  const SampleOutcome* outcome = nullptr;
  std::string previous, next;
  std::size_t index = 0, count = 0;
  ViewCache::Outcomes hold;  // keeps `outcome` alive
};

Result<Place> place_of(store::Db& db, const ViewRequest& req, const RunInfo& run,
                       const std::string& key, const ViewOptions& opts) {
  Place p;
  KF_TRY(Filter f, parse_filter(req));
  p.filter = f.params();
  KF_TRY(p.hold, outcomes_of(db, run, opts.cache));
  for (const auto& o : *p.hold)
    if (o.key == key) p.outcome = &o;
  KF_TRY(Selection sel, select_samples(db, run, *p.hold, f));
  p.count = sel.rows.size();
  for (std::size_t i = 0; i < sel.rows.size(); ++i) {
    if (sel.rows[i].o->key != key) continue;
    p.index = i + 1;
    if (i > 0) p.previous = sel.rows[i - 1].o->key;
    if (i + 1 < sel.rows.size()) p.next = sel.rows[i + 1].o->key;
  }
  return p;
}

Params with_key(Params p, const std::string& key) {
  p.emplace_back("key", key);
  return p;
}

// The heading: the key, the way back to the list with its filter, previous and next in it, and
// where the job is.
std::string heading_html(const RunInfo& run, const SampleData& d, const Place& place) {
  std::string h = "<h1 class=\"key\">" + html_escape(d.key) + "</h1><p class=\"meta\">run " +
                  link("/run", {{"tag", run.tag}}, run.tag) + " (pipeline " +
                  html_escape(run.pipeline) + ", model " + html_escape(run.model) + "); job " +
                  html_escape(std::string(store::to_string(d.state))) + " at " +
                  html_escape(d.stage) + ", " +
                  fmt::format("{} attempt(s): {} LLM call(s), {} verification(s)",
                              d.outputs.size() + d.verifications.size(), d.outputs.size(),
                              d.verifications.size());
  if (d.error_kind || d.error)
    h += "; error " + html_escape(d.error_kind.value_or("-")) + ": " +
         html_escape(d.error.value_or("-"));
  h += "</p><p class=\"pages\" id=\"place\">" + link("/run", place.filter, "back to the list");
  if (place.index > 0)
    h += fmt::format(" <span class=\"muted\">{} of {}</span> ", place.index, place.count);
  if (!place.previous.empty())
    h += " <a rel=\"prev\" href=\"" + href("/sample", with_key(place.filter, place.previous)) +
         "\">previous</a>";
  if (!place.next.empty())
    h += " <a rel=\"next\" href=\"" + href("/sample", with_key(place.filter, place.next)) +
         "\">next</a>";
  return h + "</p>";
}

// The same sample in the other runs that hold it, each with the A/B page of the two runs.
Result<std::string> other_runs_html(store::Db& db, const RunInfo& run, const SampleData& d) {
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_sample_other_runs"]));
  s.bind(1, d.sample_id);
  s.bind(2, run.id);
  std::string out;
  KF_CHECK(s.each([&](store::Stmt& r) {
    std::string other = r.text(0);
    out += (out.empty() ? "" : "; ") + link("/sample", {{"tag", other}, {"key", d.key}}, other) +
           " (" + link("/ab", {{"a", other}, {"b", run.tag}}, "A/B") + ")";
  }));
  return out.empty() ? out : "<p class=\"meta\" id=\"other-runs\">in other runs: " + out + "</p>";
}

// The sample's near-duplicate group: every other member, linked to its page in this run where
// the run holds it, with the member it is most similar to and how similar.
Result<std::string> group_html(store::Db& db, const RunInfo& run, const SampleData& d) {
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_sample_group"]));
  s.bind(1, d.sample_id);
  s.bind(2, run.id);
  std::string items;
  std::int64_t group = 0;
  int members = 0;
  KF_CHECK(s.each([&](store::Stmt& r) {
    group = r.int64(0);
    if (++members > 200) return;
    std::string key = r.text(2);
    std::string name = r.int64(1) == d.sample_id ? "<b>" + html_escape(key) + "</b> (this sample)"
                       : r.int64(6) != 0 ? link("/sample", {{"tag", run.tag}, {"key", key}}, key)
                                         : html_escape(key) + " (not in this run)";
    std::string how =
        r.int64(4) != 0 ? "the same kernels as " : fmt::format("similarity {:.2f} to ", r.real(3));
    items += "<li><span class=\"key\">" + name + "</span> <span class=\"muted\">" +
             html_escape(how + r.opt_text(5).value_or("?")) + "</span></li>";
  }));
  if (members == 0) return std::string();
  std::string more = members > 200 ? "<li class=\"muted\">and more</li>" : "";
  return "<dt>near duplicates</dt><dd id=\"group\">" +
         link("/run", {{"tag", run.tag}, {"group", std::to_string(group)}},
              fmt::format("group {}", group)) +
         fmt::format(" ({} samples at the last kforge corpus dedup)", std::min(members, 200)) +
         "<ul class=\"group\">" + items + more + "</ul></dd>";
}

// The speed label of the sample's latest verdict, as words.
std::string speed_text(const SampleOutcome* o) {
  if (o == nullptr || !o->timed) return "not timed";
  std::string s = o->speedup ? fmt::format("{:.2f}x the PyTorch reference", *o->speedup)
                             : std::string("timed, no reference");
  if (o->pass_perf) s += *o->pass_perf ? ", fast enough" : ", too slow";
  if (o->kernel_share)
    s += "; its kernels " + detail::percent(*o->kernel_share) + " of the timed call";
  return s;
}

// What to read first: the latest verdict and its failing line, the description, the speed, the
// cost and the command that reproduces the sample.
Result<std::string> summary_html(store::Db& db, const RunInfo& run, const SampleData& d,
                                 const std::vector<Round>& rounds, const Place& place,
                                 const ViewOptions& opts) {
  std::int64_t tokens = 0;
  double cost = 0;
  for (const auto& a : d.outputs) {
    tokens += a.prompt_tokens + a.completion_tokens;
    cost += a.cost_usd;
  }
  const VerifyAttempt* last = d.verifications.empty() ? nullptr : &d.verifications.back();
  std::string h =
      "<dl class=\"facts\" id=\"summary\"><dt>latest verdict</dt><dd id=\"verdict\">" +
      (last ? html_escape(verdict_text(*last)) + ": " + html_escape(last->detail.value_or("-"))
            : std::string("none")) +
      "</dd>";
  if (last != nullptr) {
    auto [section, line] = failing_line(last);
    const Round* r = nullptr;
    for (const auto& x : rounds)
      if (x.n == last->repair_round) r = &x;
    if (!section.empty() && line > 0 && r != nullptr) {
      std::string_view text = section == "kernel_wrapper" ? std::string_view(r->wrapper)
                              : section == "unitest_code" ? std::string_view(r->test)
                                                          : std::string_view(d.code);
      h += "<dt>failing line</dt><dd class=\"failing-line\" id=\"top-failing-line\">" +
           html_escape(fmt::format("{} line {}: ", section, line)) + "<code>" +
           html_escape(line_of(text, line)) + "</code></dd>";
    }
  }
  KF_TRY(store::Stmt s, db.prepare(queries()["viewer_sample_description"]));
  s.bind(1, d.sample_id);
  KF_TRY(bool row, s.step());
  for (int c = 0; row && c < 2; ++c)
    if (auto text = s.opt_text(c); text && !text->empty())
      h += "<dt>description</dt><dd><pre class=\"prose description\">" + html_escape(*text) +
           "</pre></dd>";
  std::string kforge = "kforge";
  if (!opts.config_path.empty()) kforge += " -c " + shell_quote(opts.config_path);
  h += "<dt>speed</dt><dd id=\"speed\">" + html_escape(speed_text(place.outcome)) + "</dd>";
  KF_TRY(std::string group, group_html(db, run, d));
  h += group;
  h += "<dt>tokens, cost</dt><dd>" +
       fmt::format("{} tokens, {} over {} LLM call(s)", detail::thousands(tokens),
                   detail::money(cost), d.outputs.size()) +
       "</dd><dt>reproduce</dt><dd><code id=\"reproduce\">" +
       html_escape(kforge + " debug " + shell_quote(run.tag) + " " + shell_quote(d.key) +
                   " --out kforge-debug") +
       "</code> (writes the prompts, answers and the verifier's script; run.sh re-runs it)"
       "</dd></dl>";
  return h;
}

// One round: its answer, verdict, failing line, mutants, coverage, cross-compile results, the
// code with the differences from the round before, and (collapsed) the prompt the model was
// sent, its raw answer, its reasoning and the verifier's stderr.
Result<std::string> round_html(store::Db& db, const SampleData& d, const Round& r,
                               const Round* before) {
  std::string h =
      fmt::format("<section class=\"round\" id=\"round-{}\"><h3>{}</h3>", r.n,
                  r.n == 0 ? std::string("round 0: generate") : fmt::format("repair {}", r.n));
  h += "<dl class=\"facts\">";
  if (r.answer != nullptr) {
    h += "<dt>answer</dt><dd>" + html_escape(std::string(store::to_string(r.answer->status)));
    if (r.answer->error)
      h += ": " + html_escape(r.answer->error_kind.value_or("-") + ": " + *r.answer->error);
    h += "</dd>";
  }
  h += "<dt>tokens, cost</dt><dd>" +
       fmt::format("{} tokens, {}", detail::thousands(r.tokens), detail::money(r.cost_usd)) +
       "</dd>";
  auto [section, line] = failing_line(r.verdict);
  if (r.verdict != nullptr) {
    h += "<dt>verdict</dt><dd class=\"verdict\">" + html_escape(verdict_text(*r.verdict)) +
         "</dd><dt>detail</dt><dd>" + html_escape(r.verdict->detail.value_or("-")) + "</dd>";
    if (!section.empty() && line > 0) {
      std::string_view text = section == "kernel_wrapper" ? std::string_view(r.wrapper)
                              : section == "unitest_code" ? std::string_view(r.test)
                                                          : std::string_view(d.code);
      h += "<dt>failing line</dt><dd class=\"failing-line\">" +
           html_escape(fmt::format("{} line {}: ", section, line)) + "<code>" +
           html_escape(line_of(text, line)) + "</code></dd>";
    }
    h += mutants_html(*r.verdict);
    if (r.verdict->coverage_json)
      h +=
          "<dt>coverage</dt><dd>" + html_escape(coverage_text(*r.verdict->coverage_json)) + "</dd>";
    KF_TRY(std::string targets, targets_html(db, r.verdict->id));
    h += targets;
  } else {
    h += "<dt>verdict</dt><dd class=\"verdict\">none</dd>";
  }
  h += "</dl>";
  if (!r.unfixable.empty()) h += "<h4>unfixable</h4>" + pre(r.unfixable, 0, "prose");
  if (r.has_code) {
    h += "<h4>kernel_wrapper</h4>" + pre(r.wrapper, section == "kernel_wrapper" ? line : 0);
    if (before != nullptr) h += diff_html(before->wrapper, r.wrapper);
    h += "<h4>unitest_code</h4>" + pre(r.test, section == "unitest_code" ? line : 0);
    if (before != nullptr) h += diff_html(before->test, r.test);
  }
  if (r.answer != nullptr && r.answer->request_json)
    h += std::string("<details class=\"prompt\"><summary>") +
         (r.n == 0 ? "prompt" : "prompt, with the repair evidence sent") + "</summary>" +
         pre(prompt_text(*r.answer->request_json), 0, "prose") + "</details>";
  if (r.answer != nullptr && r.answer->response_raw)
    h += "<details class=\"raw\"><summary>raw answer</summary>" +
         pre(*r.answer->response_raw, 0, "small") + "</details>";
  if (r.answer != nullptr && r.answer->reasoning)
    h += "<details><summary>reasoning</summary>" + pre(*r.answer->reasoning, 0, "prose") +
         "</details>";
  if (r.verdict != nullptr && r.verdict->stderr_tail && !r.verdict->stderr_tail->empty())
    h += "<details><summary>stderr</summary>" + pre(*r.verdict->stderr_tail, 0, "small") +
         "</details>";
  return h + "</section>";
}

// The rounds: side by side while they fit, else one under the other; with show=N only round N
// (with its differences from the round before), and links to show each round alone or all.
Result<std::string> rounds_html(store::Db& db, const ViewRequest& req, const SampleData& d,
                                const std::vector<Round>& rounds, const Place& place) {
  const std::string show = param(req, "show");
  bool known = show.empty() || show == "all";
  for (const auto& r : rounds) known = known || show == std::to_string(r.n);
  if (!known)
    return fail("usage", fmt::format("parameter 'show' must be all or a round of this sample "
                                     "(0 to {}), got '{}'",
                                     rounds.size() - 1, show));
  Params here = with_key(place.filter, d.key);
  std::string h = "<h2>Rounds</h2>";
  if (rounds.size() > 1) {
    h += "<p class=\"pages\" id=\"show-round\">show: ";
    auto item = [&](const std::string& value, const std::string& text) {
      bool current = value == (show.empty() ? "all" : show);
      Params p = here;
      if (value != "all") p.emplace_back("show", value);
      return current ? "<b>" + html_escape(text) + "</b> "
                     : "<a href=\"" + href("/sample", p) + "\">" + html_escape(text) + "</a> ";
    };
    h += item("all", "every round");
    for (const auto& r : rounds)
      h += item(std::to_string(r.n), r.n == 0 ? "round 0" : fmt::format("repair {}", r.n));
    h += "</p>";
  }
  h += "<div class=\"rounds\">";
  const Round* before = nullptr;
  for (const auto& r : rounds) {
    if (show.empty() || show == "all" || show == std::to_string(r.n)) {
      KF_TRY(std::string round, round_html(db, d, r, before));
      h += round;
    }
    if (r.has_code) before = &r;
  }
  return h + "</div>";
}

std::string attempts_html(const SampleData& d) {
  std::string h =
      "<h2>Attempts</h2><table id=\"attempts\"><tr><th>stage</th><th class=\"num\">round</th>"
      "<th class=\"num\">attempt</th><th>status</th><th>error</th><th class=\"num\">tokens</th>"
      "<th class=\"num\">cost</th><th class=\"num\">ms</th><th>prompt</th></tr>";
  for (const auto& a : d.outputs)
    h += "<tr><td>" + html_escape(a.stage) + "</td><td class=\"num\">" +
         std::to_string(a.repair_round) + "</td><td class=\"num\">" + std::to_string(a.attempt) +
         "</td><td>" + html_escape(std::string(store::to_string(a.status))) + "</td><td>" +
         html_escape(a.error ? a.error_kind.value_or("-") + ": " + *a.error : "") +
         "</td><td class=\"num\">" + detail::thousands(a.prompt_tokens + a.completion_tokens) +
         "</td><td class=\"num\">" + detail::money(a.cost_usd) + "</td><td class=\"num\">" +
         std::to_string(a.latency_ms) + "</td><td>" + html_escape(a.prompt_version) + "</td></tr>";
  for (const auto& v : d.verifications)
    h += "<tr><td>verify</td><td class=\"num\">" + std::to_string(v.repair_round) +
         "</td><td class=\"num\">" + std::to_string(v.attempt) + "</td><td>" +
         html_escape(verdict_text(v)) + "</td><td>" + html_escape(v.detail.value_or("")) +
         "</td><td></td><td></td><td class=\"num\">" + std::to_string(v.duration_ms) + "</td><td>" +
         html_escape(v.device.value_or("")) + "</td></tr>";
  return h + "</table>";
}

}  // namespace

Result<Body> sample_page(store::Db& db, const ViewRequest& req, const ViewOptions& opts) {
  std::string tag = param(req, "tag"), key = param(req, "key");
  if (tag.empty() || key.empty())
    return fail("usage", "the sample page needs a tag and a key (/sample?tag=TAG&key=KEY)");
  KF_TRY(RunInfo run, find_run_for_client(db, tag));
  KF_TRY(SampleData d, load_sample(db, run, key));
  KF_TRY(Place place, place_of(db, req, run, key, opts));
  std::vector<Round> rounds = rounds_of(run, d);

  Body b;
  b.title = d.key + " in " + run.tag;
  b.refresh =
      run.active() && d.state != store::JobState::done && d.state != store::JobState::failed;
  std::string& h = b.html;
  h += heading_html(run, d, place);
  KF_TRY(std::string others, other_runs_html(db, run, d));
  h += others;
  KF_TRY(std::string summary, summary_html(db, run, d, rounds, place, opts));
  h += summary;
  h += "<h2>Code</h2>" + pre(d.code);
  const auto analysis = run.stages(store::StageKind::analysis);
  for (const auto& a : d.outputs) {
    if (std::find(analysis.begin(), analysis.end(), a.stage) == analysis.end() ||
        a.status != store::OutputStatus::ok || !a.parsed_json)
      continue;
    auto p = ojson::parse(*a.parsed_json, nullptr, false);
    if (p.is_discarded()) continue;
    const ojson& an = p.is_object() && p.contains("analysis") ? p["analysis"] : p;
    h += "<h2>Analysis</h2>" + pre(an.dump(2), 0, "small");
    if (a.reasoning)
      h += "<details><summary>reasoning</summary>" + pre(*a.reasoning, 0, "prose") + "</details>";
  }
  KF_TRY(std::string shown, rounds_html(db, req, d, rounds, place));
  h += shown + attempts_html(d);
  return b;
}

}  // namespace kforge::report::viewer
