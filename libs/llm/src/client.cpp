// The LLM client's front: creation (the key, the store, the transport, batch mode, the two
// threads) and the public methods, callable from any thread: submit (the prompt-size guard, the
// identity, to the audit store for a replay lookup or straight to the loop), call, stats, limits
// reloaded, drain and shutdown. client_impl.hpp lists the other parts.

#include <spdlog/spdlog.h>

#include <future>

#include "client_impl.hpp"
#include "identity.hpp"
#include "kforge/llm/errors.hpp"

namespace kforge::llm {

Client::Impl::Impl(const LlmConfig& cfg, ClientOptions opts)
    : ep_(cfg),
      clock_(opts.clock != nullptr ? opts.clock : &system_clock()),
      audit_(ep_, access_, meter_, clock_),
      lim_(cfg),
      rng_(opts.jitter_seed != 0 ? opts.jitter_seed : std::random_device{}()) {
  access_.set_url(chat_url(cfg));
}

Client::Impl::~Impl() {
  shutdown(Millis(0));
}

Status Client::Impl::start(const ClientOptions& opts) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (ep_.provider == Provider::azure && deployment().empty())
    return fail(llm_error(ErrorKind::config,
                          "llm.azure_deployment (or llm.model) must name the deployment",
                          Transient::no));
  EnvLookup env = opts.env ? opts.env : process_env();
  if (!ep_.api_key_env.empty()) {
    if (auto k = env(ep_.api_key_env); k && !k->empty()) access_.set_key(*k);
  }
  const std::string& key = access_.key();
  if (key.empty() && !ep_.api_key_env.empty())
    spdlog::info("llm: ${} is not set; sending no API key to {}", ep_.api_key_env, url());
  if (!opts.db_path.empty()) KF_CHECK(audit_.open(opts.db_path, opts.db_busy_timeout_ms));
  std::string auth = key.empty() ? std::string() : auth_header(ep_.provider, key);
  KF_CHECK(transport_.open(ep_, auth, static_cast<long>(lim_.max_in_flight * 2 + 4)));
  apply_limits(lim_, clock_->steady_now());
  if (ep_.mode_of(ep_.model) == Mode::batch) {
    BatchRunnerOptions bo;
    bo.cfg = ep_;
    bo.chat_url = url();
    bo.auth_header = auth;
    bo.clock = clock_;
    bo.db_path = opts.db_path;
    bo.db_busy_timeout_ms = opts.db_busy_timeout_ms;
    bo.redact = [this](std::string t) { return access_.redact(std::move(t)); };
    bo.deliver = [this](std::vector<LineOutcome> v) { take_batch_outcomes(std::move(v)); };
    bo.held = [held = outcomes_held_] { return held->load(); };
    KF_TRY(batch_, BatchRunner::create(std::move(bo)));
  }
  audit_.start([this](std::vector<std::unique_ptr<Call>> misses, int looked_up) {
    take_misses(std::move(misses), looked_up);
  });
  thread_ = std::thread([this] { run(); });
  return {};
}

void Client::Impl::submit(ChatRequest req, Callback done, std::optional<std::string> offline) {
  if (std::int64_t cap = max_prompt_tokens_.load(); cap > 0) {
    std::size_t chars = 0;
    for (const auto& m : req.messages) chars += m.content.size();
    std::int64_t est = estimate_prompt_tokens(chars, req.messages.size());
    if (est > cap) {
      meter_.failed_at_once("too_large", Meter::Counted::now);
      std::string m = "POST " + url() + (req.label.empty() ? "" : " [" + req.label + "]") +
                      ": the prompt is about " + std::to_string(est) +
                      " tokens (estimated), above llm.max_prompt_tokens (" + std::to_string(cap) +
                      "); not sent";
      spdlog::warn("llm: {}", m);
      done(fail(llm_error(ErrorKind::too_large, m, Transient::no)));
      return;
    }
  }
  auto c = std::make_unique<Call>();
  c->body = req.body.empty() ? request_body(ep_, req) : std::move(req.body);
  req.body = std::string();
  c->sha = request_identity(url(), c->body, req.asker, req.round);
  c->req = std::move(req);
  // In batch mode the body is the request from here on: the messages are read back from it only
  // if it is asked interactively or with a larger budget (restore_messages).
  if (batch_ && !offline) c->req.messages = std::vector<ChatMessage>();
  // And with the body in the store already, not even the body: every request of a stage is
  // submitted at once, and would otherwise wait here, at the audit store and in the runner's
  // queue until the runner has stored it. (A request that may not be coalesced with an identical
  // one may be sent interactively: it keeps its body.)
  if (batch_ && !offline && c->req.stored_body != 0 && c->req.replay == Replay::allow) {
    c->body_text = c->req.stored_body;
    c->body_bytes = c->body.size();
    c->body = std::string();
  }
  c->callbacks.push_back(std::move(done));
  c->offline = std::move(offline);
  c->submitted = clock_->steady_now();
  c->seq = next_seq_++;
  meter_.submitted();
  // A request that may be answered from the store goes to the audit store first.
  bool lookup = audit_.recording() && replay_enabled_ && c->req.replay == Replay::allow;
  bool accepted = false;
  {
    std::lock_guard lk(mu_);
    if (accepting_) {
      accepted = true;
      if (lookup) {
        ++lookups_pending_;  // under mu_, so the loop never sees "stopping" without it
      } else {
        incoming_.push_back(std::move(c));
      }
    }
  }
  if (accepted) {
    if (lookup) {
      audit_.look_up(std::move(c));
    } else {
      transport_.wakeup();
    }
    return;
  }
  meter_.failed_at_once("cancelled", Meter::Counted::already);
  c->callbacks[0](fail(llm_error(
      ErrorKind::cancelled, "POST " + url() + ": the LLM client is shut down", Transient::yes)));
}

