#include "slurm_internal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <spdlog/spdlog.h>

#include "kforge/core/fs.hpp"
#include "kforge/verify/store.hpp"

namespace kforge::verify {

using namespace slurm;
namespace fs = std::filesystem;

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::create(VerifyQueue& queue,
                                                           SlurmBackendOptions options,
                                                           std::string owner,
                                                           const std::string& owner_glob) {
  store::Db& db = queue.db();
  const auto& sc = options.verifier.slurm;
  if (sc.shared_dir.empty()) return fail("config", "verifier.slurm.shared_dir is not set");
  std::error_code ec;
  fs::create_directories(sc.shared_dir, ec);
  if (ec) return fail("io", "verifier.slurm.shared_dir " + sc.shared_dir + ": " + ec.message());
  if (task_script().empty()) return fail("config", "the Slurm task script is not built in");
  std::unique_ptr<SlurmBackend> s(new SlurmBackend(queue, std::move(options), owner));
  const std::int64_t now = s->clock_.wall_ms();
  // An earlier kforged killed between sbatch and recording its answer left an array without a
  // job id that may be running: find it in Slurm by its directory and watch it, rather than
  // verify its samples twice. What is not found was never submitted and is dropped below.
  std::vector<std::pair<std::int64_t, std::string>> unrecorded;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["slurm_unsubmitted_arrays"]));
    KF_CHECK(st->each([&](store::Stmt& r) { unrecorded.emplace_back(r.int64(0), r.text(1)); }));
  }
  std::vector<std::pair<std::int64_t, std::string>> found;
  if (!unrecorded.empty()) {
    const auto& cfg = s->opt_.verifier.slurm;  // `options` was moved into the backend
    auto r = run_command(s->env(), {cfg.scontrol, "-o", "show", "job"},
                         std::chrono::milliseconds(cfg.command_timeout_ms));
    if (!r.ok() || r->exit_code != 0) {
      spdlog::warn(
          "verifier: {} Slurm arrays of an earlier kforged have no recorded job id and Slurm "
          "cannot be asked whether they run ({}): their samples are verified again",
          unrecorded.size(), r.ok() ? first_line(r->err) : r.error().message);
    } else {
      for (const auto& [id, dir] : unrecorded)
        if (auto job = array_job_in_dir(r->out, dir); !job.empty()) found.emplace_back(id, job);
    }
  }
  {
    KF_TRY(store::Transaction tx, store::Transaction::begin(db));
    for (const auto& [id, job] : found) {
      KF_TRY(store::Stmt * st, db.cached(q()["slurm_array_submitted"]));
      st->bind(1, id).bind(2, job).bind(3, now);
      KF_CHECK(st->run());
      spdlog::info(
          "verifier: Slurm array {} was submitted by an earlier kforged that died before "
          "recording it; watching it",
          job);
    }
    for (const char* name : {"slurm_drop_unsubmitted_jobs", "slurm_drop_unsubmitted_tasks",
                             "slurm_drop_unsubmitted_arrays"}) {
      KF_TRY(store::Stmt * st, db.cached(q()[name]));
      if (std::string_view(name) != "slurm_drop_unsubmitted_jobs") st->bind(1, now);
      KF_CHECK(st->run());
    }
    // The jobs in live tasks of an earlier kforged of this daemon become ours again, before
    // the others it was verifying are taken back.
    std::vector<std::int64_t> live;
    {
      KF_TRY(store::Stmt * st, db.cached(q()["slurm_adoptable_jobs"]));
      st->bind(1, owner_glob);
      KF_CHECK(st->each([&](store::Stmt& r) { live.push_back(r.int64(0)); }));
    }
    KF_TRY(const std::int64_t adopted,
           queue.adopt(live, owner, owner_glob, now + s->lease_ms(), now));
    KF_TRY(store::Stmt * arrays, db.cached(q()["slurm_adopt_arrays"]));
    arrays->bind(1, owner).bind(2, owner_glob);
    KF_CHECK(arrays->run());
    if (db.changes() > 0)
      spdlog::info("verifier: watching {} Slurm array jobs of an earlier kforged ({} samples)",
                   db.changes(), adopted);
    KF_TRY(const std::int64_t taken, queue.reclaim(owner_glob, now, owner));
    if (taken > 0)
      spdlog::warn("verifier: took back {} jobs an earlier kforged was verifying", taken);
    KF_CHECK(tx.commit());
  }
  return s;
}

std::int64_t SlurmBackend::lease_ms() const {
  // Renewed every step while kforged runs; the length only matters once it has died.
  return std::max<std::int64_t>(opt_.verifier.slurm.poll_ms * 20, 600'000);
}

std::string SlurmBackend::describe() const {
  const auto& sc = opt_.verifier.slurm;
  return "Slurm arrays of up to " + std::to_string(sc.max_array_tasks) + " tasks x " +
         std::to_string(sc.samples_per_task) + " samples" +
         (sc.partition.empty() ? "" : " on partition " + sc.partition) + ", shared directory " +
         sc.shared_dir;
}

bool SlurmBackend::idle() const {
  return draining_;
}

Status SlurmBackend::alert(const std::string& kind, const std::string& message) {
  KF_TRY(store::Stmt * st, db_.cached(q()["slurm_alert_set"]));
  st->bind(1, kind).bind(2, message).bind(3, clock_.wall_ms());
  return st->run();
}

Status SlurmBackend::clear_alert(const std::string& kind) {
  KF_TRY(store::Stmt * st, db_.cached(q()["slurm_alert_clear"]));
  st->bind(1, kind);
  return st->run();
}

Status SlurmBackend::step(std::chrono::milliseconds max_wait) {
  const auto t0 = clock_.steady_now();
  if (!draining_) KF_CHECK(maybe_submit());
  std::int64_t now = clock_.wall_ms();
  if (now - last_poll_ms_ >= opt_.verifier.slurm.poll_ms) {
    last_poll_ms_ = now;
    KF_CHECK(poll());
  }
  now = clock_.wall_ms();
  if (now - last_renew_ms_ >= lease_ms() / 4) {
    KF_CHECK(queue_.renew(owner_, now + lease_ms()));
    last_renew_ms_ = now;
  }
  auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady_now() - t0);
  auto rest = std::min<std::chrono::milliseconds>(
      max_wait, std::chrono::milliseconds(opt_.verifier.slurm.poll_ms));
  if (spent < rest) clock_.sleep_for(rest - spent);
  return {};
}

}  // namespace kforge::verify
