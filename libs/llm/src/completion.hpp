#pragma once
// Internal: a chat completion body read into a ChatResponse: usage, the model, the finish
// reason, content and reasoning kept apart, a cut answer told apart, and the JSON answer
// extracted and checked against the request's schema (json.hpp).

#include <optional>
#include <string>

#include "kforge/core/result.hpp"
#include "kforge/llm/client.hpp"

namespace kforge::llm {

struct Call;
class ApiAccess;

// Reads the 2xx body raw (an answer from the wire, a batch, a result file or the store) for c
// into r (its request_sha256, raw_body redacted, http_status 200, attempts, max_tokens: the
// request's, else default_max_tokens, else 0). Returns the error when the reply is unusable:
// "protocol" (transient), "truncated" or "parse".
std::optional<Error> read_completion(const Call& c, const std::string& raw, const ApiAccess& access,
                                     std::optional<int> default_max_tokens, ChatResponse& r);

}  // namespace kforge::llm
