// Answers that do not come from the wire, on the network loop: batch mode (a request goes to the
// BatchRunner, batch.hpp; its line's outcome comes back here) and offline answers
// (Client::answer). An answer goes through the same parsing, pricing (at the batch rate), audit
// row and callback as one from the wire; a failed or expired line goes into the next batch or to
// the interactive endpoint.

#include <spdlog/spdlog.h>

#include <algorithm>

#include "client_impl.hpp"
#include "completion.hpp"
#include "identity.hpp"
#include "kforge/llm/errors.hpp"

namespace kforge::llm {

// A 200 answer from a batch (or an offline result file): parsed, priced at the batch rate and
// finished like one from the wire; a cut answer is asked again with a larger budget. A line
// handed over before (`billed` false) costs nothing: its first row carries its price.
void Client::Impl::apply_answer(Call* c, std::string body, TimePoint now, bool billed) {
  c->resp = std::move(body);
  ChatResponse r;
  auto perr = read_completion(*c, c->resp, access_, ep_.max_tokens, r);
  if (billed) count_usage(r, now, *c, Channel::batch);
  c->resp_fields = r;
  if (!perr) {
    finish(c, std::move(r));
    return;
  }
  if (kind_of(*perr) == ErrorKind::truncated && !c->offline && enlarge(c, r, *perr)) return;
  finish(c, std::move(*perr));
}

bool Client::Impl::restore_request(Call& c, std::string request) {
  if (!request.empty()) {
    c.body = std::move(request);
  } else if (c.body.empty() && !c.req.messages.empty()) {
    c.body = request_body(ep_, c.req);
  }
  return !c.body.empty();
}

// The messages of a call whose request came back from the store: read from its body, which
// request_body wrote from them (reading them back and writing them again gives the same bytes).
void Client::Impl::restore_messages(Call& c) {
  if (!c.req.messages.empty() || c.body.empty()) return;
  auto j = nlohmann::json::parse(c.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("messages") || !j["messages"].is_array())
    return;
  for (const auto& m : j["messages"])
    if (m.is_object() && m.contains("role") && m["role"].is_string() && m.contains("content") &&
        m["content"].is_string())
      c.req.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
}

void Client::Impl::to_batch(Call* c) {
  c->in_batch = true;
  ++c->batch_tries;
  c->line = line_identity(*c, ep_);
  // Its body in the store (ChatRequest::stored_body) while it holds none; a body it holds (asked
  // again with a larger budget, or back from a batch) is stored by the runner.
  bool stored = c->body.empty() && c->body_text != 0;
  batch_->enqueue(c->line, c->sha, c->req.label, std::move(c->body), stored ? c->body_text : 0,
                  stored ? c->body_bytes : 0);
  c->body_text = 0;
  c->outcome.release();  // what it held of an earlier outcome goes with the body
  // A batch's requests wait here for hours, every request of a stage at once: the call keeps
  // neither its body nor its messages. The runner puts the body into the store, and the line's
  // outcome comes back with it (restore_request).
  c->body = std::string();
  c->req.messages = std::vector<ChatMessage>();
}

// The runner's thread: outcomes for the loop.
void Client::Impl::take_batch_outcomes(std::vector<LineOutcome> v) {
  outcomes_held_->fetch_add(static_cast<std::int64_t>(v.size()));
  {
    std::lock_guard lk(mu_);
    for (auto& o : v) batch_outcomes_.push_back(std::move(o));
  }
  transport_.wakeup();
}

// An answer from a batch goes through the same parsing, recording and delivery as one from
// the wire; a failed or expired line goes into the next batch, or to the interactive
// endpoint (llm.batch_fallback), until llm.batch.max_attempts.
void Client::Impl::take_batch_results(TimePoint now) {
  std::vector<LineOutcome> outs;
  {
    std::lock_guard lk(mu_);
    outs.swap(batch_outcomes_);
  }
  for (auto& o : outs) {
    auto it = by_hash_.find(o.call.empty() ? o.sha : o.call);
    // Only the line the call waits for now (not the cut line a continuation replaced).
    if (it == by_hash_.end() || !it->second->in_batch || it->second->line != o.sha) {
      outcomes_held_->fetch_sub(1);
      continue;
    }
    Call* c = it->second;
    c->in_batch = false;
    c->outcome = OutcomeHold(outcomes_held_);
    if (!restore_request(*c, std::move(o.request))) {
      // Its line was recorded without it (before migration 0035) and the call holds none.
      finish(c, llm_error(ErrorKind::http,
                          access_.where(*c) + ": batch line " + o.sha.substr(0, 12) +
                              ": its request is not in the store; asked again later",
                          Transient::yes));
      continue;
    }
    c->attempts = std::max(c->attempts, 1);
    c->last_status = o.http_status;
    if (o.answered) {
      if (o.batch > 0) c->batch_lines.emplace_back(o.batch, o.sha);
      apply_answer(c, std::move(o.body), now, !o.replayed);
      continue;
    }
    c->resp = o.body;
    if (!o.run_level.empty()) {
      // Every batch would be refused the same way: not resubmitted; the run pauses.
      finish(c, llm_error(kind_of(o.run_level), access_.where(*c) + ": " + o.error, Transient::no));
      continue;
    }
    bool more = c->batch_tries < ep_.batch.max_attempts && !stop_requested();
    if (ep_.batch_fallback == BatchFallback::interactive && !stop_requested()) {
      spdlog::info("llm: {}; asking the interactive endpoint", o.error);
      restore_messages(*c);
      c->outcome.release();  // an interactive call now (llm.max_in_flight bounds those)
      c->attempts = 0;
      ready_.push_back(c);
    } else if (more) {
      spdlog::info("llm: {}; into the next batch", o.error);
      to_batch(c);
    } else {
      finish(c, llm_error(ErrorKind::http,
                          access_.where(*c) + ": " + o.error + " (batch " +
                              std::to_string(c->batch_tries) + "/" +
                              std::to_string(ep_.batch.max_attempts) + ")",
                          Transient::yes));
    }
  }
}

}  // namespace kforge::llm
