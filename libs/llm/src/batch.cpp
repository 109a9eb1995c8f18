// Batch mode's runner: creation, the public methods and the thread's loop. Requests waiting for
// an answer are attached to the line already in a batch, answered from a stored line, or
// collected into a new batch (recorded before it is sent) when enough have come or the first
// has waited llm.batch.collect_ms; each open batch takes its next step when due
// (batch_provider.cpp), and the lines' outcomes are handed back to the client.
// batch_impl.hpp lists the other parts.

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "batch_file.hpp"
#include "batch_impl.hpp"
#include "kforge/core/sha256.hpp"

namespace kforge::llm {

namespace {

constexpr std::int64_t kPruneMs = 30'000;
constexpr std::int64_t kRoomWaitMs = 60'000;

}  // namespace

BatchRunner::Impl::Impl(BatchRunnerOptions o) : o_(std::move(o)) {
  clock_ = o_.clock != nullptr ? o_.clock : &system_clock();
  auto [base, query] = batch_api_base(o_.chat_url);
  base_ = base;
  query_ = query;
  // The lines' url: the chat endpoint's path below the host, as the provider expects it.
  endpoint_ = query_.empty() ? kBatchChatEndpoint : "/chat/completions";
}

Status BatchRunner::Impl::start() {
  KF_CHECK(ledger_.open(o_.db_path, o_.db_busy_timeout_ms));
  // Beside the database: the batches' files while they are built, uploaded and read.
  spool_dir_ = o_.db_path + ".batches";
  std::error_code ec;
  std::filesystem::create_directories(spool_dir_, ec);
  if (ec)
    return fail("io", spool_dir_ + ": cannot be created (batch mode's files): " + ec.message());
  if (!o_.auth_header.empty()) headers_ = curl_slist_append(headers_, o_.auth_header.c_str());
  for (const auto& [k, v] : o_.cfg.extra_headers) {
    std::string h = k + ": " + v;
    headers_ = curl_slist_append(headers_, h.c_str());
  }
  headers_ = curl_slist_append(headers_, "Expect:");
  KF_CHECK(recover());
  thread_ = std::thread([this] { run(); });
  return {};
}

void BatchRunner::Impl::enqueue(Pending p) {
  {
    std::lock_guard lk(mu_);
    incoming_.push_back(std::move(p));
  }
  cv_.notify_one();
}

BatchGauges BatchRunner::Impl::gauges() const {
  std::lock_guard lk(gauge_mu_);
  return gauges_;
}

void BatchRunner::Impl::stop() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) {
    thread_.join();
    prune();
  }
  if (easy_ != nullptr) {
    curl_easy_cleanup(easy_);
    easy_ = nullptr;
  }
  curl_slist_free_all(headers_);
  headers_ = nullptr;
}

void BatchRunner::Impl::run() {
  pthread_setname_np(pthread_self(), "kf-llm-batch");  // 15 characters at most
  for (const auto& u : undeleted_) {
    Open b;
    b.id = u.id;
    b.key = u.key;
    spdlog::info("llm batch {}: deleting its files at the provider (left by an earlier process)",
                 u.key);
    delete_files(b, u.files, clock_->wall_ms());
  }
  undeleted_.clear();
  while (true) {
    std::vector<Pending> in;
    {
      std::lock_guard lk(mu_);
      if (stop_) break;
      in.swap(incoming_);
    }
    std::int64_t now = clock_->wall_ms();
    if (!in.empty()) {
      // Into the text store first: a request collected for the next batch keeps only its id.
      auto st = ledger_.stash(in);
      if (!st.ok())
        spdlog::warn("llm batch: requests kept in memory (the text store: {})", st.error().message);
    }
    for (auto& p : in) take(std::move(p), now);
    flush_due(now);
    for (auto it = open_.begin(); it != open_.end();) {
      Open& b = it->second;
      if (b.next_ms <= now) {
        bool finished = step(b);
        {
          std::lock_guard lk(mu_);
          if (stop_) break;
        }
        if (finished) {
          it = open_.erase(it);
          continue;
        }
      }
      ++it;
    }
    hand_over();
    publish();
    if (now - last_prune_ms_ >= kPruneMs) prune();
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, std::chrono::milliseconds(kBatchSliceMs),
                 [&] { return stop_ || !incoming_.empty(); });
  }
}

