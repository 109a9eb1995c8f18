// A batch at the provider, one step at a time on the runner's thread (blocking libcurl): upload
// the input file (/files; after a restart, first look for it by name), create the batch
// (/batches; after a restart or a lost answer, first look for it by metadata.kforge_batch), poll
// it (cancelling it past kforge's deadline, llm.batch.deadline), download its output and error
// files, check the lines read against the batch's request_counts (a short file is read again),
// record each line's outcome and delete the files. A failed step is tried again with backoff;
// one the provider refuses abandons the batch, its lines failing (as a run-level error when the
// refusal would come again for every batch: an invalid request, a refused key).

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "batch_file.hpp"
#include "batch_impl.hpp"
#include "text.hpp"

namespace kforge::llm {

using json = nlohmann::json;

namespace {

std::size_t append(char* p, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(p, size * n);
  return size * n;
}

std::size_t write_file(char* p, std::size_t size, std::size_t n, void* user) {
  return std::fwrite(p, size, n, static_cast<FILE*>(user)) * size;
}

// What a refused upload or creation says about the run: a request the provider finds invalid
// (400, 422: a completion window it does not accept, a file above its limits) or a refused key
// (401, 403) would be refused again for every batch, so its lines are not resubmitted and the
// run pauses; "" for the rest (their lines go into the next batch).
std::string refusal_kind(long status) {
  if (status == 400 || status == 422) return "config";
  if (status == 401 || status == 403) return "auth";
  return "";
}

}  // namespace

Http BatchRunner::Impl::request(const std::string& method, const std::string& path,
                                const std::string& body, curl_mime* mime, const std::string& params,
                                const std::string& sink) {
  if (easy_ == nullptr) easy_ = curl_easy_init();
  Http h;
  FILE* out = nullptr;
  if (!sink.empty()) {
    out = std::fopen(sink.c_str(), "wb");
    if (out == nullptr) {
      h.error = sink + ": cannot be written";
      return h;
    }
  }
  std::string url = base_ + path + query_;
  if (!params.empty()) url += (query_.empty() ? "?" : "&") + params;
  curl_easy_reset(easy_);
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/json");
  for (curl_slist* s = headers_; s != nullptr; s = s->next)
    headers = curl_slist_append(headers, s->data);
  if (method == "POST" && mime == nullptr)
    headers = curl_slist_append(headers, "Content-Type: application/json");
  if (method == "DELETE") curl_easy_setopt(easy_, CURLOPT_CUSTOMREQUEST, "DELETE");
  curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy_, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o_.cfg.connect_timeout_ms));
  curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.cfg.request_timeout_ms));
  if (out != nullptr) {
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, write_file);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, out);
  } else {
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, append);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &h.body);
  }
  if (mime != nullptr) {
    curl_easy_setopt(easy_, CURLOPT_MIMEPOST, mime);
  } else if (method == "POST") {
    curl_easy_setopt(easy_, CURLOPT_POST, 1L);
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  CURLcode rc = curl_easy_perform(easy_);
  curl_slist_free_all(headers);
  bool written = out == nullptr || std::fclose(out) == 0;
  if (rc != CURLE_OK || !written) {
    h.error = rc != CURLE_OK ? curl_easy_strerror(rc) : sink + ": cannot be written";
    h.status = 0;
    return h;
  }
  curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &h.status);
  if (out != nullptr && !h.ok()) {
    // The provider's error message, for describe().
    std::ifstream in(sink, std::ios::binary);
    h.body.resize(1024);
    in.read(h.body.data(), static_cast<std::streamsize>(h.body.size()));
    h.body.resize(static_cast<std::size_t>(in.gcount()));
  }
  return h;
}

std::string BatchRunner::Impl::describe(const std::string& what, const Http& h) const {
  std::string m = what + " " + base_ + ": ";
  if (h.status == 0) return m + h.error;
  std::string why = h.body;
  json j = json::parse(h.body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object())
    why = j["error"].value("message", h.body);
  return m + "HTTP " + std::to_string(h.status) + ": " + redact(excerpt(why, 200));
}

CURL* BatchRunner::Impl::easy() {
  if (easy_ == nullptr) easy_ = curl_easy_init();
  return easy_;
}

