#pragma once
// The Batch API's input lines (the OpenAI Batch API's and vllm run-batch's JSON Lines): one
// request each, under its custom_id. Batch mode writes its input files with them, and so does
// kforge batch export.

#include <string>

namespace kforge::llm {

// The chat completions path a line names when the chat URL has no query (Azure's, with one,
// is "/chat/completions").
inline constexpr const char* kBatchChatEndpoint = "/v1/chat/completions";

// One input line: the request body POSTed to endpoint, under custom_id `sha` (the request's
// identity); ends in "\n".
std::string input_line(const std::string& sha, const std::string& endpoint,
                       const std::string& body);

}  // namespace kforge::llm
