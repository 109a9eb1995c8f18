// A chat completion read into a ChatResponse: the body must be a JSON object with choices; usage
// (reasoning and cached tokens under each provider's name), the model, the finish reason, the
// message's text (string or parts) and the reasoning (the provider's field, thinking parts,
// <think> blocks) kept apart; a reply cut at max_tokens or with nothing after its reasoning is
// "truncated"; else the answer is extracted (json.hpp) and checked against the schema.

#include "completion.hpp"

#include <nlohmann/json.hpp>

#include "call.hpp"
#include "kforge/llm/errors.hpp"
#include "kforge/llm/json.hpp"
#include "retry.hpp"
#include "text.hpp"

namespace kforge::llm {

using json = nlohmann::json;

std::optional<Error> read_completion(const Call& c, const std::string& raw_in,
                                     const ApiAccess& access, std::optional<int> default_max_tokens,
                                     ChatResponse& r) {
  r.request_sha256 = c.sha;
  r.raw_body = access.redact(raw_in);
  const std::string& raw = r.raw_body;
  r.http_status = 200;
  r.attempts = c.attempts;
  json j = json::parse(raw, nullptr, false);
  auto ctype = [&] {
    auto it = c.headers.find("content-type");
    return it == c.headers.end() ? std::string("none") : it->second;
  };
  if (j.is_discarded() || !j.is_object()) {
    return llm_error(ErrorKind::protocol,
                     access.where(c) + ": malformed response body (content-type " + ctype() + ", " +
                         std::to_string(raw.size()) + " bytes): \"" +
                         access.redact(excerpt(raw, 120)) + "\"" + access.attempt_note(c),
                     Transient::yes);
  }
  r.max_tokens = c.req.max_tokens.value_or(default_max_tokens.value_or(0));
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    auto count = [](const json& o, const char* k) {
      auto it = o.find(k);
      return it != o.end() && it->is_number_integer() ? it->get<int>() : 0;
    };
    r.prompt_tokens = count(*u, "prompt_tokens");
    r.completion_tokens = count(*u, "completion_tokens");
    if (auto d = u->find("completion_tokens_details"); d != u->end() && d->is_object())
      r.reasoning_tokens = count(*d, "reasoning_tokens");
    if (auto d = u->find("prompt_tokens_details"); d != u->end() && d->is_object())
      r.cached_prompt_tokens = count(*d, "cached_tokens");
    if (r.cached_prompt_tokens == 0)  // DeepSeek's name for it
      r.cached_prompt_tokens = count(*u, "prompt_cache_hit_tokens");
  }
  if (auto m = j.find("model"); m != j.end() && m->is_string()) r.model = m->get<std::string>();
  auto ch = j.find("choices");
  if (ch == j.end() || !ch->is_array() || ch->empty() || !(*ch)[0].is_object()) {
    std::string why = j.contains("error") ? ": " + access.redact(provider_message(raw)) : "";
    return llm_error(ErrorKind::protocol,
                     access.where(c) + ": response has no choices" + why + access.attempt_note(c),
                     Transient::yes);
  }
  const json& choice = (*ch)[0];
  if (auto f = choice.find("finish_reason"); f != choice.end() && f->is_string())
    r.finish_reason = f->get<std::string>();
  std::string provider_reasoning;
  if (auto msg = choice.find("message"); msg != choice.end() && msg->is_object()) {
    for (const char* k : {"reasoning_content", "reasoning"}) {
      if (auto rc = msg->find(k); rc != msg->end() && rc->is_string()) {
        provider_reasoning = rc->get<std::string>();
        break;
      }
    }
    if (auto ct = msg->find("content"); ct != msg->end()) {
      if (ct->is_string()) {
        r.content = ct->get<std::string>();
      } else if (ct->is_array()) {  // content parts: text, and thinking kept apart
        for (const auto& part : *ct) {
          if (!part.is_object()) continue;
          std::string type = part.value("type", "text");
          bool thinking = type == "thinking" || type == "reasoning";
          for (const char* k : {"text", "thinking"}) {
            auto t = part.find(k);
            if (t == part.end() || !t->is_string()) continue;
            std::string& into = thinking ? provider_reasoning : r.content;
            if (thinking && !into.empty()) into += "\n\n";
            into += t->get<std::string>();
            break;
          }
        }
      }
    }
  }
  SplitReply split = split_reasoning(r.content);
  r.reasoning = provider_reasoning;
  if (!split.reasoning.empty())
    r.reasoning += (r.reasoning.empty() ? "" : "\n\n") + split.reasoning;
  bool empty_after_reasoning =
      !r.reasoning.empty() && split.answer.find_first_not_of(" \t\r\n") == std::string::npos;
  if (r.finish_reason == "length" || empty_after_reasoning) {
    std::string why =
        r.finish_reason == "length"
            ? "the reply was cut at max_tokens (finish_reason \"length\""
            : "no answer after the reasoning (finish_reason \"" + r.finish_reason + "\"";
    return llm_error(ErrorKind::truncated,
                     access.where(c) + ": " + why + ", max_tokens " +
                         (r.max_tokens > 0 ? std::to_string(r.max_tokens) : "unset") + ", " +
                         std::to_string(r.completion_tokens) + " completion tokens, " +
                         std::to_string(r.reasoning_tokens) + " of them reasoning)" +
                         access.attempt_note(c),
                     Transient::no);
  }
  if (c.req.expect_json || c.req.response_schema) {
    auto parsed = extract_answer(r.content, c.req.response_schema);
    if (!parsed.ok()) {
      return llm_error(ErrorKind::parse,
                       access.where(c) + ": " + parsed.error().message + access.attempt_note(c),
                       Transient::no);
    }
    r.parsed = std::move(parsed->value);
    r.mended = std::move(parsed->mended);
  }
  return std::nullopt;
}

}  // namespace kforge::llm
