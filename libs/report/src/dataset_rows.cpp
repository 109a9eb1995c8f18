#include "dataset_rows.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "kforge/report/dataset.hpp"
#include "queries.hpp"

namespace kforge::report::detail {

namespace {

// One accepted answer of a sample: what the model was sent and what it answered.
struct Answer {
  std::string stage;
  int round = 0;
  std::string version, sha256;
  ojson messages;  // the request's messages, each {role, content}
  std::string answer;
  std::optional<std::string> reasoning;
};

struct RoundVerdict {
  std::string verdict;
  ojson flags = ojson::array();
  std::optional<std::string> detail;
};

struct History {
  std::optional<Answer> analysis;
  std::map<int, Answer> code;  // by round: the answer holding that round's wrapper and test
  std::map<int, RoundVerdict> verdicts;
  double cost_usd = 0;
  std::int64_t prompt_tokens = 0, completion_tokens = 0;
};

// A message's content as text: a string, or the text parts of a list of parts.
std::string content_text(const ojson& m) {
  auto it = m.find("content");
  if (it == m.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array())
    for (const auto& part : *it)
      if (part.is_object() && part.contains("text") && part["text"].is_string())
        out += part["text"].get<std::string>();
  return out;
}

Result<History> load_history(store::Db& db, const RunInfo& run, const Selected& sel,
                             bool reasoning_field) {
  History h;
  auto where = [&](const std::string& stage, int round) {
    return "run '" + run.tag + "', sample '" + sel.key + "', " + stage + " answer (round " +
           std::to_string(round) + ")";
  };
  auto kind_of = [&](const std::string& stage) -> std::optional<store::StageKind> {
    for (auto k : {store::StageKind::analysis, store::StageKind::code, store::StageKind::repair}) {
      auto names = run.stages(k);
      if (std::find(names.begin(), names.end(), stage) != names.end()) return k;
    }
    return std::nullopt;
  };
  KF_TRY(store::Stmt * a, db.cached(queries()["dataset_answers"]));
  a->bind(1, run.id).bind(2, sel.sample_id);
  KF_CHECK(a->each([&](store::Stmt& r) -> Status {
    Answer ans;
    ans.stage = r.text(0);
    ans.round = static_cast<int>(r.int64(1));
    ans.version = r.text(2);
    ans.sha256 = r.text(3);
    const bool holds_code = r.int64(7) != 0;
    if (r.is_null(5)) return {};
    ans.answer = r.text(5);
    ans.reasoning = r.opt_text(6);
    if (ans.reasoning && ans.reasoning->empty()) ans.reasoning.reset();
    auto req = ojson::parse(r.is_null(4) ? std::string() : r.text(4), nullptr, false);
    if (!req.is_object() || !req.contains("messages") || !req["messages"].is_array() ||
        req["messages"].empty())
      return fail("parse", where(ans.stage, ans.round) + ": its stored request has no messages");
    ans.messages = ojson::array();
    for (const auto& m : req["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
        return fail("parse", where(ans.stage, ans.round) + ": a request message has no role");
      ojson msg = {{"role", m["role"]}, {"content", content_text(m)}};
      if (reasoning_field) msg["reasoning_content"] = nullptr;
      ans.messages.push_back(std::move(msg));
    }
    // By the stage's kind in the run: the first analysis stage's answer (the latest of its
    // rows), and the code of each round.
    auto kind = kind_of(ans.stage);
    if (kind == store::StageKind::analysis) {
      if (!h.analysis || h.analysis->stage == ans.stage) h.analysis = std::move(ans);
    } else if (kind && *kind != store::StageKind::analysis && holds_code) {
      int round = kind == store::StageKind::code ? 0 : ans.round;
      h.code[round] = std::move(ans);
    }
    return {};
  }));
  KF_TRY(store::Stmt * v, db.cached(queries()["dataset_round_verdicts"]));
  v->bind(1, run.id).bind(2, sel.sample_id);
  KF_CHECK(v->each([&](store::Stmt& r) {
    RoundVerdict rv;
    rv.verdict = r.text(1);
    auto flags = ojson::parse(r.text(2), nullptr, false);
    if (flags.is_array()) rv.flags = std::move(flags);
    rv.detail = r.opt_text(3);
    h.verdicts[static_cast<int>(r.int64(0))] = std::move(rv);
  }));
  KF_TRY(store::Stmt * c, db.cached(queries()["dataset_sample_cost"]));
  c->bind(1, run.id).bind(2, sel.sample_id);
  KF_CHECK(c->each([&](store::Stmt& r) {
    h.cost_usd = r.real(0);
    h.prompt_tokens = r.int64(1);
    h.completion_tokens = r.int64(2);
  }));
  return h;
}

ojson opt(const std::optional<std::string>& s) {
  return s ? ojson(*s) : ojson(nullptr);
}

// The assistant's turn for an answer, with its reasoning where the user asked for it.
ojson assistant_turn(const Answer& a, const ExportOptions& opts) {
  bool field = opts.with_reasoning && opts.reasoning_style == ReasoningStyle::reasoning_content;
  std::string content = a.answer;
  if (opts.with_reasoning && !field && a.reasoning)
    content = "<think>\n" + *a.reasoning + "\n</think>\n\n" + content;
  ojson turn = {{"role", "assistant"}, {"content", std::move(content)}};
  if (field) turn["reasoning_content"] = opt(a.reasoning);
  return turn;
}

void append(ojson& messages, const ojson& more) {
  for (const auto& m : more) messages.push_back(m);
}

ojson metadata(const RunInfo& run, const ExportOptions& opts, const Selected& sel, const History& h,
               const Answer& final_answer, const std::string& split) {
  const ojson& rec = sel.rec;
  ojson prompts = ojson::array();
  if (rec.contains("prompt") && rec["prompt"].is_object())
    for (const auto& [stage, p] : rec["prompt"].items())
      if (p.is_object())
        prompts.push_back({{"stage", stage},
                           {"version", p.value("version", ojson())},
                           {"sha256", p.value("sha256", ojson())}});
  ojson near = nullptr;
  if (rec.contains("near_duplicate_of")) {
    const ojson& n = rec["near_duplicate_of"];
    near = {{"in", n.value("in", ojson())},
            {"file", n.value("file", ojson())},
            {"key", n.value("key", ojson())},
            {"similarity", n.value("similarity", ojson())},
            {"exact", n.value("exact", ojson())}};
  }
  ojson license = nullptr;
  if (auto it = rec.find(opts.license_field); it != rec.end() && it->is_string()) license = *it;
  return {{"key", sel.key},
          {"run", run.tag},
          {"pipeline", run.pipeline},
          {"prompt_version", final_answer.version},
          {"prompts", std::move(prompts)},
          {"model", run.model},
          {"stage", sel.code_stage},
          {"repair_round", rec.value("repair_round", ojson())},
          {"verdict", rec.value("verdict", ojson())},
          {"flags", rec.value("flags", ojson::array())},
          {"status", rec.value("status", ojson())},
          {"mutation_score", rec.value("mutation_score", ojson())},
          {"cost_usd", h.cost_usd},
          {"prompt_tokens", h.prompt_tokens},
          {"completion_tokens", h.completion_tokens},
          {"near_duplicate_of", std::move(near)},
          {"license", std::move(license)},
          {"group", opt(sel.group)},
          {"split", split}};
}

ojson first_user(const ojson& messages) {
  for (const auto& m : messages)
    if (m["role"] == "user") return ojson::array({{{"role", "user"}, {"content", m["content"]}}});
  return ojson::array();
}

}  // namespace

std::vector<std::string> top_level_functions(const std::string& source) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < source.size()) {
    std::size_t nl = source.find('\n', at);
    std::string_view line(source.data() + at, (nl == std::string::npos ? source.size() : nl) - at);
    if (line.starts_with("def ")) {
      std::size_t paren = line.find('(');
      if (paren != std::string_view::npos && paren > 4) out.emplace_back(line.substr(4, paren - 4));
    }
    if (nl == std::string::npos) break;
    at = nl + 1;
  }
  return out;
}

