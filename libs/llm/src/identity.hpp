#pragma once
// Internal: a request's identity: the URL it goes to, the canonical body that is POSTed, and the
// SHA-256 that names it in the store (client.hpp, Client::request_sha256).

#include <string>

#include "kforge/llm/client.hpp"
#include "kforge/llm/config.hpp"

namespace kforge::llm {

struct Call;
class Meter;

// The chat completions URL for the endpoint (Azure: the deployment's, with its api-version).
std::string chat_url(const LlmConfig& c);
// The JSON body POSTed for req: keys sorted, so the same request always gives the same bytes.
std::string request_body(const LlmConfig& ep, const ChatRequest& req);
// The identity: SHA-256 of the URL and body, and of the round and the asker when given.
std::string request_identity(const std::string& url, const std::string& body,
                             const std::string& identity, int round);
// The call asks with max_tokens `next` from now on (a new body, so a new request).
void set_budget(Call& c, int next, const LlmConfig& ep, Meter& meter);

}  // namespace kforge::llm
