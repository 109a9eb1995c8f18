#include "batch_result_file.hpp"

#include <nlohmann/json.hpp>
#include <variant>

#include "kforge/llm/result_line.hpp"

namespace kforge::cli {
namespace {

using json = nlohmann::json;

// The error a failed result line gives: its error (a string, vLLM's, or {code, message}), else
// the body's error message, else its status.
std::string line_error(const json& j, int status) {
  std::string why;
  if (j.contains("error") && j["error"].is_string()) why = j["error"].get<std::string>();
  if (j.contains("error") && j["error"].is_object()) why = llm::result_line_error(j["error"]);
  const json& resp = j.contains("response") ? j["response"] : json();
  if (why.empty() && resp.is_object() && resp.contains("body") && resp["body"].is_object() &&
      resp["body"].contains("error"))
    why = llm::result_line_error(resp["body"]["error"]);
  std::string head = status > 0 ? "HTTP " + std::to_string(status) : std::string("failed");
  return why.empty() ? head : head + ": " + why.substr(0, 500);
}

// What one line is: not a result line (why), an answer (its body), or a failed line.
struct Answer {
  std::string body;
};
struct Bad {
  std::string why;
};
using Reading = std::variant<Bad, Answer, FailedLine>;

// Reads a line of a result file; `id` gets its custom_id. A failed line is a status other than
// 200, or no response and an error: its request stays queued.
Reading read_line(const std::string& line, std::string& id) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Bad{"not a JSON object"};
  if (!j.contains("custom_id") || !j["custom_id"].is_string() ||
      j["custom_id"].get<std::string>().empty())
    return Bad{"custom_id: expected a non-empty string"};
  id = j["custom_id"].get<std::string>();
  const json& resp = j.contains("response") ? j["response"] : json();
  bool has_error = j.contains("error") && !j["error"].is_null();
  if (resp.is_null()) {
    if (has_error) return FailedLine{0, line_error(j, 0)};
    return Bad{"response: missing (and no error given)"};
  }
  if (!resp.is_object()) return Bad{"response: expected an object"};
  if (!resp.contains("status_code") || !resp["status_code"].is_number_integer())
    return Bad{"response.status_code: expected an integer"};
  int status = resp["status_code"].get<int>();
  // The status first: vLLM writes a failed request's body as null.
  if (status != 200) return FailedLine{status, line_error(j, status)};
  if (!resp.contains("body") || !(resp["body"].is_object() || resp["body"].is_string()))
    return Bad{"response.body: expected an object (the chat completion)"};
  const json& body = resp["body"];
  if (body.is_object() && (!body.contains("choices") || !body["choices"].is_array()))
    return Bad{"response.body.choices: expected a list (a chat completion)"};
  return Answer{body.is_string() ? body.get<std::string>()
                                 : body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace

Result<std::unique_ptr<ResultFile>> ResultFile::open(const std::string& path,
                                                     std::vector<std::string>* errors) {
  std::unique_ptr<ResultFile> f(new ResultFile(path));
  f->in_.open(path, std::ios::binary);
  if (!f->in_) return fail("io", path + ": cannot be read");
  std::string line;
  int n = 0;
  for (std::streamoff at = f->in_.tellg(); std::getline(f->in_, line); at = f->in_.tellg()) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string at_line = path + ":" + std::to_string(n) + ": ";
    std::string id;
    Reading r = read_line(line, id);
    bool failed = std::holds_alternative<FailedLine>(r);
    if (!id.empty()) {
      if (auto [it, fresh] = f->index_.emplace(id, Where{at, n, failed}); !fresh) {
        errors->push_back(at_line + "custom_id " + id + " appears again (first at line " +
                          std::to_string(it->second.line) + ")");
        continue;
      }
    }
    if (const Bad* bad = std::get_if<Bad>(&r)) {
      errors->push_back(at_line + bad->why);
      continue;
    }
    if (!failed) ++f->answers_;
  }
  f->in_.clear();
  return f;
}

std::optional<std::string> ResultFile::line_of(const std::string& id, bool failed) {
  auto it = index_.find(id);
  if (it == index_.end() || it->second.failed != failed) return std::nullopt;
  std::lock_guard lk(mu_);
  in_.clear();
  in_.seekg(it->second.at);
  std::string line;
  if (!std::getline(in_, line)) return std::nullopt;
  return line;
}

std::optional<std::string> ResultFile::answer(const std::string& id) {
  auto line = line_of(id, false);
  if (!line) return std::nullopt;
  std::string read_id;
  Reading r = read_line(*line, read_id);
  line.reset();
  if (Answer* a = std::get_if<Answer>(&r); a != nullptr && read_id == id) return std::move(a->body);
  return std::nullopt;  // the file changed under the import
}

std::optional<FailedLine> ResultFile::failure(const std::string& id) {
  auto line = line_of(id, true);
  if (!line) return std::nullopt;
  std::string read_id;
  Reading r = read_line(*line, read_id);
  if (FailedLine* f = std::get_if<FailedLine>(&r); f != nullptr && read_id == id)
    return std::move(*f);
  return std::nullopt;
}

std::vector<std::string> ResultFile::ids(bool failed) const {
  std::vector<std::string> out;
  for (const auto& [id, where] : index_)
    if (where.failed == failed) out.push_back(id);
  return out;
}

}  // namespace kforge::cli
