#include "score_server.hpp"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "kforge/app/http_guard.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "kforge/score/service.hpp"
#include "kforge/verify/pool.hpp"

namespace kforge::daemon {

namespace {

using namespace std::chrono_literals;

using app::constant_time_equal;
using app::host_of;
using app::is_loopback;

void answer(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content(body.dump() + "\n", "application/json");
}

void refuse(httplib::Response& res, int status, const std::string& why) {
  answer(res, status, {{"error", why}});
}

// 429 for a request past score.max_requests: nothing of it was written.
void too_many(httplib::Response& res, int max_requests) {
  res.set_header("Retry-After", "5");
  refuse(res, 429,
         "kforged already holds score.max_requests (" + std::to_string(max_requests) +
             ") waiting requests; retry after 5 s, or send larger batches");
}

// The evidence blocks of the repair prompts (a pipeline version with a repair stage), or none.
std::optional<pipeline::EvidenceTemplate> evidence_blocks(const app::Config& cfg) {
  auto dir = pipeline::PromptLibrary::locate(cfg.pipeline.prompts_dir);
  if (!dir.ok()) return std::nullopt;
  auto lib = pipeline::PromptLibrary::load(*dir);
  if (!lib.ok()) return std::nullopt;
  for (const auto& v : lib->versions()) {
    auto spec = lib->pipeline(v);
    if (spec.ok() && (*spec)->repair) return (*spec)->evidence;
  }
  return std::nullopt;
}

}  // namespace

struct ScoreServer::Impl {
  score::ScoreService service;
  Clock& clock;
  httplib::Server svr;
  std::thread http, ticker;
  int port = -1;
  std::mutex mu;
  std::condition_variable cv;  // a tick changed something, a batch arrived, or stopping
  std::uint64_t generation = 0;
  bool stopping = false;
  bool poke = false;
  // Requests holding a thread while they wait (POST with wait, GET with wait_s > 0): at most
  // score.max_requests; the listener has that many threads and kSpareThreads more, so a request
  // past the bound is still read and answered 429 at once instead of waiting unread.
  std::atomic<int> waiting{0};
  std::atomic<bool> refusing{false};  // the daemon is stopping: no new batch
  static constexpr int kSpareThreads = 16;

  Impl(std::unique_ptr<store::Db> db, score::ServiceOptions o, Clock& c)
      : service(std::move(db), std::move(o), c), clock(c) {}

  // A slot among score.max_requests for a waiting request, released when the last copy of the
  // returned pointer goes (the response is sent or the client went away); nullptr when full.
  std::shared_ptr<void> reserve() {
    if (waiting.fetch_add(1) >= service.config().max_requests) {
      --waiting;
      return nullptr;
    }
    return std::shared_ptr<void>(this, [this](void*) { --waiting; });
  }

  // A batch submitted pokes the ticker; items that ended (the ticker's news) wake the waiting
  // requests. A submission ends no other batch, so it does not wake them all.
  void notify(bool submitted) {
    std::lock_guard l(mu);
    if (submitted)
      poke = true;
    else
      ++generation;
    cv.notify_all();
  }

  // Ticks every 100 ms while batches are open, else when poked or every 2 s.
  void tick_loop() {
    bool open = true;
    while (true) {
      {
        std::unique_lock l(mu);
        cv.wait_for(l, open ? 100ms : 2s, [&] { return stopping || poke; });
        if (stopping) return;
        poke = false;
      }
      const auto t0 = std::chrono::steady_clock::now();
      auto t = service.tick();
      if (const auto took = std::chrono::steady_clock::now() - t0; took >= 1s)
        spdlog::warn("score: a tick (settling verdicts, ending items) took {} ms",
                     std::chrono::duration_cast<std::chrono::milliseconds>(took).count());
      if (!t.ok()) {
        spdlog::warn("score: {}", t.error().message);
        open = true;
        continue;
      }
      open = t->open;
      if (t->changed) notify(false);
    }
  }

  // Waits up to `max` for the batch to end; writes spaces to `sink` every second meanwhile
  // (nullptr: none). Returns the results, or nullopt when the client went away.
  std::optional<nlohmann::json> await(std::int64_t batch, std::chrono::milliseconds max,
                                      httplib::DataSink* sink) {
    const auto until = std::chrono::steady_clock::now() + max;
    auto last_byte = std::chrono::steady_clock::now();
    while (true) {
      std::uint64_t seen;
      {
        std::lock_guard l(mu);
        seen = generation;
      }
      // Whether it ended is one row; the results (every item's evidence) are built once, at the
      // end.
      auto e = service.ended(batch);
      if (!e.ok()) return nlohmann::json{{"error", e.error().message}};
      if (!*e) return nlohmann::json{{"error", "no batch " + std::to_string(batch)}};
      const auto now = std::chrono::steady_clock::now();
      if (**e || now >= until) {
        auto r = service.results(batch);
        if (!r.ok()) return nlohmann::json{{"error", r.error().message}};
        if (!*r) return nlohmann::json{{"error", "no batch " + std::to_string(batch)}};
        return **r;
      }
      if (sink != nullptr && now - last_byte >= 1s) {
        if (!sink->write(" ", 1)) return std::nullopt;
        last_byte = now;
      }
      std::unique_lock l(mu);
      cv.wait_for(l, 250ms, [&] { return stopping || generation != seen; });
      if (stopping) return nullopt_or_results(batch);
    }
  }

