#include "batches.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <set>
#include <sstream>

namespace kforge::fake_llm {

using json = nlohmann::json;

namespace {

const std::set<std::string> kBatchKeys = {
    "latency_ms", "fault",      "times",   "fail_contains", "poll_errors",
    "parts",      "hold_after", "hold_ms", "hold_times",    "max_lines",
    "max_bytes",  "windows",    "cut",     "order",         "error_format"};
const std::set<std::string> kBatchFaults = {"failed_line", "expired",  "cancelled",
                                            "failed",      "poll_5xx", "parts"};
const std::set<std::string> kSteps = {"upload", "create", "poll", "content", "delete"};

std::int64_t now_s() {
  return static_cast<std::int64_t>(std::time(nullptr));
}

void send(httplib::Response& res, int status, const json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send(res, status, {{"error", {{"message", message}, {"type", "invalid_request_error"}}}});
}

// A line of the error file for a scripted failed line, in the shape of `format` (error_format):
// openai (a 500 with an error body), vllm (status 400, the error a string), vllm_numeric (the
// error's code a number) or vllm_nested (the error object nested in another). `id` numbers it.
std::string scripted_failed_line(const std::string& format, const std::string& cid,
                                 const std::string& rid, std::uint64_t id) {
  if (format == "vllm_numeric") {
    // Older vLLM: the error's code is a number.
    return json{{"id", "vllm-" + std::to_string(id)},
                {"custom_id", cid},
                {"response", {{"status_code", 400}, {"request_id", rid}, {"body", nullptr}}},
                {"error", {{"code", 400}, {"message", "scripted failed line"}}}}
        .dump();
  } else if (format == "vllm_nested") {
    // Newer vLLM: the error object nested in another.
    return json{
        {"id", "vllm-" + std::to_string(id)},
        {"custom_id", cid},
        {"response", {{"status_code", 400}, {"request_id", rid}, {"body", nullptr}}},
        {"error",
         {{"error",
           {{"message", "scripted failed line"}, {"type", "BadRequestError"}, {"code", 400}}}}}}
        .dump();
  } else if (format == "vllm") {
    // vllm run-batch's failed request: status 400, no body, the error as a string.
    return json{{"id", "vllm-" + std::to_string(id)},
                {"custom_id", cid},
                {"response", {{"status_code", 400}, {"request_id", rid}, {"body", nullptr}}},
                {"error", "scripted failed line"}}
        .dump();
  } else {
    return json{
        {"id", "batch_req_" + std::to_string(id)},
        {"custom_id", cid},
        {"response",
         {{"status_code", 500},
          {"request_id", rid},
          {"body", {{"error", {{"message", "scripted failed line"}, {"type", "server_error"}}}}}}},
        {"error", nullptr}}
        .dump();
  }
}

}  // namespace

Status check_batch_script(const json& b) {
  if (b.is_null()) return {};
  if (!b.is_object()) return fail("script", "batch: expected a mapping");
  for (const auto& [k, v] : b.items()) {
    if (!kBatchKeys.count(k)) {
      std::string all;
      for (const auto& n : kBatchKeys) all += (all.empty() ? "" : ", ") + n;
      return fail("script", "batch." + k + ": unknown key (known: " + all + ")");
    }
    if (k == "windows") {
      if (!v.is_array() || v.empty())
        return fail("script", "batch.windows: expected a list of completion windows");
      for (const auto& w : v)
        if (!w.is_string()) return fail("script", "batch.windows: expected strings");
    } else if (k == "fault" || k == "hold_after" || k == "fail_contains" || k == "cut" ||
               k == "order" || k == "error_format") {
      if (!v.is_string()) return fail("script", "batch." + k + ": expected a string");
    } else if (!v.is_number() || v.get<double>() < 0) {
      return fail("script", "batch." + k + ": expected a number >= 0");
    }
  }
  if (b.contains("fault") && !kBatchFaults.count(b["fault"].get<std::string>()))
    return fail("script", "batch.fault: '" + b["fault"].get<std::string>() +
                              "' is not one of failed_line, expired, cancelled, failed, "
                              "poll_5xx, parts");
  if (b.contains("cut") && b["cut"] != "mid_line" && b["cut"] != "line")
    return fail("script",
                "batch.cut: '" + b["cut"].get<std::string>() + "' is not one of mid_line, line");
  if (b.contains("order") && b["order"] != "shuffled" && b["order"] != "input")
    return fail("script", "batch.order: '" + b["order"].get<std::string>() +
                              "' is not one of shuffled, input");
  if (b.contains("error_format") && b["error_format"] != "openai" && b["error_format"] != "vllm" &&
      b["error_format"] != "vllm_numeric" && b["error_format"] != "vllm_nested")
    return fail("script", "batch.error_format: '" + b["error_format"].get<std::string>() +
                              "' is not one of openai, vllm, vllm_numeric, vllm_nested");
  if (b.contains("hold_after") && !kSteps.count(b["hold_after"].get<std::string>()))
    return fail("script", "batch.hold_after: '" + b["hold_after"].get<std::string>() +
                              "' is not one of upload, create, poll, content, delete");
  return {};
}

static json empty_batch_stats() {
  return {{"files", 0},          {"created", 0},
          {"lines", 0},          {"lines_by_custom_id", json::object()},
          {"polls", 0},          {"poll_errors", 0},
          {"lists", 0},          {"cancels", 0},
          {"downloads", 0},      {"cut_downloads", 0},
          {"holds", 0},          {"deleted_files", 0},
          {"refused_creates", 0}};
}

void FakeBatches::set_script(const json& batch, const std::string& require_key) {
  std::lock_guard lk(mu_);
  script_ = batch.is_object() ? batch : json::object();
  require_key_ = require_key;
  holds_done_.clear();
  content_reads_.clear();
  if (stats_.is_null()) stats_ = empty_batch_stats();
}

void FakeBatches::reset_stats() {
  std::lock_guard lk(mu_);
  stats_ = empty_batch_stats();
}

json FakeBatches::stats() const {
  std::lock_guard lk(mu_);
  json s = stats_;
  s["files_stored"] = files_.size();  // uploaded or written and not deleted
  return s;
}

void FakeBatches::bump(const std::string& k, std::int64_t n) {
  stats_[k] = stats_.value(k, std::int64_t{0}) + n;
}

void FakeBatches::hold(const std::string& step) {
  double ms = 0;
  {
    std::lock_guard lk(mu_);
    if (script_.value("hold_after", "") != step) return;
    int times = script_.value("hold_times", 1);
    if (holds_done_[step] >= times) return;
    ++holds_done_[step];
    bump("holds");
    ms = script_.value("hold_ms", 60'000.0);
  }
  pause_(ms);
}

bool FakeBatches::authorized(const httplib::Request& req, httplib::Response& res) {
  std::string need;
  {
    std::lock_guard lk(mu_);
    need = require_key_;
  }
  if (need.empty()) return true;
  std::string presented = req.get_header_value("api-key");
  std::string bearer = req.get_header_value("Authorization");
  if (bearer.rfind("Bearer ", 0) == 0) presented = bearer.substr(7);
  if (presented == need) return true;
  send_error(res, 401, "Incorrect API key provided");
  return false;
}

void FakeBatches::routes(httplib::Server& svr) {
  svr.Post("/v1/files", [this](const httplib::Request& q, httplib::Response& r) {
    if (authorized(q, r)) serve_upload(q, r);
  });
  svr.Get("/v1/files", [this](const httplib::Request& q, httplib::Response& r) {
    if (!authorized(q, r)) return;
    std::lock_guard lk(mu_);
    json data = json::array();
    std::string purpose = q.get_param_value("purpose");
    for (const auto& [id, f] : files_)
      if (purpose.empty() || f.purpose == purpose)
        data.push_back({{"id", f.id},
                        {"object", "file"},
                        {"bytes", f.content.size()},
                        {"created_at", f.created_at},
                        {"filename", f.filename},
                        {"purpose", f.purpose}});
    send(r, 200, {{"object", "list"}, {"data", data}, {"has_more", false}});
  });
  svr.Delete(R"(/v1/files/([^/]+))", [this](const httplib::Request& q, httplib::Response& r) {
    if (!authorized(q, r)) return;
    std::string id = q.matches[1];
    {
      std::lock_guard lk(mu_);
      if (files_.erase(id) == 0) {
        send_error(r, 404, "No such File object: " + id);
        return;
      }
      bump("deleted_files");
    }
    hold("delete");
    send(r, 200, {{"id", id}, {"object", "file"}, {"deleted", true}});
  });
  svr.Get(R"(/v1/files/([^/]+)/content)", [this](const httplib::Request& q, httplib::Response& r) {
    if (authorized(q, r)) serve_content(q.matches[1], r);
  });
  svr.Post("/v1/batches", [this](const httplib::Request& q, httplib::Response& r) {
    if (authorized(q, r)) serve_create(q, r);
  });
  svr.Get("/v1/batches", [this](const httplib::Request& q, httplib::Response& r) {
    if (authorized(q, r)) serve_list(q, r);
  });
  svr.Get(R"(/v1/batches/([^/]+))", [this](const httplib::Request& q, httplib::Response& r) {
    if (authorized(q, r)) serve_get(q.matches[1], r);
  });
  svr.Post(R"(/v1/batches/([^/]+)/cancel)",
           [this](const httplib::Request& q, httplib::Response& r) {
             if (authorized(q, r)) serve_cancel(q.matches[1], r);
           });
}

void FakeBatches::serve_upload(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_file("file")) {
    send_error(res, 400, "'file' is a required multipart field");
    return;
  }
  auto file = req.get_file_value("file");
  std::string purpose = req.has_file("purpose") ? req.get_file_value("purpose").content : "";
  if (purpose != "batch") {
    send_error(res, 400, "'purpose' must be 'batch'");
    return;
  }
  json out;
  {
    std::lock_guard lk(mu_);
    std::int64_t max_bytes = script_.value("max_bytes", std::int64_t{200'000'000});
    if (static_cast<std::int64_t>(file.content.size()) > max_bytes) {
      send_error(res, 400,
                 "file is " + std::to_string(file.content.size()) + " bytes, above the limit");
      return;
    }
    File f{"file-" + std::to_string(++next_), file.filename, purpose, file.content, now_s()};
    files_[f.id] = f;
    bump("files");
    out = {{"id", f.id},
           {"object", "file"},
           {"bytes", f.content.size()},
           {"created_at", f.created_at},
           {"filename", f.filename},
           {"purpose", f.purpose}};
  }
  hold("upload");
  send(res, 200, out);
}

void FakeBatches::serve_create(const httplib::Request& req, httplib::Response& res) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("input_file_id") ||
      !body["input_file_id"].is_string()) {
    send_error(res, 400, "'input_file_id' is required");
    return;
  }
  json out;
  {
    std::lock_guard lk(mu_);
    auto f = files_.find(body["input_file_id"].get<std::string>());
    if (f == files_.end()) {
      send_error(res, 404, "no such file: " + body["input_file_id"].get<std::string>());
      return;
    }
    // The completion windows the provider accepts (OpenAI: only "24h").
    json windows = script_.value("windows", json::array({"24h"}));
    json window = body.value("completion_window", json(nullptr));
    bool accepted = false;
    for (const auto& w : windows) accepted = accepted || w == window;
    if (!accepted) {
      bump("refused_creates");
      std::string all;
      for (const auto& w : windows) all += (all.empty() ? "'" : ", '") + w.get<std::string>() + "'";
      send_error(res, 400,
                 "Invalid value for 'completion_window': " + window.dump() +
                     ". Supported values are: " + all + ".");
      return;
    }
    Batch b;
    b.id = "batch_" + std::to_string(++next_);
    b.input_file_id = f->first;
    b.endpoint = body.value("endpoint", "/v1/chat/completions");
    b.window = window.get<std::string>();
    b.metadata = body.value("metadata", json(nullptr));
    b.created_at = now_s();
    b.started = std::chrono::steady_clock::now();
    b.index = order_.size();
    order_.push_back(b.id);
    batches_[b.id] = b;
    bump("created");
    out = to_json(b);
  }
  hold("create");
  send(res, 200, out);
}