void BatchRunner::Impl::retry_later(Open& b, std::int64_t now, const std::string& why) {
  ++b.errors;
  std::int64_t wait = std::min<std::int64_t>(o_.cfg.batch.poll_ms,
                                             o_.cfg.backoff_base_ms << std::min(b.errors, 16));
  b.next_ms = now + std::max<std::int64_t>(wait, kBatchSliceMs);
  spdlog::warn("llm batch {}: {}; trying again in {} ms", b.key, why, b.next_ms - now);
}

bool BatchRunner::Impl::upload(Open& b, std::int64_t now) {
  std::string filename = "kforge-" + b.key + ".jsonl";
  if (b.recovered) {
    // An earlier process may have uploaded it without recording the answer.
    Http l = request("GET", "/files", "", nullptr, "purpose=batch");
    if (!l.ok()) {
      retry_later(b, now, describe("listing files at", l));
      return false;
    }
    json j = json::parse(l.body, nullptr, false);
    if (!j.is_discarded() && j.contains("data") && j["data"].is_array())
      for (const auto& f : j["data"])
        if (f.is_object() && f.value("filename", "") == filename && f.contains("id")) {
          spdlog::info("llm batch {}: input file {} found at the provider", b.key,
                       f["id"].get<std::string>());
          return uploaded(b, f["id"].get<std::string>(), now);
        }
    b.recovered = false;
  }
  curl_mime* mime = curl_mime_init(easy());
  curl_mimepart* part = curl_mime_addpart(mime);
  curl_mime_name(part, "purpose");
  curl_mime_data(part, "batch", CURL_ZERO_TERMINATED);
  part = curl_mime_addpart(mime);
  curl_mime_name(part, "file");
  curl_mime_filename(part, filename.c_str());
  // Streamed from disk: the file is never in memory.
  if (curl_mime_filedata(part, b.input_path.c_str()) != CURLE_OK) {
    curl_mime_free(mime);
    retry_later(b, now, b.input_path + ": cannot be read (the batch input file)");
    return false;
  }
  curl_mime_filename(part, filename.c_str());
  curl_mime_type(part, "application/jsonl");
  Http h = request("POST", "/files", "", mime);
  curl_mime_free(mime);
  if (!h.ok()) {
    if (h.retryable()) {
      b.recovered = true;  // the answer may be lost while the file arrived
      retry_later(b, now, describe("uploading the input file to", h));
      return false;
    }
    return abandon(b, describe("uploading the input file to", h), now, refusal_kind(h.status));
  }
  json j = json::parse(h.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("id") || !j["id"].is_string()) {
    b.recovered = true;
    retry_later(b, now, "the upload's answer has no file id: " + redact(excerpt(h.body, 200)));
    return false;
  }
  return uploaded(b, j["id"].get<std::string>(), now);
}

bool BatchRunner::Impl::uploaded(Open& b, const std::string& file_id, std::int64_t now) {
  auto st = ledger_.uploaded(b.id, file_id, now);
  if (!st.ok()) {
    retry_later(b, now, "cannot record the upload: " + st.error().message);
    b.recovered = true;
    return false;
  }
  b.state = "uploaded";
  b.file_id = file_id;
  std::error_code ec;
  std::filesystem::remove(b.input_path, ec);
  b.errors = 0;
  b.next_ms = now;
  return false;
}

bool BatchRunner::Impl::create(Open& b, std::int64_t now) {
  if (b.recovered) {
    // An earlier process (or a create whose answer was lost) may have created it: look for
    // kforge's key in the metadata of the provider's batches before creating one.
    std::string after;
    for (int page = 0; page < 100; ++page) {
      Http l = request("GET", "/batches", "", nullptr,
                       "limit=100" + (after.empty() ? "" : "&after=" + after));
      if (!l.ok()) {
        retry_later(b, now, describe("listing batches at", l));
        return false;
      }
      json j = json::parse(l.body, nullptr, false);
      if (j.is_discarded() || !j.contains("data") || !j["data"].is_array()) break;
      for (const auto& x : j["data"]) {
        if (!x.is_object() || !x.contains("metadata") || !x["metadata"].is_object()) continue;
        if (x["metadata"].value("kforge_batch", "") != b.key) continue;
        spdlog::info("llm batch {}: found at the provider as {} (created before a restart)", b.key,
                     x.value("id", ""));
        {
          std::lock_guard lk(gauge_mu_);
          ++gauges_.adopted;
        }
        return submitted(b, x, now);
      }
      if (!j.value("has_more", false) || j["data"].empty()) break;
      after = j["data"].back().value("id", "");
    }
    b.recovered = false;
  }
  json body = {{"input_file_id", b.file_id},
               {"endpoint", endpoint_},
               {"completion_window", o_.cfg.batch.completion_window},
               {"metadata", {{"kforge_batch", b.key}, {"kforge_model", o_.cfg.model}}}};
  Http h = request("POST", "/batches", body.dump());
  if (!h.ok()) {
    if (h.retryable()) {
      b.recovered = true;  // it may exist although the answer was lost
      retry_later(b, now, describe("creating the batch at", h));
      return false;
    }
    return abandon(b, describe("creating the batch at", h), now, refusal_kind(h.status));
  }
  json j = json::parse(h.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("id")) {
    b.recovered = true;
    retry_later(b, now, "the create's answer has no batch id: " + redact(excerpt(h.body, 200)));
    return false;
  }
  return submitted(b, j, now);
}

