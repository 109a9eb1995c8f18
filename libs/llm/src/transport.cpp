// The client's transport over libcurl's multi interface: the headers every request carries,
// the easy handles (pooled, so kept-alive connections are reused), starting a transfer with the
// client's options, reading the transfers that ended, and the body and header callbacks that fill
// the Call (only the headers the client reads are kept).

#include "transport.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "call.hpp"
#include "kforge/llm/errors.hpp"

namespace kforge::llm {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::size_t on_body(char* p, std::size_t size, std::size_t n, void* user) {
  static_cast<Call*>(user)->resp.append(p, size * n);
  return size * n;
}

std::size_t on_header(char* p, std::size_t size, std::size_t n, void* user) {
  auto* c = static_cast<Call*>(user);
  std::string_view line(p, size * n);
  if (line.substr(0, 5) == "HTTP/") {
    c->headers.clear();  // a new response (after 100 Continue or a redirect)
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string_view::npos) return size * n;
  std::string name = lower(std::string(line.substr(0, colon)));
  if (name == "retry-after" || name == "retry-after-ms" || name == "content-type" ||
      name.rfind("x-ratelimit-", 0) == 0) {
    std::string_view v = line.substr(colon + 1);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' '))
      v.remove_suffix(1);
    c->headers[name] = std::string(v);
  }
  return size * n;
}

}  // namespace

std::string auth_header(Provider provider, const std::string& key) {
  return provider == Provider::azure ? "api-key: " + key : "Authorization: Bearer " + key;
}

Transport::~Transport() {
  for (CURL* e : easy_pool_) curl_easy_cleanup(e);
  if (multi_ != nullptr) curl_multi_cleanup(multi_);
  curl_slist_free_all(headers_);
}

Status Transport::open(const LlmConfig& ep, const std::string& auth, long max_connects) {
  headers_ = curl_slist_append(headers_, "Content-Type: application/json");
  headers_ = curl_slist_append(headers_, "Accept: application/json");
  headers_ = curl_slist_append(headers_, "Expect:");
  if (!auth.empty()) headers_ = curl_slist_append(headers_, auth.c_str());
  for (const auto& [k, v] : ep.extra_headers) {
    if (lower(k) == "accept-encoding") {
      // libcurl offers every encoding it decodes (CURLOPT_ACCEPT_ENCODING); a header given
      // here would make it hand over the compressed bytes undecoded.
      spdlog::info(
          "llm: extra_headers Accept-Encoding ignored: compressed answers are "
          "always accepted and decoded");
      continue;
    }
    std::string h = k + ": " + v;
    headers_ = curl_slist_append(headers_, h.c_str());
  }
  multi_ = curl_multi_init();
  if (multi_ == nullptr)
    return fail(llm_error(ErrorKind::http, "curl_multi_init failed", Transient::no));
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, max_connects);
  return {};
}

void Transport::start(Call* c, const std::string& url, long connect_timeout_ms,
                      long request_timeout_ms) {
  CURL* e;
  if (!easy_pool_.empty()) {
    e = easy_pool_.back();
    easy_pool_.pop_back();
    curl_easy_reset(e);
  } else {
    e = curl_easy_init();
  }
  c->resp.clear();
  c->headers.clear();
  c->errbuf[0] = '\0';
  c->last_status = 0;
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body.data());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(c->body.size()));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers_);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
  curl_easy_setopt(e, CURLOPT_PRIVATE, c);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->errbuf);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_timeout_ms);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, request_timeout_ms);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "kforge-llm/1");
  // Offer every encoding this libcurl decodes; the body arrives decoded (text).
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  c->easy = e;
  curl_multi_add_handle(multi_, e);
  ++active_;
}

std::optional<Transfer> Transport::next_done() {
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi_, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* e = m->easy_handle;
    CURLcode rc = m->data.result;
    Call* c = nullptr;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, &c);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(multi_, e);
    easy_pool_.push_back(e);
    c->easy = nullptr;
    --active_;
    return Transfer{c, rc, status};
  }
  return std::nullopt;
}

void Transport::abort(Call* c) {
  curl_multi_remove_handle(multi_, c->easy);
  easy_pool_.push_back(c->easy);
  c->easy = nullptr;
  --active_;
}

void Transport::perform() {
  int running = 0;
  curl_multi_perform(multi_, &running);
}

void Transport::poll(int timeout_ms) {
  curl_multi_poll(multi_, nullptr, 0, timeout_ms, nullptr);
}

long Transport::curl_timeout_ms() {
  long ms = -1;
  curl_multi_timeout(multi_, &ms);
  return ms;
}

void Transport::wakeup() {
  if (multi_ != nullptr) curl_multi_wakeup(multi_);
}

}  // namespace kforge::llm