Result<ChatResponse> Client::Impl::call(ChatRequest req) {
  if (std::this_thread::get_id() == audit_.thread_id() ||
      std::this_thread::get_id() == thread_.get_id())
    return fail(llm_error(ErrorKind::usage,
                          "Client::call() from a completion callback would deadlock",
                          Transient::no));
  std::promise<Result<ChatResponse>> p;
  auto f = p.get_future();
  submit(std::move(req), [&p](Result<ChatResponse> r) { p.set_value(std::move(r)); });
  return f.get();
}

void Client::Impl::record_failure(ChatRequest req, int http_status, std::string error) {
  auto c = std::make_unique<Call>();
  c->body = request_body(ep_, req);
  c->sha = request_identity(url(), c->body, req.asker, req.round);
  c->req = std::move(req);
  c->submitted = clock_->steady_now();
  c->attempts = 1;
  c->last_status = http_status;
  c->once = true;
  c->result = llm_error(ErrorKind::http,
                        access_.where(*c) + ": a failed line of a batch result file: " +
                            access_.redact(std::move(error)),
                        Transient::yes);
  audit_.record(std::move(c));
}

std::string Client::Impl::request_json(const ChatRequest& req) const {
  return request_body(ep_, req);
}

std::string Client::Impl::request_sha256(const ChatRequest& req) const {
  return request_identity(url(), request_body(ep_, req), req.asker, req.round);
}

void Client::Impl::reload_limits(const LlmConfig& cfg) {
  {
    std::lock_guard lk(mu_);
    reload_ = cfg;
  }
  transport_.wakeup();
}

Stats Client::Impl::stats() const {
  Stats s = meter_.snapshot();
  if (batch_) {
    BatchGauges g = batch_->gauges();
    s.batches_open = g.open;
    s.batch_lines_in_flight = g.lines_in_flight;
    s.batch_lines_waiting = g.lines_waiting;
    s.batches_created = g.created;
    s.batches_adopted = g.adopted;
    s.batch_lines_answered = g.lines_answered;
    s.batch_lines_failed = g.lines_failed;
    s.batch_poll_errors = g.poll_errors;
  }
  return s;
}

void Client::Impl::drain() {
  {
    std::lock_guard lk(mu_);
    accepting_ = false;
    if (!stop_requested_) {
      stop_requested_ = true;
      grace_deadline_ = TimePoint::max();
    }
  }
  transport_.wakeup();
}

void Client::Impl::shutdown(Millis grace) {
  {
    std::lock_guard lk(mu_);
    accepting_ = false;
    auto deadline = clock_->steady_now() + grace;
    if (!stop_requested_ || deadline < grace_deadline_) grace_deadline_ = deadline;
    stop_requested_ = true;
  }
  transport_.wakeup();
  auto self = std::this_thread::get_id();
  if (self == thread_.get_id() || self == audit_.thread_id()) return;  // from a callback
  std::lock_guard jl(join_mu_);
  if (thread_.joinable()) thread_.join();  // the loop tells the audit store to finish
  audit_.join();
  if (batch_) batch_->stop();  // its batches stay recorded for the next start
}

void Client::Impl::take_misses(std::vector<std::unique_ptr<Call>> misses, int looked_up) {
  {
    std::lock_guard lk(mu_);
    for (auto& c : misses) incoming_.push_back(std::move(c));
    lookups_pending_ -= looked_up;
  }
  if (!misses.empty()) transport_.wakeup();
}

// --- Client ----------------------------------------------------------------------------------

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::create(const LlmConfig& cfg, ClientOptions opts) {
  auto impl = std::make_unique<Impl>(cfg, opts);
  KF_CHECK(impl->start(opts));
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

void Client::answer(ChatRequest req, std::string response_body, Callback done) {
  impl_->submit(std::move(req), std::move(done), std::move(response_body));
}

void Client::record_failure(ChatRequest req, int http_status, std::string error) {
  impl_->record_failure(std::move(req), http_status, std::move(error));
}

void Client::submit(ChatRequest req, Callback done) {
  impl_->submit(std::move(req), std::move(done));
}
Result<ChatResponse> Client::call(ChatRequest req) {
  return impl_->call(std::move(req));
}
std::string Client::request_sha256(const ChatRequest& req) const {
  return impl_->request_sha256(req);
}
std::string Client::request_json(const ChatRequest& req) const {
  return impl_->request_json(req);
}
std::string Client::request_sha256(const ChatRequest& req, const std::string& body) const {
  return request_identity(impl_->url(), body, req.asker, req.round);
}
const std::string& Client::url() const {
  return impl_->url();
}
void Client::reload_limits(const LlmConfig& cfg) {
  impl_->reload_limits(cfg);
}
Stats Client::stats() const {
  return impl_->stats();
}
void Client::drain() {
  impl_->drain();
}
void Client::shutdown(std::chrono::milliseconds grace) {
  impl_->shutdown(grace);
}

}  // namespace kforge::llm