std::string FakeBatches::fault_for(const Batch& b) const {
  if (!script_.contains("fault")) return "";
  if (script_.contains("times") && b.index >= script_["times"].get<std::size_t>()) return "";
  return script_["fault"].get<std::string>();
}

void FakeBatches::advance(Batch& b) {
  if (b.status == "validating") {
    // The input file is validated as a whole: a line that is not a request, or a custom_id
    // seen twice, fails the batch before any line runs (request_counts stay 0 until then).
    if (auto why = validate(b); !why.is_null()) {
      b.status = "failed";
      b.errors = {{"object", "list"}, {"data", json::array({why})}};
      return;
    }
    b.status = "in_progress";
  }
  if (b.status == "finalizing") {
    // The files were written at the poll before: the batch ends now.
    b.status = b.final_status;
    return;
  }
  if (b.status != "in_progress" && b.status != "cancelling") return;
  if (b.cancel_requested) {
    finish(b, "cancelled");
    return;
  }
  double latency = script_.value("latency_ms", 0.0);
  auto waited =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - b.started)
          .count();
  if (waited < latency) return;
  finish(b, fault_for(b));
}

json FakeBatches::validate(Batch& b) {
  const File& in = files_[b.input_file_id];
  std::istringstream s(in.content);
  std::string line;
  std::set<std::string> seen;
  int n = 0;
  b.total = 0;
  while (std::getline(s, line)) {
    ++n;
    if (line.empty()) continue;
    json l = json::parse(line, nullptr, false);
    std::string cid = l.is_object() ? l.value("custom_id", "") : "";
    if (!l.is_object() || cid.empty() || !l.contains("body") || !l["body"].is_object())
      return {{"code", "invalid_request"},
              {"message", "Line " + std::to_string(n) + " is not a valid request."},
              {"param", nullptr},
              {"line", n}};
    if (!seen.insert(cid).second)
      return {{"code", "duplicate_custom_id"},
              {"message", "The custom_id '" + cid + "' appears more than once in the file."},
              {"param", "custom_id"},
              {"line", n}};
    ++b.total;
  }
  return nullptr;
}

