// A call's request while it waits for its answer: in batch mode not held in memory. There every
// request of a stage waits at once, for up to the batch's completion window, and the prompt and
// its JSON body are most of what a waiting call would hold (tens of KB each). The body goes into
// the text store at submit (store/texts.hpp: the same text the client records with the call in
// llm_calls, stored once by its SHA-256), the call keeps its id and the request's identity, and
// the checkpoint reads the body back for the stage output. A text is never deleted, so one
// stored for a call that a crash cut short is the one its next attempt finds. An interactive
// call (LlmGateway::stores_request_bodies false) holds its body in memory, as it waits seconds.

#include <spdlog/spdlog.h>

#include "kforge/store/texts.hpp"
#include "scheduler_internal.hpp"

namespace kforge::pipeline {

void Scheduler::hold_request(Call& call, const std::string& model, llm::ChatRequest& req) {
  std::string body = llm_.request_json(model, req);
  call.asker = req.asker;
  // An interactive call waits for seconds, a few dozen at a time: its body stays in memory, and
  // the stage pays no hashing, compressing, writing and reading back of it.
  if (!llm_.stores_request_bodies(model)) {
    call.request_json = body;
    req.body = std::move(body);  // the client takes it rather than serializing req again
    return;
  }
  auto id = store::put_text(store_.db(), body);
  if (id.ok()) {
    call.request_text = *id;
  } else {
    // Kept in memory instead: the checkpoint needs it, and the store may answer later.
    spdlog::debug("job {}: the request is held in memory (the text store: {})", call.job.id,
                  id.error().message);
    call.request_json = body;
  }
  req.body = std::move(body);
}

Result<std::string> Scheduler::held_request_json(const Call& call) {
  if (call.request_text == 0) return call.request_json;
  return store::get_text(store_.db(), call.request_text);
}

// A failed call's identity (the client gives an answer's with it), from the body held for it.
std::string Scheduler::failed_request_sha256(const Call& call, const std::string& body) const {
  llm::ChatRequest who;
  who.asker = call.asker;
  who.round = call.job.repair_round;
  return llm_.request_sha256_of(call.model, who, body);
}

}  // namespace kforge::pipeline
