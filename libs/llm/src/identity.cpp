// Request identity: the chat completions URL, the canonical JSON body of a request and the
// SHA-256 that names it (the key for replay and the audit rows), and a new body when a cut answer
// is asked again with a larger budget.

#include "identity.hpp"

#include <nlohmann/json.hpp>

#include "call.hpp"
#include "kforge/core/sha256.hpp"
#include "usage.hpp"

namespace kforge::llm {

using json = nlohmann::json;

std::string chat_url(const LlmConfig& c) {
  std::string base = c.base_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (c.provider == Provider::azure) {
    std::string dep = c.azure_deployment.empty() ? c.model : c.azure_deployment;
    return base + "/openai/deployments/" + dep +
           "/chat/completions?api-version=" + c.azure_api_version;
  }
  return base + "/chat/completions";
}

std::string request_body(const LlmConfig& ep, const ChatRequest& req) {
  json body = json::object();
  if (ep.provider != Provider::azure) body["model"] = ep.model;
  json msgs = json::array();
  for (const auto& m : req.messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  body["messages"] = std::move(msgs);
  if (auto t = req.temperature ? req.temperature : ep.temperature) body["temperature"] = *t;
  if (ep.top_p) body["top_p"] = *ep.top_p;
  if (auto mt = req.max_tokens ? req.max_tokens : ep.max_tokens) body["max_tokens"] = *mt;
  if (ep.seed) body["seed"] = *ep.seed;
  bool wants_json = req.expect_json || req.response_schema.has_value();
  if (wants_json && ep.response_format != ResponseFormat::none) {
    if (ep.response_format == ResponseFormat::json_schema && req.response_schema) {
      body["response_format"] = {
          {"type", "json_schema"},
          {"json_schema", {{"name", req.schema_name}, {"schema", *req.response_schema}}}};
    } else {
      body["response_format"] = {{"type", "json_object"}};
    }
  }
  // Keys sorted: the same request always gives the same bytes. Invalid UTF-8 (crawled code
  // has some) becomes U+FFFD rather than an exception.
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string request_identity(const std::string& url, const std::string& body,
                             const std::string& asker, int round) {
  Sha256 h;
  h.update("kforge.llm.request.v1\n");
  if (round > 0) h.update("round " + std::to_string(round) + "\n");
  h.update(url);
  h.update("\n");
  h.update(body);
  if (!asker.empty()) {
    // After the body, so that an empty asker keeps the earlier hashes. The marker's text is
    // part of every stored hash: it stays "identity".
    h.update("\nidentity\n");
    h.update(asker);
  }
  return h.hex_digest();
}

void set_budget(Call& c, int next, const LlmConfig& ep, Meter& meter) {
  c.req.max_tokens = next;
  c.body = request_body(ep, c.req);
  ++c.enlargements;
  meter.enlarged();
}

std::string continuation_identity(const std::string& call, int max_tokens) {
  Sha256 h;
  h.update("kforge.llm.batch.continuation.v1\n");
  h.update(call);
  h.update("\nmax_tokens " + std::to_string(max_tokens));
  return h.hex_digest();
}

std::string line_identity(const Call& c, const LlmConfig& ep) {
  if (c.enlargements == 0) return c.sha;
  return continuation_identity(c.sha, c.req.max_tokens.value_or(ep.max_tokens.value_or(0)));
}

}  // namespace kforge::llm