Result<std::unique_ptr<RowMaker>> RowMaker::create(store::Db& db, const RunInfo& run,
                                                   const ExportOptions& opts) {
  return std::unique_ptr<RowMaker>(new RowMaker(db, run, opts));
}

Result<std::optional<ojson>> RowMaker::make(const Selected& sel, const std::string& split,
                                            std::int64_t index) {
  bool field = opts_.with_reasoning && opts_.reasoning_style == ReasoningStyle::reasoning_content;
  KF_TRY(History h, load_history(db_, run_, sel, field));
  const ojson& round_j = sel.rec.value("repair_round", ojson());
  int final_round = round_j.is_number_integer() ? round_j.get<int>() : 0;
  auto fin = h.code.find(final_round);
  if (fin == h.code.end()) return std::optional<ojson>();
  const Answer& final_answer = fin->second;
  ojson meta = metadata(run_, opts_, sel, h, final_answer, split);
  ojson row = ojson::object();
  switch (opts_.shape) {
    case RowShape::sft: {
      ojson messages = final_answer.messages;
      messages.push_back(assistant_turn(final_answer, opts_));
      row["messages"] = std::move(messages);
      break;
    }
    case RowShape::prompt_completion:
      row["prompt"] = final_answer.messages;
      row["completion"] = ojson::array({assistant_turn(final_answer, opts_)});
      break;
    case RowShape::trajectory: {
      ojson messages = ojson::array();
      if (h.analysis) {
        append(messages, h.analysis->messages);
        messages.push_back(assistant_turn(*h.analysis, opts_));
      }
      ojson rounds = ojson::array();
      for (const auto& [round, answer] : h.code) {
        if (round > final_round) break;
        append(messages, answer.messages);
        messages.push_back(assistant_turn(answer, opts_));
        auto v = h.verdicts.find(round);
        rounds.push_back({{"round", round},
                          {"stage", answer.stage},
                          {"verdict", v == h.verdicts.end() ? ojson() : ojson(v->second.verdict)},
                          {"flags", v == h.verdicts.end() ? ojson::array() : v->second.flags},
                          {"detail", v == h.verdicts.end() ? ojson() : opt(v->second.detail)}});
      }
      row["messages"] = std::move(messages);
      meta["rounds"] = std::move(rounds);
      break;
    }
    case RowShape::rl: {
      // The task as first asked: the generation's request (its first user message).
      auto first = h.code.find(0);
      const Answer& task = first != h.code.end() ? first->second : final_answer;
      ojson kernels = ojson::array();
      if (sel.launches.is_object())
        for (const auto& launch : sel.launches.items()) kernels.push_back(launch.key());
      ojson tests = ojson::array();
      if (sel.tests.is_array())
        for (const auto& t : sel.tests)
          if (t.is_string()) tests.push_back(t);
      const ojson& wrapper = sel.rec.value("kernel_wrapper", ojson());
      std::string wrapper_text = wrapper.is_string() ? wrapper.get<std::string>() : "";
      row["data_source"] = "kforge/" + run_.tag;
      row["prompt"] = first_user(task.messages);
      row["ability"] = "triton";
      row["reward_model"] = {{"style", "rule"},
                             {"ground_truth",
                              {{"unitest_code", sel.rec.value("unitest_code", ojson())},
                               {"kernel_wrapper", wrapper},
                               {"entry_points",
                                {{"kernels", std::move(kernels)},
                                 {"tests", std::move(tests)},
                                 {"wrapper", top_level_functions(wrapper_text)}}},
                               {"speed", opt(sel.speed)}}}};
      row["extra_info"] = {
          {"split", split}, {"index", index}, {"key", sel.key}, {"code", sel.code}};
      break;
    }
    case RowShape::record:
      row = sel.rec;
      return std::optional<ojson>(std::move(row));
  }
  row["metadata"] = std::move(meta);
  return std::optional<ojson>(std::move(row));
}

}  // namespace kforge::report::detail