bool BatchRunner::Impl::submitted(Open& b, const json& j, std::int64_t now) {
  std::string id = j.value("id", "");
  std::string status = j.value("status", "validating");
  Status st = ledger_.submitted(b.id, id, status, now);
  if (!st.ok()) {
    b.recovered = true;
    retry_later(b, now, "cannot record the batch id: " + st.error().message);
    return false;
  }
  spdlog::info("llm batch {}: created as {} ({} requests)", b.key, id, b.shas.size());
  b.state = "submitted";
  b.batch_id = id;
  b.provider_status = status;
  b.submitted_ms = b.submitted_ms > 0 ? b.submitted_ms : now;
  b.errors = 0;
  b.next_ms = now + o_.cfg.batch.poll_ms;
  return false;
}

bool BatchRunner::Impl::poll(Open& b, std::int64_t now) {
  Http h = request("GET", "/batches/" + b.batch_id, "");
  json j = h.ok() ? json::parse(h.body, nullptr, false) : json();
  if (!h.ok() || j.is_discarded() || !j.is_object()) {
    std::string why = h.ok() ? "unreadable answer: " + redact(excerpt(h.body, 200))
                             : describe("polling batch " + b.batch_id + " at", h);
    ledger_.poll_error(b.id, why, now);
    {
      std::lock_guard lk(gauge_mu_);
      ++gauges_.poll_errors;
    }
    if (h.status == 404) return abandon(b, why, now);
    retry_later(b, now, why);
    return false;
  }
  b.errors = 0;
  // A provider's fields of another type than documented are read as absent, never thrown on.
  std::string status =
      j.contains("status") && j["status"].is_string() ? j["status"].get<std::string>() : "";
  std::int64_t completed = 0, failed = 0;
  if (j.contains("request_counts") && j["request_counts"].is_object()) {
    const json& rc = j["request_counts"];
    auto count = [&](const char* k) {
      return rc.contains(k) && rc[k].is_number_integer() ? rc[k].get<std::int64_t>() : 0;
    };
    completed = count("completed");
    failed = count("failed");
  }
  if (status != b.provider_status || completed != b.completed || failed != b.failed) {
    ledger_.polled(b.id, status, completed, failed, now);
    b.provider_status = status;
    b.completed = completed;
    b.failed = failed;
  }
  if (terminal(status)) return collect(b, j, now);
  b.next_ms = now + o_.cfg.batch.poll_ms;
  if (!b.cancel_sent && b.submitted_ms > 0 && now - b.submitted_ms > o_.cfg.batch.deadline_ms) {
    // Still running past kforge's deadline: reported, cancelled, and its unfinished lines go
    // into the next batch once the provider has ended it.
    std::string why = "still " + status + " after its deadline (llm.batch.deadline " +
                      o_.cfg.batch.deadline + "); cancelling it, its unfinished " +
                      "requests go into the next batch";
    spdlog::warn("llm batch {} ({}): {}", b.key, b.batch_id, why);
    ledger_.note(b.id, why, now);
    Http c = request("POST", "/batches/" + b.batch_id + "/cancel", "{}");
    if (c.ok()) {
      b.cancel_sent = true;
    } else {
      spdlog::warn("llm batch {}: {}", b.key, describe("cancelling at", c));
    }
  }
  return false;
}

// Downloads a result file to path; false (and why) when it did not arrive.
bool BatchRunner::Impl::download(const std::string& file_id, const std::string& path,
                                 std::string* why) {
  Http h = request("GET", "/files/" + file_id + "/content", "", nullptr, "", path);
  if (!h.ok()) *why = describe("downloading file " + file_id + " from", h);
  return h.ok();
}