  std::optional<nlohmann::json> nullopt_or_results(std::int64_t batch) {
    auto r = service.results(batch);
    if (r.ok() && *r) return **r;
    return std::nullopt;
  }

  void post_score(const httplib::Request& req, httplib::Response& res);
  void get_batch(const httplib::Request& req, httplib::Response& res);
};

void ScoreServer::Impl::post_score(const httplib::Request& req, httplib::Response& res) {
  auto body = nlohmann::json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return refuse(res, 400, "the body is not JSON");
  auto r = score::parse_request(body, service.config());
  if (!r.ok()) return refuse(res, 400, r.error().message);
  if (refusing) {
    res.set_header("Retry-After", "5");
    return refuse(res, 503, "kforged is stopping; retry after it restarts (nothing was written)");
  }
  std::shared_ptr<void> slot;
  if (r->wait && !(slot = reserve())) return too_many(res, service.config().max_requests);
  auto sub = service.submit(*r);
  if (!sub.ok())
    return refuse(res,
                  sub.error().kind == "usage"      ? 400
                  : sub.error().kind == "conflict" ? 409
                                                   : 500,
                  sub.error().message);
  if (sub->full) {
    res.set_header("Retry-After", std::to_string(sub->retry_after_s));
    return refuse(res, 429,
                  "the scoring queue is full (score.max_queue " +
                      std::to_string(service.config().max_queue) + "); retry after " +
                      std::to_string(sub->retry_after_s) + " s");
  }
  notify(true);
  const std::int64_t batch = sub->batch;
  if (sub->waited_ms + sub->write_ms >= 1000)
    spdlog::warn(
        "score: batch {} took {} ms to write: {} ms waiting for the service's "
        "connection, {} ms writing",
        batch, sub->waited_ms + sub->write_ms, sub->waited_ms, sub->write_ms);
  else
    spdlog::debug("score: batch {} written ({} ms waiting, {} ms writing)", batch, sub->waited_ms,
                  sub->write_ms);
  if (!r->wait) {
    auto now = service.results(batch);
    if (!now.ok() || !*now)
      return refuse(res, 500, now.ok() ? "batch vanished" : now.error().message);
    return answer(res, 202, **now);
  }
  // The batch's deadline bounds the wait; a little more lets the ticker end what is left.
  const auto max =
      std::chrono::milliseconds(static_cast<std::int64_t>(r->deadline_s * 1000) + 5000);
  res.status = 200;
  res.set_header("Cache-Control", "no-store");
  res.set_chunked_content_provider("application/json", [this, batch, max, slot](
                                                           std::size_t, httplib::DataSink& sink) {
    auto out = await(batch, max, &sink);
    if (!out) {
      spdlog::info("score: batch {}: the client went away; its open items are cancelled", batch);
      if (auto st = service.cancel(batch); !st.ok())
        spdlog::warn("score: cancelling batch {}: {}", batch, st.error().message);
      return false;
    }
    const std::string text = out->dump() + "\n";
    sink.write(text.data(), text.size());
    sink.done();
    return true;
  });
}

void ScoreServer::Impl::get_batch(const httplib::Request& req, httplib::Response& res) {
  const std::int64_t batch = std::stoll(req.matches[1].str());
  double wait_s = 30;
  if (req.has_param("wait_s")) {
    char* end = nullptr;
    const std::string v = req.get_param_value("wait_s");
    wait_s = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || wait_s < 0 || wait_s > 300)
      return refuse(res, 400, "wait_s: must be a number of seconds from 0 to 300");
  }
  std::shared_ptr<void> slot;
  if (wait_s > 0 && !(slot = reserve())) return too_many(res, service.config().max_requests);
  auto out =
      await(batch, std::chrono::milliseconds(static_cast<std::int64_t>(wait_s * 1000)), nullptr);
  if (!out) return refuse(res, 503, "kforged is stopping");
  if (out->contains("error")) return answer(res, 404, *out);
  answer(res, 200, *out);
}