// A request waiting for its answer.
void BatchRunner::Impl::take(Pending p, std::int64_t now) {
  waiting_.insert(p.sha);
  if (in_batch_.count(p.sha) || collecting_ids_.count(p.sha)) return;
  if (auto line = ledger_.latest_line(p.sha, o_.chat_url)) {
    if ((line->line_state == "answered" || line->line_state == "applied") && line->raw) {
      // Answered before a restart: handed over from the stored line, never asked again.
      LineOutcome o;
      o.sha = p.sha;
      o.call = line->call;
      o.answered = true;
      // Handed over (and priced) once already: a replay is not billed again.
      o.replayed = line->line_state == "applied";
      o.http_status = 200;
      o.body = *line->raw;
      o.batch_key = line->key;
      o.batch = line->batch;  // marked applied with its llm_calls row (LineOutcome::batch)
      o.request = std::move(p.body);
      if (o.request.empty()) {
        auto body = ledger_.body(p);
        if (body.ok()) o.request = std::move(*body);
      }
      ready_.push_back(std::move(o));
      return;
    }
    // Still in a batch that is not done: that batch will answer it.
    if (line->line_state == "pending" && line->batch_state != "done") return;
  }
  if (collecting_.empty()) collect_since_ms_ = now;
  if (p.bytes == 0) p.bytes = p.body.size();
  if (p.text != 0) p.body = std::string();  // in the store: written to the input file from there
  collecting_bytes_ += p.bytes + 200;
  collecting_ids_.insert(p.sha);
  collecting_.push_back(std::move(p));
  flush_due(now);
}

void BatchRunner::Impl::flush_due(std::int64_t now) {
  const BatchConfig& bc = o_.cfg.batch;
  while (!collecting_.empty()) {
    bool full = static_cast<int>(collecting_.size()) >= bc.max_lines ||
                static_cast<std::int64_t>(collecting_bytes_) >= bc.max_bytes;
    if (!full && now - collect_since_ms_ < bc.collect_ms) return;
    auto st = make_batch(now);
    if (!st.ok()) {
      spdlog::error("llm batch: cannot record a new batch: {}", st.error().message);
      return;  // tried again next time round
    }
  }
}

// Records a batch of the collected requests (as many as the limits allow), state uploading; its
// input file is written to disk, not held in memory.
Status BatchRunner::Impl::make_batch(std::int64_t now) {
  const BatchConfig& bc = o_.cfg.batch;
  Open b;
  std::size_t n = 0;
  std::int64_t bytes = 0;
  Sha256 h;
  h.update(o_.chat_url);
  h.update(std::to_string(now));
  for (; n < collecting_.size() && static_cast<int>(n) < bc.max_lines; ++n) {
    auto size = static_cast<std::int64_t>(
        input_line_size(collecting_[n].sha, endpoint_, collecting_[n].bytes));
    if (n > 0 && bytes + size > bc.max_bytes) break;
    bytes += size;
    h.update(collecting_[n].sha);
  }
  b.key = h.hex_digest().substr(0, 24);
  b.state = "uploading";
  b.created_ms = now;
  b.input_path = spool(b, "input");
  std::span<const Pending> lines(collecting_.data(), n);
  auto body_of = [this](const Pending& p) { return ledger_.body(p); };
  KF_TRY(std::size_t written, write_input_file(b.input_path, endpoint_, lines, body_of));
  auto id = ledger_.add_batch(b.key, o_.chat_url, o_.cfg.model, lines, written, now);
  if (!id.ok()) {
    std::error_code ec;
    std::filesystem::remove(b.input_path, ec);  // made again with the batch, next time round
    return id.error();
  }
  b.id = *id;
  for (std::size_t i = 0; i < n; ++i) {
    b.shas.insert(collecting_[i].sha);
    if (!collecting_[i].call.empty() && collecting_[i].call != collecting_[i].sha)
      b.calls[collecting_[i].sha] = collecting_[i].call;
    in_batch_[collecting_[i].sha] = b.id;
    collecting_ids_.erase(collecting_[i].sha);
    collecting_bytes_ -= std::min(collecting_bytes_, collecting_[i].bytes + 200);
  }
  collecting_.erase(collecting_.begin(), collecting_.begin() + static_cast<std::ptrdiff_t>(n));
  if (!collecting_.empty()) collect_since_ms_ = now;
  spdlog::info("llm batch {}: {} requests, {} bytes", b.key, n, written);
  b.next_ms = now;
  {
    std::lock_guard lk(gauge_mu_);
    ++gauges_.created;
  }
  open_[b.id] = std::move(b);
  return {};
}