std::string BatchRunner::Impl::spool(const Open& b, const std::string& what) const {
  return spool_dir_ + "/kforge-" + b.key + (what == "input" ? "" : "." + what) + ".jsonl";
}

void BatchRunner::Impl::remove_spool(const Open& b) {
  std::error_code ec;
  for (const char* what : {"input", "output", "error"}) std::filesystem::remove(spool(b, what), ec);
}

// Records a part of a batch's outcomes (one transaction) and, with HandOver::now, hands its
// answers over at once, so the runner holds at most llm.batch.lines_in_memory of them (the last
// part goes once the batch is recorded done and its files deleted).
bool BatchRunner::Impl::record_lines(Open& b, std::vector<LineOutcome>& chunk,
                                     const std::string& run_level, std::int64_t now,
                                     HandOver hand) {
  if (chunk.empty()) return true;
  for (auto& o : chunk) {
    auto c = b.calls.find(o.sha);
    o.call = c == b.calls.end() ? o.sha : c->second;
    if (!o.answered) o.run_level = run_level;
  }
  // Each outcome goes back with its request, read from the store (the client holds none).
  auto st = ledger_.requests(b.id, chunk);
  if (!st.ok()) {
    retry_later(b, now, "cannot read the requests back: " + st.error().message);
    return false;
  }
  auto redactor = [this](std::string s) { return redact(std::move(s)); };
  st = ledger_.line_results(b.id, chunk, redactor);
  if (!st.ok()) {
    retry_later(b, now, "cannot record the results: " + st.error().message);
    return false;
  }
  int answered = 0, failed = 0;
  for (auto& o : chunk) {
    ++(o.answered ? answered : failed);
    b.shas.erase(o.sha);
    in_batch_.erase(o.sha);
    if (!waiting_.count(o.sha)) continue;  // asked for again after a restart, if ever
    o.batch = b.id;  // marked applied with its llm_calls row (LineOutcome::batch)
    ready_.push_back(std::move(o));
  }
  chunk.clear();
  b.answered += answered;
  b.failed_lines += failed;
  {
    std::lock_guard lk(gauge_mu_);
    gauges_.lines_answered += static_cast<std::uint64_t>(answered);
    gauges_.lines_failed += static_cast<std::uint64_t>(failed);
  }
  if (hand == HandOver::now)
    hand_over();  // else the loop hands them over once the batch is recorded done
  return true;
}

