// Batch mode's JSON Lines: the files and batches endpoints for a chat URL, the input file's
// lines written to disk, and the provider's output and error files read back line by line into
// one outcome per request (answered, failed with the line's error, or missing from a batch that
// ended without it).

#include "batch_file.hpp"

#include <fstream>

#include "kforge/llm/result_line.hpp"
#include "text.hpp"

namespace kforge::llm {

using json = nlohmann::json;

namespace {

// A JSON value as text: a string as it is, anything else as JSON.
std::string text_of(const json& v) {
  return v.is_string() ? v.get<std::string>()
                       : v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The message of an error object, however deep in {"error": ...} it is nested.
std::string message_of(const json& e, int depth) {
  if (e.is_string()) return e.get<std::string>();
  if (!e.is_object() || depth > 8) return e.is_null() ? std::string() : text_of(e);
  if (e.contains("message") && !e["message"].is_null()) return text_of(e["message"]);
  if (e.contains("error") && !e["error"].is_null()) return message_of(e["error"], depth + 1);
  return "";
}

// The code of an error object (the innermost one that has one), "" when none has.
std::string code_of(const json& e, int depth) {
  if (!e.is_object() || depth > 8) return "";
  if (e.contains("code") && !e["code"].is_null()) return text_of(e["code"]);
  if (e.contains("error")) return code_of(e["error"], depth + 1);
  return "";
}

}  // namespace

std::string result_line_error(const json& error) {
  if (error.is_null()) return "";
  if (!error.is_object()) return text_of(error);
  std::string code = code_of(error, 0);
  return (code.empty() ? std::string("error") : code) + ": " + message_of(error, 0);
}

std::pair<std::string, std::string> batch_api_base(const std::string& chat_url) {
  std::string url = chat_url;
  std::string query;
  if (auto q = url.find('?'); q != std::string::npos) {
    query = url.substr(q);
    url = url.substr(0, q);
  }
  if (auto d = url.find("/deployments/"); d != std::string::npos) return {url.substr(0, d), query};
  const std::string tail = "/chat/completions";
  if (url.size() >= tail.size() && url.compare(url.size() - tail.size(), tail.size(), tail) == 0)
    url.resize(url.size() - tail.size());
  return {url, query};
}

std::string input_line(const std::string& sha, const std::string& endpoint,
                       const std::string& body) {
  return R"({"custom_id":")" + sha + R"(","method":"POST","url":")" + endpoint + R"(","body":)" +
         body + "}\n";
}

bool terminal(const std::string& status) {
  return status == "completed" || status == "failed" || status == "expired" ||
         status == "cancelled";
}

std::size_t input_line_size(const std::string& sha, const std::string& endpoint,
                            std::size_t body_bytes) {
  return input_line(sha, endpoint, "").size() + body_bytes;
}

Result<std::size_t> write_input_file(
    const std::string& path, const std::string& endpoint, std::span<const Pending> lines,
    const std::function<Result<std::string>(const Pending&)>& body_of) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return fail("io", path + ": cannot be written (the batch input file)");
  std::size_t bytes = 0;
  for (const Pending& p : lines) {
    KF_TRY(std::string body, body_of(p));
    std::string line = input_line(p.sha, endpoint, body);
    out.write(line.data(), static_cast<std::streamsize>(line.size()));
    bytes += line.size();
  }
  out.flush();
  if (!out) return fail("io", path + ": cannot be written (the batch input file)");
  return bytes;
}

bool for_each_result_line(const std::string& path, const std::string& file_id, std::string* why,
                          const std::function<void(const json&)>& each) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "file " + file_id + ": the download at " + path + " cannot be read";
    return false;
  }
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("custom_id") ||
        !j["custom_id"].is_string()) {
      *why = "file " + file_id + " line " + std::to_string(n) +
             ": not a result line (the file arrived cut or in parts)";
      return false;
    }
    each(j);
  }
  // A last line without its newline may be whole; parsing said so.
  return true;
}

std::string batch_errors(const json& j) {
  std::string batch_error;
  if (j.contains("errors") && j["errors"].is_object() && j["errors"].contains("data") &&
      j["errors"]["data"].is_array()) {
    for (const auto& e : j["errors"]["data"])
      if (e.is_object()) batch_error += (batch_error.empty() ? "" : "; ") + result_line_error(e);
  }
  return batch_error;
}

LineOutcome line_outcome(const json& l, const std::string& batch_key, const std::string& batch_id,
                         const std::function<std::string(std::string)>& redact) {
  LineOutcome o;
  o.sha = l["custom_id"].get<std::string>();
  o.batch_key = batch_key;
  const json& resp = l.contains("response") ? l["response"] : json();
  if (resp.is_object()) {
    o.http_status = resp.contains("status_code") && resp["status_code"].is_number_integer()
                        ? resp["status_code"].get<int>()
                        : 0;
    if (resp.contains("body") && !resp["body"].is_null())  // vLLM: null on a failed line
      o.body = resp["body"].is_string()
                   ? resp["body"].get<std::string>()
                   : resp["body"].dump(-1, ' ', false, json::error_handler_t::replace);
  }
  o.answered = o.http_status == 200;
  if (!o.answered) {
    std::string why;
    if (l.contains("error") && l["error"].is_object())
      why = result_line_error(l["error"]);
    else if (l.contains("error") && l["error"].is_string())  // vllm run-batch's error text
      why = "HTTP " + std::to_string(o.http_status) + ": " +
            excerpt(l["error"].get<std::string>(), 200);
    else
      why = "HTTP " + std::to_string(o.http_status) + ": " + redact(excerpt(o.body, 200));
    o.error = "batch " + batch_id + " line " + o.sha.substr(0, 12) + ": " + redact(why);
  }
  return o;
}

LineOutcome missing_outcome(const std::string& sha, const std::string& batch_key,
                            const std::string& batch_id, const std::string& status,
                            const std::string& batch_error,
                            const std::function<std::string(std::string)>& redact) {
  LineOutcome o;
  o.sha = sha;
  o.batch_key = batch_key;
  o.error = "batch " + batch_id + " ended " + status + " without this request" +
            (batch_error.empty() ? "" : " (" + redact(batch_error) + ")");
  return o;
}

}  // namespace kforge::llm