// Loads the batches an earlier process left open, and those whose files it left at the provider.
Status BatchRunner::Impl::recover() {
  if (!o_.cfg.batch.keep_files) {
    KF_TRY(undeleted_, ledger_.undeleted(o_.chat_url, o_.cfg.model));
  }
  KF_TRY(std::vector<BatchLedger::StoredBatch> found,
         ledger_.open_batches(o_.chat_url, o_.cfg.model));
  for (auto& s : found) {
    Open b;
    b.id = s.id;
    b.key = std::move(s.key);
    b.state = std::move(s.state);
    b.file_id = std::move(s.file_id);
    b.batch_id = std::move(s.batch_id);
    b.created_ms = s.created_ms;
    b.submitted_ms = s.submitted_ms;
    b.recovered = true;
    if (b.state == "uploading") {
      // Its input file again, from the recorded requests (read from the store a line at a time).
      std::vector<Pending> in;
      for (const auto& line : s.lines)
        in.push_back(Pending{line.sha, line.call, "",
                             line.text != 0 ? std::string() : line.body.value_or("{}"), line.text});
      b.input_path = spool(b, "input");
      auto body_of = [this](const Pending& p) { return ledger_.body(p); };
      KF_TRY(std::size_t written, write_input_file(b.input_path, endpoint_, in, body_of));
      (void)written;
    }
    for (const auto& line : s.lines) {
      if (line.state == "pending") {
        b.shas.insert(line.sha);
        if (line.call != line.sha) b.calls[line.sha] = line.call;
        in_batch_[line.sha] = b.id;
      }
    }
    spdlog::info("llm batch {}: resuming ({}, {} requests pending)", b.key, b.state, b.shas.size());
    open_[b.id] = std::move(b);
  }
  return {};
}

// One step of a batch; true when it is done.
bool BatchRunner::Impl::step(Open& b) {
  std::int64_t now = clock_->wall_ms();
  if (b.state == "uploading") return upload(b, now);
  if (b.state == "uploaded") return create(b, now);
  return poll(b, now);
}

// Drops the copies of answers the client has recorded (now and then, and at the end).
void BatchRunner::Impl::prune() {
  last_prune_ms_ = clock_->wall_ms();
  ledger_.prune();
}

void BatchRunner::Impl::hand_over() {
  if (ready_.empty()) return;
  wait_for_room();
  std::vector<LineOutcome> out;
  out.swap(ready_);
  for (const auto& o : out) waiting_.erase(o.sha);
  if (o_.deliver) o_.deliver(std::move(out));
}

// Waits (real time, in slices) until the client holds few enough outcomes that these fit in
// llm.batch.lines_in_memory, so that a batch's answers and requests are never all in memory at
// once; at most kRoomWaitMs, so a count that does not fall only slows the runner.
void BatchRunner::Impl::wait_for_room() {
  if (!o_.held) return;
  const auto limit = static_cast<std::int64_t>(std::max(1, o_.cfg.batch.lines_in_memory));
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRoomWaitMs);
  while (true) {
    std::int64_t held = o_.held();
    if (held <= 0 || held + static_cast<std::int64_t>(ready_.size()) <= limit) return;
    if (std::chrono::steady_clock::now() >= until) {
      spdlog::debug("llm batch: the client still holds {} outcomes; handing over {} more", held,
                    ready_.size());
      return;
    }
    std::unique_lock lk(mu_);
    if (stop_) return;
    cv_.wait_for(lk, std::chrono::milliseconds(kBatchSliceMs), [&] { return stop_; });
  }
}

void BatchRunner::Impl::publish() {
  std::lock_guard lk(gauge_mu_);
  gauges_.open = static_cast<int>(open_.size());
  int lines = 0;
  for (const auto& [id, b] : open_) lines += static_cast<int>(b.shas.size());
  gauges_.lines_in_flight = lines;
  gauges_.lines_waiting = static_cast<int>(collecting_.size());
}

// --- BatchRunner -----------------------------------------------------------------------------

Result<std::unique_ptr<BatchRunner>> BatchRunner::create(BatchRunnerOptions opts) {
  if (opts.db_path.empty())
    return fail("config",
                "llm.mode batch needs the store (store.path): batches are recorded there");
  auto impl = std::make_unique<Impl>(std::move(opts));
  KF_CHECK(impl->start());
  return std::unique_ptr<BatchRunner>(new BatchRunner(std::move(impl)));
}

BatchRunner::BatchRunner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchRunner::~BatchRunner() {
  stop();
}
void BatchRunner::enqueue(std::string line, std::string call, std::string label, std::string body,
                          std::int64_t text, std::size_t bytes) {
  impl_->enqueue(
      Pending{std::move(line), std::move(call), std::move(label), std::move(body), text, bytes});
}
BatchGauges BatchRunner::gauges() const {
  return impl_->gauges();
}
void BatchRunner::stop() {
  if (impl_) impl_->stop();
}

}  // namespace kforge::llm