// Runs the lines (mu_ held). Lines past the middle of an expired or cancelled batch are not
// run; a failed batch runs none. A batch whose lines ran is `finalizing` until the next poll.
void FakeBatches::finish(Batch& b, const std::string& fault) {
  const File& in = files_[b.input_file_id];
  if (fault == "failed") {
    b.status = "failed";
    b.errors = {{"object", "list"},
                {"data", json::array({{{"code", "invalid_request"},
                                       {"message", "scripted failure of the whole batch"},
                                       {"param", nullptr},
                                       {"line", 1}}})}};
    b.failed = 0;
    return;
  }
  std::vector<std::string> out_lines, err_lines;
  if (b.total == 0) (void)validate(b);  // cancelled while validating
  std::istringstream s(in.content);
  std::string line;
  int n = 0;
  int half = (b.total + 1) / 2;
  std::string fail_contains = script_.value("fail_contains", "");
  bool failed_one = false;
  while (std::getline(s, line)) {
    if (line.empty()) continue;
    ++n;
    json l = json::parse(line, nullptr, false);
    std::string cid = l.is_object() ? l.value("custom_id", "") : "";
    std::string rid = "req_" + std::to_string(++next_);
    auto err_line = [&](const std::string& code, const std::string& message) {
      err_lines.push_back(json{{"id", "batch_req_" + std::to_string(++next_)},
                               {"custom_id", cid},
                               {"response", nullptr},
                               {"error", {{"code", code}, {"message", message}}}}
                              .dump());
      ++b.failed;
    };
    // validate() took the file: every line is a request, each custom_id once.
    if (!l.is_object() || !l.contains("body") || !l["body"].is_object()) continue;
    if ((fault == "expired" || fault == "cancelled") && n > half) {
      err_line(fault == "expired" ? "batch_expired" : "batch_cancelled",
               fault == "expired"
                   ? "This request could not be executed before the completion window expired."
                   : "This request was not executed: the batch was cancelled.");
      continue;
    }
    std::string text = l["body"].dump();
    bool fail_this = fault == "failed_line" && !failed_one &&
                     (fail_contains.empty() ? true : text.find(fail_contains) != std::string::npos);
    if (fail_this) {
      failed_one = fail_contains.empty();
      err_lines.push_back(
          scripted_failed_line(script_.value("error_format", "openai"), cid, rid, ++next_));
      ++b.failed;
      continue;
    }
    auto [status, body] = answer_(l["body"]);
    bump("lines");
    stats_["lines_by_custom_id"][cid] = stats_["lines_by_custom_id"].value(cid, 0) + 1;
    json resp_body = json::parse(body, nullptr, false);
    json entry = {{"id", "batch_req_" + std::to_string(++next_)},
                  {"custom_id", cid},
                  {"response",
                   {{"status_code", status},
                    {"request_id", rid},
                    {"body", resp_body.is_discarded() ? json(body) : resp_body}}},
                  {"error", nullptr}};
    if (status == 200) {
      out_lines.push_back(entry.dump(-1, ' ', false, json::error_handler_t::replace));
      ++b.completed;
    } else {
      err_lines.push_back(entry.dump(-1, ' ', false, json::error_handler_t::replace));
      ++b.failed;
    }
  }
  // The published API does not keep the input's order in the result files.
  auto join = [&](std::vector<std::string>& lines) {
    if (script_.value("order", "shuffled") == "shuffled") {
      std::mt19937_64 rng(std::hash<std::string>{}(b.id));
      std::shuffle(lines.begin(), lines.end(), rng);
    }
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  };
  std::string out = join(out_lines), err = join(err_lines);
  auto store = [&](const std::string& content, std::string& id) {
    if (content.empty()) return;
    File f{"file-" + std::to_string(++next_), b.id + "_output.jsonl", "batch_output", content,
           now_s()};
    id = f.id;
    files_[f.id] = f;
  };
  store(out, b.output_file_id);
  store(err, b.error_file_id);
  b.final_status = fault == "expired"     ? "expired"
                   : fault == "cancelled" ? "cancelled"
                                          : "completed";
  b.status = b.final_status == "completed" ? "finalizing" : b.final_status;
}

