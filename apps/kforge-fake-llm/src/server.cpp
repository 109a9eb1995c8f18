#include "kforge/fake_llm/server.hpp"

#include "batches.hpp"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include <atomic>
#include <cmath>
#include <ctime>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "kforge/core/config.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/core/sha256.hpp"

namespace kforge::fake_llm {
namespace {

using json = nlohmann::json;

const std::set<std::string> kFaults = {
    "hang", "reset", "truncate", "malformed", "wrong_content_type", "html", "empty"};
const std::set<std::string> kWraps = {"bare", "fenced", "prose", "fences"};
const std::set<std::string> kRuleKeys = {"name",
                                         "match",
                                         "times",
                                         "per_request",
                                         "skip",
                                         "probability",
                                         "latency_ms",
                                         "status",
                                         "message",
                                         "retry_after",
                                         "retry_after_date",
                                         "headers",
                                         "fault",
                                         "hang_ms",
                                         "finish_reason",
                                         "reply",
                                         "reply_json",
                                         "wrap",
                                         "usage",
                                         "model",
                                         "encoding",
                                         "reasoning",
                                         "content_parts",
                                         "needs_max_tokens"};
// What defaults may hold: everything a rule says about the answer (not how it selects).
const std::set<std::string> kAnswerKeys = {
    "latency_ms", "status",        "message",         "retry_after",   "retry_after_date",
    "headers",    "fault",         "hang_ms",         "finish_reason", "reply",
    "reply_json", "wrap",          "usage",           "model",         "encoding",
    "reasoning",  "content_parts", "needs_max_tokens"};
const std::set<std::string> kMatchKeys = {"contains", "regex", "role", "path"};
const std::set<std::string> kTopKeys = {"seed",        "defaults", "rules",
                                        "require_key", "limit",    "batch"};
const std::set<std::string> kLimitKeys = {"rate", "burst", "retry_after", "per"};

Status check_object_keys(const json& o, const std::set<std::string>& keys, const std::string& at) {
  if (!o.is_object()) return fail("script", at + ": expected a mapping");
  for (const auto& [k, v] : o.items()) {
    (void)v;
    if (!keys.count(k)) {
      std::string known;
      for (const auto& n : keys) known += (known.empty() ? "" : ", ") + n;
      return fail("script", at + "." + k + ": unknown key (known: " + known + ")");
    }
  }
  return {};
}

Status check_answer(const json& a, const std::string& at) {
  auto num = [&](const char* k) -> Status {
    if (a.contains(k) && !(a[k].is_number() && a[k].get<double>() >= 0))
      return fail("script", at + "." + k + ": expected a number >= 0");
    return {};
  };
  KF_CHECK(num("latency_ms"));
  KF_CHECK(num("hang_ms"));
  KF_CHECK(num("retry_after"));
  KF_CHECK(num("retry_after_date"));
  KF_CHECK(num("times"));
  KF_CHECK(num("skip"));
  KF_CHECK(num("needs_max_tokens"));
  if (a.contains("content_parts") && !a["content_parts"].is_boolean())
    return fail("script", at + ".content_parts: expected true or false");
  if (a.contains("probability") &&
      !(a["probability"].is_number() && a["probability"].get<double>() <= 1))
    return fail("script", at + ".probability: expected a number between 0 and 1");
  if (a.contains("status") &&
      !(a["status"].is_number_integer() && a["status"] >= 100 && a["status"] <= 599))
    return fail("script", at + ".status: expected an HTTP status 100..599");
  for (const char* k : {"reply", "message", "finish_reason", "model", "name", "reasoning"})
    if (a.contains(k) && !a[k].is_string())
      return fail("script", at + "." + k + ": expected a string");
  if (a.contains("fault") && (!a["fault"].is_string() || !kFaults.count(a["fault"])))
    return fail("script", at + ".fault: '" + a["fault"].dump() +
                              "' is not one of empty, hang, html, malformed, reset, truncate, "
                              "wrong_content_type");
  if (a.contains("wrap") && (!a["wrap"].is_string() || !kWraps.count(a["wrap"])))
    return fail("script", at + ".wrap: expected one of bare, fenced, prose, fences");
  if (a.contains("headers")) {
    if (!a["headers"].is_object()) return fail("script", at + ".headers: expected a mapping");
    for (const auto& [k, v] : a["headers"].items())
      if (!v.is_string() && !v.is_number())
        return fail("script", at + ".headers." + k + ": expected a string");
  }
  if (a.contains("usage")) {
    KF_CHECK(check_object_keys(
        a["usage"], {"prompt_tokens", "completion_tokens", "reasoning_tokens", "cached_tokens"},
        at + ".usage"));
    for (const auto& [k, v] : a["usage"].items())
      if (!v.is_number_integer())
        return fail("script", at + ".usage." + k + ": expected an integer");
  }
  if (a.contains("encoding") && a["encoding"] != "gzip" && a["encoding"] != "identity")
    return fail("script", at + ".encoding: expected gzip or identity");
  if (a.contains("per_request") && !a["per_request"].is_boolean())
    return fail("script", at + ".per_request: expected true or false");
  return {};
}

// cpp-httplib compresses a body by itself when the client accepts it, with brotli at quality 11
// when offered "br": about a millisecond of CPU per small answer, spent on the machine the LLM
// client's benchmark runs on and counted there as client overhead. Compressing is the
// provider's cost, so answers go uncompressed (a body of known length from a provider is left
// alone) unless the script says `encoding: gzip`.
void set_uncompressed(httplib::Response& res, std::string body, const char* type) {
  auto shared = std::make_shared<std::string>(std::move(body));
  res.set_content_provider(
      shared->size(), type,
      [shared](std::size_t offset, std::size_t length, httplib::DataSink& sink) {
        sink.write(shared->data() + offset, std::min(length, shared->size() - offset));
        return true;
      });
}

std::string http_date(std::time_t t) {
  char buf[64];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

// The body gzip-compressed (a gzip member, as Content-Encoding: gzip announces).
std::string gzip(const std::string& in) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return in;
  std::string out(deflateBound(&z, static_cast<uLong>(in.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// Finds the accepted socket of this request (cpp-httplib does not expose it) so that a
// "reset" can close it with an RST.
int find_socket(const httplib::Request& req) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    int fd = std::atoi(entry.path().filename().c_str());
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    auto port_of = [](const sockaddr_storage& s) -> int {
      if (s.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&s)->sin_port);
      if (s.ss_family == AF_INET6)
        return ntohs(reinterpret_cast<const sockaddr_in6*>(&s)->sin6_port);
      return -1;
    };
    if (port_of(local) == req.local_port && port_of(peer) == req.remote_port) return fd;
  }
  return -1;
}

// What templates are filled from.
struct Ctx {
  const json& body;
  const std::string& text;
  const std::string& hash;
  std::uint64_t n;
  const std::string& presented_key;
};

// cpp-httplib 0.11 listens with a backlog of 5: a burst of new connections overflows it and the
// kernel drops SYNs, which the client retransmits only after a second. Listening again on the
// bound socket widens the backlog.
class Server : public httplib::Server {
 public:
  void widen_backlog() { ::listen(svr_sock_, 4096); }
};

// nginx's limit_req: a leaky bucket per key (the client's address, or one for the server)
// holding `excess` requests, drained at `rate` per second; a request that would push the
// excess above `burst` is refused with 429 and does not count. Requests within the burst are
// served at once (nginx's `nodelay`).
struct LimitState {
  double excess = 0;  // in requests
  std::chrono::steady_clock::time_point last{};
  bool seen = false;
};

struct RuleState {
  std::uint64_t matched = 0;
  std::uint64_t applied = 0;
  std::map<std::string, std::uint64_t> matched_by_hash;
};

}  // namespace

Result<json> load_script(const std::filesystem::path& file) {
  KF_TRY(std::string text, read_file(file));
  try {
    YAML::Node n = YAML::Load(text);
    json j = yaml_to_json(n);
    if (j.is_null()) j = json::object();
    auto st = check_script(j);
    if (!st.ok()) return std::move(st).error().context(file.string());
    return j;
  } catch (const YAML::Exception& e) {
    return fail("script", file.string() + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Status check_script(const json& s) {
  KF_CHECK(check_object_keys(s, kTopKeys, "script"));
  if (s.contains("seed") && !s["seed"].is_number_integer())
    return fail("script", "script.seed: expected an integer");
  if (s.contains("require_key") && !s["require_key"].is_string())
    return fail("script", "script.require_key: expected a string");
  if (s.contains("limit")) {
    const json& l = s["limit"];
    KF_CHECK(check_object_keys(l, kLimitKeys, "limit"));
    if (!l.contains("rate") || !l["rate"].is_number() || l["rate"].get<double>() <= 0)
      return fail("script", "limit.rate: expected a number of requests per second > 0");
    for (const char* k : {"burst", "retry_after"})
      if (l.contains(k) && !(l[k].is_number() && l[k].get<double>() >= 0))
        return fail("script", std::string("limit.") + k + ": expected a number >= 0");
    if (l.contains("per") && l["per"] != "client" && l["per"] != "server")
      return fail("script", "limit.per: expected client or server");
  }
  if (s.contains("batch")) KF_CHECK(check_batch_script(s["batch"]));
  if (s.contains("defaults")) {
    KF_CHECK(check_object_keys(s["defaults"], kAnswerKeys, "defaults"));
    KF_CHECK(check_answer(s["defaults"], "defaults"));
  }
  if (s.contains("rules")) {
    if (!s["rules"].is_array()) return fail("script", "rules: expected a list");
    for (std::size_t i = 0; i < s["rules"].size(); ++i) {
      std::string at = "rules[" + std::to_string(i) + "]";
      const json& r = s["rules"][i];
      KF_CHECK(check_object_keys(r, kRuleKeys, at));
      KF_CHECK(check_answer(r, at));
      if (r.contains("match")) {
        KF_CHECK(check_object_keys(r["match"], kMatchKeys, at + ".match"));
        for (const auto& [k, v] : r["match"].items())
          if (!v.is_string()) return fail("script", at + ".match." + k + ": expected a string");
        if (r["match"].contains("regex")) {
          try {
            std::regex re(r["match"]["regex"].get<std::string>());
          } catch (const std::regex_error& e) {
            return fail("script", at + ".match.regex: " + e.what());
          }
        }
      }
    }
  }
  return {};
}

// ---------------------------------------------------------------------------------------------

class FakeLlmServer::Impl {
 public:
  explicit Impl(ServerOptions o) : opts_(std::move(o)) {}

  ~Impl() { stop(); }

  Status start(const json& script) {
    KF_CHECK(set_script(script));
    int threads = opts_.threads;
    svr_.new_task_queue = [threads] {
      return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    svr_.set_keep_alive_max_count(1'000'000);
    svr_.set_keep_alive_timeout(30);
    svr_.set_read_timeout(30);
    svr_.set_tcp_nodelay(true);
    auto chat = [this](const httplib::Request& req, httplib::Response& res) { serve(req, res); };
    svr_.Post("/v1/chat/completions", chat);
    svr_.Post("/chat/completions", chat);
    svr_.Post(R"(/openai/deployments/([^/]+)/chat/completions)", chat);
    batches_.routes(svr_);
    svr_.Get("/_stats", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(stats().dump(2, ' ', false, json::error_handler_t::replace),
                      "application/json");
    });
    svr_.Get("/_health", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok\n", "text/plain");
    });
    svr_.Post("/_reset", [this](const httplib::Request&, httplib::Response& res) {
      reset_stats();
      res.set_content("{}", "application/json");
    });
    svr_.Put("/_script", [this](const httplib::Request& req, httplib::Response& res) {
      json j = json::parse(req.body, nullptr, false);
      Status st = j.is_discarded() ? Status(fail("script", "body is not JSON")) : set_script(j);
      res.status = st.ok() ? 200 : 400;
      res.set_content(st.ok() ? "{}" : json{{"error", st.error().message}}.dump(),
                      "application/json");
    });
    port_ = opts_.port == 0 ? svr_.bind_to_any_port(opts_.host)
                            : (svr_.bind_to_port(opts_.host, opts_.port) ? opts_.port : -1);
    if (port_ <= 0)
      return fail("io", "cannot listen on " + opts_.host + ":" + std::to_string(opts_.port));
    svr_.widen_backlog();
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    // cpp-httplib's stop() is a no-op until the accept loop runs: wait for it, so that a stop()
    // right after start() cannot leave the loop running forever.
    for (int i = 0; i < 10'000 && !svr_.is_running(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!svr_.is_running()) return fail("io", "the server did not start listening");
    return {};
  }

  int port() const { return port_; }
  std::string host() const {
    return opts_.host == "0.0.0.0" || opts_.host.empty() ? "127.0.0.1" : opts_.host;
  }

  Status set_script(const json& script) {
    KF_CHECK(check_script(script));
    std::unique_lock lk(mu_);
    script_ = script;
    rules_.assign(script_.contains("rules") ? script_["rules"].size() : 0, RuleState{});
    rng_.seed(static_cast<std::uint32_t>(script_.value("seed", 1)));
    limits_.clear();
    json batch = script_.value("batch", json(nullptr));
    std::string key = script_.value("require_key", "");
    lk.unlock();
    batches_.set_script(batch, key);
    return {};
  }

  json stats() const {
    // The batches' lock is taken before this one (a batch answers its lines through
    // answer_line() under it), never inside it.
    json batch = batches_.stats();
    std::lock_guard lk(mu_);
    json s = stats_;
    s["in_flight"] = in_flight_;
    s["max_in_flight"] = max_in_flight_;
    std::uint64_t max_per_hash = 0;
    for (const auto& [h, n] : s["by_hash"].items()) {
      (void)h;
      max_per_hash = std::max<std::uint64_t>(max_per_hash, n.get<std::uint64_t>());
    }
    s["max_per_hash"] = max_per_hash;
    s["batch"] = std::move(batch);
    return s;
  }

  int in_flight() const {
    std::lock_guard lk(mu_);
    return in_flight_;
  }

  void reset_stats() {
    batches_.reset_stats();
    std::lock_guard lk(mu_);
    stats_ = empty_stats();
    peers_.clear();
    max_in_flight_ = in_flight_;
  }

  void stop() {
    stopping_ = true;
    if (thread_.joinable()) {
      svr_.stop();
      thread_.join();
    }
  }

 private:
  static json empty_stats() {
    return {{"requests", 0},
            {"answered", 0},
            {"connections", 0},
            {"by_hash", json::object()},
            {"answered_by_hash", json::object()},
            {"by_rule", json::object()},
            {"by_status", json::object()},
            {"limited", 0},
            {"last_request", nullptr}};
  }

  // The limiter (script key `limit`): true when the request may pass; else sets *retry_after_s.
  bool admit(const std::string& client, double* retry_after_s) {
    std::lock_guard lk(mu_);
    if (!script_.contains("limit")) return true;
    const json& l = script_["limit"];
    double rate = l["rate"].get<double>();
    double burst = l.value("burst", 0.0);
    *retry_after_s = l.value("retry_after", 1.0);
    std::string key = l.value("per", std::string("client")) == "server" ? "" : client;
    LimitState& st = limits_[key];
    auto now = std::chrono::steady_clock::now();
    double excess = 0;
    if (st.seen) {
      double secs = std::chrono::duration<double>(now - st.last).count();
      excess = std::max(0.0, st.excess - rate * secs + 1);
    }
    if (excess > burst + 1e-9) {
      stats_["limited"] = stats_["limited"].get<std::uint64_t>() + 1;
      return false;
    }
    st.excess = excess;
    st.last = now;
    st.seen = true;
    return true;
  }

  // Sleeps up to ms, returning early when the server stops.
  void pause(double ms) {
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::microseconds(static_cast<std::int64_t>(ms * 1000));
    while (!stopping_) {
      auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::nanoseconds(0)) return;
      std::this_thread::sleep_for(
          std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(20)));
    }
  }

  static std::string all_text(const json& body) {
    std::string t;
    if (body.contains("messages") && body["messages"].is_array())
      for (const auto& m : body["messages"])
        if (m.is_object() && m.contains("content") && m["content"].is_string())
          t += m["content"].get<std::string>() + "\n";
    return t;
  }

  static bool matches(const json& match, const json& body, const std::string& text,
                      const std::string& path) {
    if (!match.is_object()) return true;
    if (auto c = match.find("contains");
        c != match.end() && text.find(c->get<std::string>()) == std::string::npos)
      return false;
    if (auto r = match.find("regex"); r != match.end()) {
      std::regex re(r->get<std::string>());
      if (!std::regex_search(text, re)) return false;
    }
    if (auto p = match.find("path");
        p != match.end() && path.find(p->get<std::string>()) == std::string::npos)
      return false;
    if (auto role = match.find("role"); role != match.end()) {
      bool any = false;
      if (body.contains("messages") && body["messages"].is_array())
        for (const auto& m : body["messages"])
          any = any || (m.is_object() && m.value("role", "") == role->get<std::string>());
      if (!any) return false;
    }
    return true;
  }

  // Fills {{model}}, {{user}}, {{hash}}, {{n}} and {{re:REGEX}} (first capture group, else the
  // whole match, else "") from the request.
  static std::string fill(const std::string& tpl, const Ctx& x) {
    const json& body = x.body;
    std::string out;
    std::size_t pos = 0;
    while (true) {
      auto open = tpl.find("{{", pos);
      if (open == std::string::npos) break;
      auto close = tpl.find("}}", open + 2);
      if (close == std::string::npos) break;
      out.append(tpl, pos, open - pos);
      std::string key = tpl.substr(open + 2, close - open - 2);
      if (key == "model") {
        out += body.value("model", "fake-model");
      } else if (key == "hash") {
        out += x.hash;
      } else if (key == "n") {
        out += std::to_string(x.n);
      } else if (key == "presented_key") {
        out += x.presented_key;
      } else if (key == "user") {
        std::string last;
        if (body.contains("messages") && body["messages"].is_array())
          for (const auto& m : body["messages"])
            if (m.is_object() && m.value("role", "") == "user" && m["content"].is_string())
              last = m["content"].get<std::string>();
        out += last;
      } else if (key.rfind("re:", 0) == 0) {
        try {
          std::smatch m;
          std::regex re(key.substr(3));
          if (std::regex_search(x.text, m, re)) out += m.size() > 1 ? m[1].str() : m[0].str();
        } catch (const std::regex_error&) {
        }
      } else {
        out += "{{" + key + "}}";
      }
      pos = close + 2;
    }
    out.append(tpl, pos);
    return out;
  }

  static json fill_json(const json& v, const Ctx& x) {
    if (v.is_string()) return fill(v.get<std::string>(), x);
    if (v.is_array()) {
      json a = json::array();
      for (const auto& e : v) a.push_back(fill_json(e, x));
      return a;
    }
    if (v.is_object()) {
      json o = json::object();
      for (const auto& [k, e] : v.items()) o[k] = fill_json(e, x);
      return o;
    }
    return v;
  }

  // Picks the answer for a request: the first applicable rule merged over the defaults.
  json choose(const json& body, const std::string& text, const std::string& hash,
              const std::string& path, std::string* rule_name) {
    std::lock_guard lk(mu_);
    json answer = script_.value("defaults", json::object());
    if (!script_.contains("rules")) return answer;
    const json& rules = script_["rules"];
    for (std::size_t i = 0; i < rules.size(); ++i) {
      const json& r = rules[i];
      if (!matches(r.value("match", json::object()), body, text, path)) continue;
      RuleState& st = rules_[i];
      bool per_request = r.value("per_request", false);
      std::uint64_t seen = per_request ? st.matched_by_hash[hash]++ : st.matched++;
      std::uint64_t skip = r.value("skip", 0);
      if (seen < skip) continue;
      if (r.contains("times") && seen - skip >= r["times"].get<std::uint64_t>()) continue;
      if (r.contains("probability") &&
          std::uniform_real_distribution<double>(0, 1)(rng_) >= r["probability"].get<double>())
        continue;
      ++st.applied;
      *rule_name = r.value("name", "rules[" + std::to_string(i) + "]");
      for (const auto& [k, v] : r.items())
        if (k != "match" && k != "times" && k != "per_request" && k != "skip" &&
            k != "probability" && k != "name")
          answer[k] = v;
      return answer;
    }
    return answer;
  }

  // Whether a whole completion went back (the stats' "answered"), or only a status, a fault or
  // a broken body.
  enum class Answered { yes, no };
  void count(const std::string& hash, const std::string& rule, int status, Answered answer) {
    const bool answered = answer == Answered::yes;
    std::lock_guard lk(mu_);
    stats_["by_status"][std::to_string(status)] =
        stats_["by_status"].value(std::to_string(status), 0) + 1;
    if (!rule.empty()) stats_["by_rule"][rule] = stats_["by_rule"].value(rule, 0) + 1;
    if (answered) {
      stats_["answered"] = stats_["answered"].get<std::uint64_t>() + 1;
      stats_["answered_by_hash"][hash] = stats_["answered_by_hash"].value(hash, 0) + 1;
    }
  }

  // The chat completion body for answer `a` to `body` (templates filled from ctx).
  static std::string completion(const json& a, const json& body, const Ctx& ctx, std::uint64_t n) {
    const std::string& text = ctx.text;
    // The assistant's content.
    std::string content;
    if (a.contains("reply_json")) {
      std::string j =
          fill_json(a["reply_json"], ctx).dump(2, ' ', false, json::error_handler_t::replace);
      std::string wrap = a.value("wrap", "bare");
      if (wrap == "fenced") {
        content = "```json\n" + j + "\n```";
      } else if (wrap == "prose") {
        content = "Sure! Here is the result you asked for:\n\n" + j +
                  "\n\nLet me know if you need anything else.";
      } else if (wrap == "fences") {
        content =
            "First a sketch:\n```json\n{\"draft\": true, \"note\": \"not final\"}\n```\n"
            "And the final answer:\n```json\n" +
            j + "\n```\n";
      } else {
        content = j;
      }
    } else {
      content = fill(a.value("reply", std::string("{\"ok\": true}")), ctx);
    }
    std::string reasoning =
        a.contains("reasoning") ? fill(a["reasoning"].get<std::string>(), ctx) : "";
    std::string finish_reason = a.value("finish_reason", "stop");
    if (a.contains("needs_max_tokens")) {
      // A budget below what the answer needs cuts it: a reasoning model spends it thinking and
      // leaves the content empty, another stops half-way through its answer.
      auto need = static_cast<long long>(a["needs_max_tokens"].get<double>());
      long long asked = body.contains("max_tokens") && body["max_tokens"].is_number_integer()
                            ? body["max_tokens"].get<long long>()
                            : 0;
      if (asked < need) {
        content = reasoning.empty() ? content.substr(0, content.size() / 2) : "";
        finish_reason = "length";
      }
    }
    int prompt_tokens = static_cast<int>(text.size() / 4 + 1);
    int completion_tokens = static_cast<int>((content.size() + reasoning.size()) / 4 + 1);
    json usage = json::object();
    if (a.contains("usage")) {
      prompt_tokens = a["usage"].value("prompt_tokens", prompt_tokens);
      completion_tokens = a["usage"].value("completion_tokens", completion_tokens);
      if (a["usage"].contains("reasoning_tokens"))
        usage["completion_tokens_details"] = {{"reasoning_tokens", a["usage"]["reasoning_tokens"]}};
      if (a["usage"].contains("cached_tokens"))
        usage["prompt_tokens_details"] = {{"cached_tokens", a["usage"]["cached_tokens"]}};
    }
    usage["prompt_tokens"] = prompt_tokens;
    usage["completion_tokens"] = completion_tokens;
    usage["total_tokens"] = prompt_tokens + completion_tokens;
    json message = {{"role", "assistant"}, {"content", content}};
    if (a.value("content_parts", false))
      message["content"] = json::array({{{"type", "text"}, {"text", content}}});
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    json reply = {
        {"id", "chatcmpl-fake-" + std::to_string(n)},
        {"object", "chat.completion"},
        {"created", static_cast<long long>(std::time(nullptr))},
        {"model", a.value("model", body.value("model", "fake-model"))},
        {"choices",
         json::array(
             {{{"index", 0}, {"message", std::move(message)}, {"finish_reason", finish_reason}}})},
        {"usage", std::move(usage)}};
    return reply.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  // One line of a batch (batches.hpp): the rules and defaults answer it as they would a chat
  // request, without latency or transport faults. Counted like a request; returns the status
  // and the body.
  std::pair<int, std::string> answer_line(const json& body) {
    std::string raw = body.dump(-1, ' ', false, json::error_handler_t::replace);
    std::string hash = sha256_hex(raw);
    std::uint64_t n;
    {
      std::lock_guard lk(mu_);
      n = stats_["requests"].get<std::uint64_t>() + 1;
      stats_["requests"] = n;
      stats_["by_hash"][hash] = stats_["by_hash"].value(hash, 0) + 1;
    }
    std::string text = all_text(body);
    std::string rule;
    std::string none;
    json a = choose(body, text, hash, "/v1/chat/completions", &rule);
    Ctx ctx{body, text, hash, n, none};
    int status = a.value("status", 200);
    if (status != 200) {
      std::string msg = a.value("message", "scripted HTTP " + std::to_string(status));
      count(hash, rule, status, Answered::no);
      return {
          status,
          json{{"error", {{"message", fill(msg, ctx)}, {"type", "fake"}, {"code", status}}}}.dump(
              -1, ' ', false, json::error_handler_t::replace)};
    }
    count(hash, rule, 200, Answered::yes);
    return {200, completion(a, body, ctx, n)};
  }

  // Sends a scripted answer `out`: whole (gzip-encoded where the rule says), or with the
  // rule's fault (a wrong content type, malformed, HTML, empty, a reset connection, a body cut
  // in half).
  void deliver(const httplib::Request& req, httplib::Response& res, const json& a,
               const std::string& fault, std::string out, const std::string& hash,
               const std::string& rule) {
    if (fault.empty() && a.value("encoding", "") == "gzip") {
      res.set_content(gzip(out), "application/json");
      res.set_header("Content-Encoding", "gzip");
      count(hash, rule, 200, Answered::yes);
    } else if (fault.empty()) {
      set_uncompressed(res, std::move(out), "application/json");
      count(hash, rule, 200, Answered::yes);
    } else if (fault == "wrong_content_type") {
      res.set_content(out, "text/html; charset=utf-8");
      count(hash, rule, 200, Answered::yes);
    } else if (fault == "malformed") {
      res.set_content(out.substr(0, out.size() / 2) + "<<garbage", "application/json");
      count(hash, rule, 200, Answered::no);
    } else if (fault == "html") {
      res.set_content("<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html");
      count(hash, rule, 200, Answered::no);
    } else if (fault == "empty") {
      res.set_content("", "application/json");
      count(hash, rule, 200, Answered::no);
    } else if (fault == "reset") {
      // Disconnecting the socket under cpp-httplib's feet makes the kernel send an RST now; the
      // descriptor stays valid, so the library's own writes and close fail harmlessly.
      int fd = find_socket(req);
      if (fd >= 0) {
        sockaddr unspec{};
        unspec.sa_family = AF_UNSPEC;
        ::connect(fd, &unspec, sizeof unspec);
      }
      res.set_content(out, "application/json");
      count(hash, rule, 0, Answered::no);
    } else if (fault == "truncate") {
      std::size_t half = out.size() / 2;
      auto shared = std::make_shared<std::string>(std::move(out));
      res.set_content_provider(shared->size(), "application/json",
                               [shared, half](size_t offset, size_t, httplib::DataSink& sink) {
                                 if (offset < half) {
                                   sink.write(shared->data() + offset, half - offset);
                                   return true;
                                 }
                                 return false;  // abort: the connection closes mid-body
                               });
      count(hash, rule, 200, Answered::no);
    }
  }

  void serve(const httplib::Request& req, httplib::Response& res) {
    struct InFlight {
      Impl* s;
      explicit InFlight(Impl* x) : s(x) {
        std::lock_guard lk(s->mu_);
        s->max_in_flight_ = std::max(s->max_in_flight_, ++s->in_flight_);
      }
      ~InFlight() {
        std::lock_guard lk(s->mu_);
        --s->in_flight_;
      }
    } in_flight(this);

    std::string hash = sha256_hex(req.body);
    json body = json::parse(req.body, nullptr, false);
    std::string auth = "none";
    std::string presented;
    if (req.has_header("Authorization")) {
      auth = "bearer";
      presented = req.get_header_value("Authorization");
      if (presented.rfind("Bearer ", 0) == 0) presented = presented.substr(7);
    } else if (req.has_header("api-key")) {
      auth = "api-key";
      presented = req.get_header_value("api-key");
    }
    std::uint64_t n;
    std::string require_key;
    {
      std::lock_guard lk(mu_);
      n = stats_["requests"].get<std::uint64_t>() + 1;
      stats_["requests"] = n;
      // A client's TCP connection is its (address, port): a kept-alive one is counted once.
      if (peers_.insert(req.remote_addr + ":" + std::to_string(req.remote_port)).second)
        stats_["connections"] = peers_.size();
      stats_["by_hash"][hash] = stats_["by_hash"].value(hash, 0) + 1;
      require_key = script_.value("require_key", "");
      json headers = json::object();
      for (const auto& [k, v] : req.headers) {
        std::string name = k;
        for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        if (name != "authorization" && name != "api-key") headers[name] = v;
      }
      stats_["last_request"] = {{"path", req.path},
                                {"headers", headers},
                                {"auth", auth},
                                {"key_ok", require_key.empty() || presented == require_key},
                                {"api_version", req.get_param_value("api-version")},
                                {"body", body.is_discarded() ? json(req.body) : body}};
    }
    auto error = [&](int status, const std::string& type, const std::string& message) {
      res.status = status;
      res.set_content(
          json{{"error", {{"message", message}, {"type", type}, {"code", status}}}}.dump(
              -1, ' ', false, json::error_handler_t::replace),
          "application/json");
      count(hash, "", status, Answered::no);
    };
    if (body.is_discarded() || !body.is_object()) {
      error(400, "invalid_request_error", "request body is not a JSON object");
      return;
    }
    if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty()) {
      error(400, "invalid_request_error", "'messages' must be a non-empty list");
      return;
    }
    if (double wait_s = 0; !admit(req.remote_addr, &wait_s)) {
      res.status = 429;
      res.set_header("Retry-After", std::to_string(static_cast<long long>(std::ceil(wait_s))));
      res.set_content(
          "<html><head><title>429 Too Many Requests</title></head><body>"
          "<center><h1>429 Too Many Requests</h1></center></body></html>\n",
          "text/html");
      count(hash, "limit", 429, Answered::no);
      return;
    }
    if (!require_key.empty() && presented != require_key) {
      error(401, "invalid_request_error", "Incorrect API key provided");
      return;
    }
    std::string text = all_text(body);
    std::string rule;
    json a = choose(body, text, hash, req.path, &rule);
    Ctx ctx{body, text, hash, n, presented};

    if (a.contains("latency_ms")) pause(a["latency_ms"].get<double>());
    std::string fault = a.value("fault", "");
    if (fault == "hang") {
      pause(a.value("hang_ms", 60'000.0));
      fault.clear();
    }
    if (a.contains("headers"))
      for (const auto& [k, v] : a["headers"].items())
        res.set_header(k.c_str(), v.is_string() ? v.get<std::string>() : v.dump());
    if (a.contains("retry_after"))
      res.set_header("Retry-After",
                     std::to_string(static_cast<long long>(a["retry_after"].get<double>())));
    if (a.contains("retry_after_date"))
      res.set_header("Retry-After",
                     http_date(std::time(nullptr) +
                               static_cast<std::time_t>(a["retry_after_date"].get<double>())));

    int status = a.value("status", 200);
    if (status != 200) {
      res.status = status;
      std::string msg = a.value("message", "scripted HTTP " + std::to_string(status));
      res.set_content(
          json{{"error", {{"message", fill(msg, ctx)}, {"type", "fake"}, {"code", status}}}}.dump(
              -1, ' ', false, json::error_handler_t::replace),
          "application/json");
      count(hash, rule, status, Answered::no);
      return;
    }

    std::string out = completion(a, body, ctx, n);

    deliver(req, res, a, fault, std::move(out), hash, rule);
  }

  ServerOptions opts_;
  Server svr_;
  std::thread thread_;
  int port_ = -1;
  std::atomic<bool> stopping_{false};

  mutable std::mutex mu_;
  json script_;
  std::vector<RuleState> rules_;
  std::map<std::string, LimitState> limits_;
  std::mt19937 rng_;
  json stats_ = empty_stats();
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  std::set<std::string> peers_;  // client connections seen since the last reset (guarded by mu_)
  FakeBatches batches_{[this](const json& body) { return answer_line(body); },
                       [this](double ms) { pause(ms); }};
};

FakeLlmServer::FakeLlmServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FakeLlmServer::~FakeLlmServer() = default;

Result<std::unique_ptr<FakeLlmServer>> FakeLlmServer::start(const json& script,
                                                            ServerOptions opts) {
  auto impl = std::make_unique<Impl>(std::move(opts));
  KF_CHECK(impl->start(script));
  return std::unique_ptr<FakeLlmServer>(new FakeLlmServer(std::move(impl)));
}

int FakeLlmServer::port() const {
  return impl_->port();
}
std::string FakeLlmServer::base_url() const {
  return "http://" + impl_->host() + ":" + std::to_string(impl_->port()) + "/v1";
}
Status FakeLlmServer::set_script(const json& script) {
  return impl_->set_script(script);
}
json FakeLlmServer::stats() const {
  return impl_->stats();
}
int FakeLlmServer::in_flight() const {
  return impl_->in_flight();
}
void FakeLlmServer::reset_stats() {
  impl_->reset_stats();
}
void FakeLlmServer::stop() {
  impl_->stop();
}

}  // namespace kforge::fake_llm