Result<std::unique_ptr<ScoreServer>> ScoreServer::start(const app::Config& cfg, Env& env) {
  const std::string& listen = cfg.score.listen;
  auto colon = listen.rfind(':');
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  int port = std::atoi(listen.substr(colon + 1).c_str());
  const bool loopback = is_loopback(host);
  const std::string token = cfg.score.token;
  if (!loopback && token.empty())
    return fail("config", "score.listen: " + listen +
                              " is not a loopback address; set score.token (or "
                              "KFORGE_SCORE_TOKEN, 16 characters or more) to serve it there");
  score::ServiceOptions o;
  o.config = cfg.score;
  auto harness = verify::find_harness(cfg.verifier);
  o.fingerprint.harness = harness.ok() ? score::harness_fingerprint(*harness) : "none";
  o.fingerprint.gpu = score::gpu_model();
  o.evidence = evidence_blocks(cfg);
  KF_TRY(auto db, app::open_store(cfg));
  auto impl = std::make_unique<Impl>(std::move(db), std::move(o), env.clock());
  Impl* p = impl.get();
  auto& svr = p->svr;
  const int threads = cfg.score.max_requests + Impl::kSpareThreads;
  svr.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  svr.set_payload_max_length(256u << 20);
  // An idle keep-alive connection holds a thread too: let it go soon.
  svr.set_keep_alive_timeout(1);
  svr.set_pre_routing_handler([loopback, token](const httplib::Request& req,
                                                httplib::Response& res) {
    using H = httplib::Server::HandlerResponse;
    if (loopback && !is_loopback(host_of(req.get_header_value("Host")))) {
      refuse(res, 403, "this endpoint answers requests for a loopback host only");
      return H::Handled;
    }
    if (token.empty()) return H::Unhandled;
    std::string auth = req.get_header_value("Authorization");
    std::string presented = auth.rfind("Bearer ", 0) == 0 ? auth.substr(7) : "";
    if (presented.empty() || !constant_time_equal(presented, token)) {
      refuse(res, 401, "this endpoint needs its token (score.token): Authorization: Bearer TOKEN");
      return H::Handled;
    }
    return H::Unhandled;
  });
  svr.Post("/v1/score",
           [p](const httplib::Request& req, httplib::Response& res) { p->post_score(req, res); });
  svr.Get(R"(/v1/score/(\d+))",
          [p](const httplib::Request& req, httplib::Response& res) { p->get_batch(req, res); });
  svr.Get("/v1/queue", [p](const httplib::Request&, httplib::Response& res) {
    auto q = p->service.queue();
    if (!q.ok()) return refuse(res, 500, q.error().message);
    (*q)["requests"] = {{"waiting", p->waiting.load()},
                        {"max_requests", p->service.config().max_requests}};
    answer(res, 200, *q);
  });
  auto listen_fd = std::make_shared<int>(-1);  // the listening socket (the last one made)
  svr.set_socket_options([listen_fd](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    *listen_fd = sock;
  });
  errno = 0;
  p->port = port == 0 ? svr.bind_to_any_port(host) : (svr.bind_to_port(host, port) ? port : -1);
  if (p->port <= 0)
    return fail("io", "score.listen: cannot listen on " + listen + ": " +
                          (errno == 0 || errno == EADDRINUSE ? std::string("the address is in use")
                                                             : std::string(std::strerror(errno))));
  // httplib listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, compiled into the library):
  // past 5 connections not yet accepted, the kernel drops a client's SYN and the client retries
  // after 1, 3, 7, 15, 31 and 63 s, so trainers connecting at once on a busy host waited up to a
  // minute before kforged saw their requests. Listening again sets the backlog to as many
  // connections as the listener has threads.
  if (*listen_fd < 0 || ::listen(*listen_fd, threads) != 0)
    spdlog::warn("score.listen: cannot raise the listen backlog to {}: {}", threads,
                 *listen_fd < 0 ? std::string("no socket") : std::string(std::strerror(errno)));
  p->http = std::thread([p] { p->svr.listen_after_bind(); });
  p->ticker = std::thread([p] { p->tick_loop(); });
  return std::unique_ptr<ScoreServer>(new ScoreServer(std::move(impl)));
}

ScoreServer::ScoreServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScoreServer::~ScoreServer() {
  stop();
}
int ScoreServer::port() const {
  return impl_->port;
}
void ScoreServer::refuse_new() {
  impl_->refusing = true;
}
void ScoreServer::stop() {
  {
    std::lock_guard l(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
    impl_->cv.notify_all();
  }
  impl_->svr.stop();
  if (impl_->http.joinable()) impl_->http.join();
  if (impl_->ticker.joinable()) impl_->ticker.join();
}

}  // namespace kforge::daemon