json FakeBatches::to_json(const Batch& b) {
  return {
      {"id", b.id},
      {"object", "batch"},
      {"endpoint", b.endpoint},
      {"errors", b.errors},
      {"input_file_id", b.input_file_id},
      {"completion_window", b.window},
      {"status", b.status},
      {"output_file_id", b.output_file_id.empty() || b.status == "finalizing"
                             ? json(nullptr)
                             : json(b.output_file_id)},
      {"error_file_id",
       b.error_file_id.empty() || b.status == "finalizing" ? json(nullptr) : json(b.error_file_id)},
      {"created_at", b.created_at},
      {"request_counts", {{"total", b.total}, {"completed", b.completed}, {"failed", b.failed}}},
      {"metadata", b.metadata}};
}

void FakeBatches::serve_get(const std::string& id, httplib::Response& res) {
  json out;
  {
    std::lock_guard lk(mu_);
    auto it = batches_.find(id);
    if (it == batches_.end()) {
      send_error(res, 404, "no such batch: " + id);
      return;
    }
    Batch& b = it->second;
    bump("polls");
    ++b.polls;
    if (fault_for(b) == "poll_5xx" && b.polls <= script_.value("poll_errors", 2)) {
      bump("poll_errors");
      res.status = 503;
      res.set_content(
          R"({"error": {"message": "scripted 503 on polling", "type": "server_error"}})",
          "application/json");
      return;
    }
    advance(b);
    out = to_json(b);
  }
  hold("poll");
  send(res, 200, out);
}

