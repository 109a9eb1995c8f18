#pragma once
// The closed set of error kinds the LLM client delivers and the pipeline decides on.
//
// Error::kind stays a string because it is stored (stage_outputs.error_kind, llm_calls.error_kind,
// events); to_string() gives exactly the stored names, and kind_of() reads one back, so code
// compares enum values and a typo does not compile.

#include <string>

#include "kforge/core/error.hpp"

namespace kforge::llm {

enum class ErrorKind {
  http,        // a non-retryable status, or retries exhausted on a retryable one
  auth,        // 401/403: the key or its rights; halts the queue
  not_found,   // 404 / unknown model; halts the queue
  halted,      // not sent because another request got auth/not_found
  too_large,   // the prompt is above max_prompt_tokens; nothing sent
  rate_limit,  // 429s exhausted, or a Retry-After beyond the cap
  timeout,     // the request timeout, on the last attempt
  connect,     // cannot connect / reset, on the last attempt
  deadline,    // total_deadline_ms passed before the next attempt
  protocol,    // a 2xx that is not a chat completion
  truncated,   // cut at max_tokens (or nothing after the reasoning), at the retry limit too
  parse,       // no usable answer object in the reply
  cancelled,   // the client shut down first
  sqlite,      // the audit row could not be written
  usage,       // misuse of the client (call() from a callback)
  config,      // bad configuration (a batch the provider refused as invalid); halts the run
  other        // a kind from elsewhere (kind_of() of an unknown string)
};

// The stored name, e.g. "rate_limit".
const char* to_string(ErrorKind k);
// The kind of e; "length" (what earlier versions stored for a cut answer) reads as truncated.
ErrorKind kind_of(const Error& e);
ErrorKind kind_of(const std::string& stored);

// An Error of kind k.
Error llm_error(ErrorKind k, std::string message, Transient t);

// Errors about the run, not the request (auth, not_found, halted, and config: a batch the
// provider refused as invalid, e.g. a completion window it does not accept): no job is at fault.
bool is_run_level(ErrorKind k);

}  // namespace kforge::llm