bool BatchRunner::Impl::collect(Open& b, const json& j, std::int64_t now,
                                const std::string& run_level) {
  std::string out_id =
      j.value("output_file_id", json()).is_string() ? j["output_file_id"].get<std::string>() : "";
  std::string err_id =
      j.value("error_file_id", json()).is_string() ? j["error_file_id"].get<std::string>() : "";
  // Downloaded to disk, then read line by line: first counted (each line must be a result
  // line), then recorded a part at a time.
  std::vector<std::pair<std::string, std::string>> files;  // file id, path
  if (!out_id.empty()) files.emplace_back(out_id, spool(b, "output"));
  if (!err_id.empty()) files.emplace_back(err_id, spool(b, "error"));
  std::size_t counted[2] = {0, 0};
  for (const auto& [id, path] : files) {
    std::string why;
    std::size_t n = 0;
    if (!download(id, path, &why) ||
        !for_each_result_line(path, id, &why, [&](const json&) { ++n; })) {
      retry_later(b, now, why);
      return false;
    }
    counted[id == out_id ? 0 : 1] = n;
  }
  if (auto why = shortfall(j, out_id, err_id, counted[0], counted[1])) {
    // Cut at a line boundary (no Content-Length, or a proxy): read again, never resubmitted
    // while the answers may be at the provider.
    if (++b.short_reads == kShortReadsNoted) {
      spdlog::error("llm batch {} ({}): {}; reading them again every poll", b.key, b.batch_id,
                    *why);
      ledger_.note(b.id, *why, now);
    }
    retry_later(b, now, *why);
    return false;
  }
  std::string status = j.value("status", "");
  std::string batch_error = batch_errors(j);
  auto redactor = [this](std::string s) { return redact(std::move(s)); };
  const auto limit = static_cast<std::size_t>(std::max(1, o_.cfg.batch.lines_in_memory));
  std::vector<LineOutcome> chunk;
  std::set<std::string> seen;
  bool ok = true;
  for (const auto& [id, path] : files) {
    std::string why;
    bool read = for_each_result_line(path, id, &why, [&](const json& l) {
      std::string sha = l["custom_id"].get<std::string>();
      if (!ok || !b.shas.count(sha) || !seen.insert(sha).second) return;
      chunk.push_back(line_outcome(l, b.key, b.batch_id, redactor));
      if (chunk.size() >= limit) ok = record_lines(b, chunk, run_level, now, HandOver::now);
    });
    if (!ok) return false;
    if (!read) {
      retry_later(b, now, why);
      return false;
    }
  }
  // The requests the files did not answer: missing from a batch that ended without them.
  std::vector<std::string> missing;
  for (const auto& sha : b.shas)
    if (!seen.count(sha)) missing.push_back(sha);
  for (const auto& sha : missing) {
    chunk.push_back(missing_outcome(sha, b.key, b.batch_id, status, batch_error, redactor));
    if (chunk.size() >= limit && !record_lines(b, chunk, run_level, now, HandOver::now))
      return false;
  }
  if (!record_lines(b, chunk, run_level, now, HandOver::with_last)) return false;
  auto st = ledger_.done(b.id, status, out_id, err_id, batch_error, b.answered, b.failed_lines, now,
                         redactor);
  if (!st.ok()) {
    retry_later(b, now, "cannot record the batch's end: " + st.error().message);
    return false;
  }
  spdlog::info("llm batch {} ({}): {}; {} answered, {} failed", b.key, b.batch_id, status,
               b.answered, b.failed_lines);
  remove_spool(b);
  if (!o_.cfg.batch.keep_files) delete_files(b, {b.file_id, out_id, err_id}, now);
  return true;
}

// The lines read against the batch's request_counts: why they fall short, if they do.
std::optional<std::string> BatchRunner::Impl::shortfall(const json& j, const std::string& out_id,
                                                        const std::string& err_id,
                                                        std::size_t out_lines,
                                                        std::size_t err_lines) const {
  if (!j.contains("request_counts") || !j["request_counts"].is_object()) return std::nullopt;
  const json& rc = j["request_counts"];
  auto completed = static_cast<std::size_t>(std::max<std::int64_t>(
      0, rc.value("completed", json(0)).is_number_integer() ? rc["completed"].get<std::int64_t>()
                                                            : 0));
  auto failed = static_cast<std::size_t>(std::max<std::int64_t>(
      0, rc.value("failed", json(0)).is_number_integer() ? rc["failed"].get<std::int64_t>() : 0));
  if (out_lines >= completed && err_lines >= failed) return std::nullopt;
  return "short result files: output file " + (out_id.empty() ? "(none)" : out_id) + " held " +
         std::to_string(out_lines) + " of the " + std::to_string(completed) +
         " completed lines, error file " + (err_id.empty() ? "(none)" : err_id) + " " +
         std::to_string(err_lines) + " of the " + std::to_string(failed) +
         " failed (the batch's request_counts)";
}

// Deletes the batch's files at the provider once its lines are recorded (best effort: a file
// that cannot be deleted is logged and left).
void BatchRunner::Impl::delete_files(Open& b, const std::vector<std::string>& ids,
                                     std::int64_t now) {
  bool all = true;
  for (const auto& id : ids) {
    if (id.empty()) continue;
    Http h = request("DELETE", "/files/" + id, "");
    if (!h.ok() && h.status != 404) {
      all = false;
      spdlog::warn("llm batch {}: {}", b.key, describe("deleting file " + id + " at", h));
    }
  }
  if (all) ledger_.files_deleted(b.id, now);
}

// A batch that cannot go on (the provider refused its file or its creation): its lines fail.
bool BatchRunner::Impl::abandon(Open& b, const std::string& why, std::int64_t now,
                                const std::string& run_level) {
  spdlog::error("llm batch {}: {}{}", b.key, why,
                run_level.empty() ? "" : "; its requests are not resubmitted (the run pauses)");
  json j = {{"status", "failed"},
            {"errors", {{"data", json::array({{{"code", "kforge"}, {"message", why}}})}}}};
  if (b.batch_id.empty()) b.batch_id = "(none)";
  return collect(b, j, now, run_level);
}

}  // namespace kforge::llm
