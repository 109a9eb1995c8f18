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
                             const std::string& asker, int round);
// The call asks with max_tokens `next` from now on (a new body, so a new request).
void set_budget(Call& c, int next, const LlmConfig& ep, Meter& meter);
// Batch mode: the custom_id of the line that asks the call `call` again with max_tokens
// `max_tokens` after a cut answer. A new identity (the cut line keeps its own), the same for the
// same call and budget (a restart finds the line it sent); the line records the call it
// continues (llm_batch_lines.continues).
std::string continuation_identity(const std::string& call, int max_tokens);
// The custom_id of the call's batch line: its identity, or its continuation's once its budget
// was enlarged.
std::string line_identity(const Call& c, const LlmConfig& ep);

}  // namespace kforge::llm