void FakeBatches::serve_list(const httplib::Request& req, httplib::Response& res) {
  std::lock_guard lk(mu_);
  bump("lists");
  std::size_t limit = 20;
  if (req.has_param("limit")) limit = std::stoul(req.get_param_value("limit"));
  std::string after = req.get_param_value("after");
  json data = json::array();
  bool started = after.empty();
  bool more = false;
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {  // newest first
    if (!started) {
      started = *it == after;
      continue;
    }
    if (data.size() == limit) {
      more = true;
      break;
    }
    data.push_back(to_json(batches_[*it]));
  }
  json out = {{"object", "list"}, {"data", data}, {"has_more", more}};
  if (!data.empty()) {
    out["first_id"] = data.front()["id"];
    out["last_id"] = data.back()["id"];
  }
  send(res, 200, out);
}

void FakeBatches::serve_cancel(const std::string& id, httplib::Response& res) {
  std::lock_guard lk(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end()) {
    send_error(res, 404, "no such batch: " + id);
    return;
  }
  bump("cancels");
  Batch& b = it->second;
  if (b.status == "validating" || b.status == "in_progress") {
    b.status = "cancelling";
    b.cancel_requested = true;
  }
  send(res, 200, to_json(b));
}

void FakeBatches::serve_content(const std::string& id, httplib::Response& res) {
  std::string content;
  bool cut = false;
  {
    std::lock_guard lk(mu_);
    auto it = files_.find(id);
    if (it == files_.end()) {
      send_error(res, 404, "no such file: " + id);
      return;
    }
    content = it->second.content;
    bump("downloads");
    // "parts": the first reads of an output file stop half-way through it, mid-line (or, with
    // cut: line, at the end of the line there: a file that reads whole, with lines missing).
    bool is_output = it->second.purpose == "batch_output";
    if (is_output && script_.value("fault", "") == "parts" &&
        content_reads_[id]++ < script_.value("parts", 1)) {
      std::size_t at = content.size() / 2 + 1;
      if (script_.value("cut", "mid_line") == "line") {
        std::size_t nl = content.rfind('\n', content.size() / 2);
        at = nl == std::string::npos ? 0 : nl + 1;
      }
      content = content.substr(0, at);
      cut = true;
      bump("cut_downloads");
    }
  }
  (void)cut;
  hold("content");
  res.status = 200;
  res.set_content(content, "application/jsonl");
}

}  // namespace kforge::fake_llm
