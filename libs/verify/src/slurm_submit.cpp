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

Status SlurmBackend::maybe_submit() {
  const auto& sc = opt_.verifier.slurm;
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(store::Stmt * fl, db_.cached(q()["slurm_in_flight"]));
  KF_TRY(auto in_flight, fl->one([](store::Stmt& r) { return r.int64(0); }));
  const std::int64_t full = static_cast<std::int64_t>(sc.samples_per_task) * sc.max_array_tasks;
  const std::int64_t room =
      std::min<std::int64_t>(full, sc.max_samples_in_flight - in_flight.value_or(0));
  if (room <= 0) return {};
  KF_TRY(const std::int64_t queued, queue_.waiting());
  if (queued == 0) {
    queued_since_ms_ = 0;
    return {};
  }
  if (queued_since_ms_ == 0) queued_since_ms_ = now;
  // A full array goes at once; a partial one after submit_interval_ms of waiting.
  if (queued < room && now - queued_since_ms_ < sc.submit_interval_ms) return {};
  if (now - last_submit_ms_ < std::min<std::int64_t>(sc.submit_interval_ms, 1000)) return {};
  last_submit_ms_ = now;
  queued_since_ms_ = 0;

  std::vector<Lease> leases;
  {
    KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
    while (static_cast<std::int64_t>(leases.size()) < room) {
      KF_TRY(auto leased, queue_.lease(owner_, now + lease_ms(), now));
      if (!leased) break;
      const VerifyJob& job = leased->job;
      const VerifyRequest& req = leased->request;  // the code of the job's repair round
      Lease l{job.job_id,
              job.run_id,
              job.sample_id,
              job.attempt,
              nlohmann::ordered_json::object(),
              req.cross_compile};
      if (req.code) {
        l.record["key"] = req.key;
        l.record["code"] = *req.code;
      }
      if (req.kernel_wrapper) l.record["kernel_wrapper"] = *req.kernel_wrapper;
      if (req.unitest_code) l.record["unitest_code"] = *req.unitest_code;
      l.record["job_id"] = l.job_id;
      leases.push_back(std::move(l));
    }
    KF_CHECK(tx.commit());
  }
  if (leases.empty()) return {};
  stats_.leased += leases.size();
  return submit(std::move(leases));
}

namespace {

// sbatch's command line for an array of `tasks` tasks in `dir` running `script`.
std::vector<std::string> sbatch_argv(const SlurmConfig& sc, std::size_t tasks,
                                     const std::string& dir, const std::string& script,
                                     const std::string& config_file) {
  std::vector<std::string> argv = {sc.sbatch,
                                   "--parsable",
                                   "--array=0-" + std::to_string(tasks - 1),
                                   "--job-name=" + sc.job_name,
                                   "--no-requeue",
                                   "--output=" + dir + "/task-%a.log",
                                   "--chdir=" + dir};
  if (!sc.partition.empty()) argv.push_back("--partition=" + sc.partition);
  if (!sc.account.empty()) argv.push_back("--account=" + sc.account);
  if (!sc.gres.empty()) argv.push_back("--gres=" + sc.gres);
  if (sc.gpus > 0) argv.push_back("--gpus=" + std::to_string(sc.gpus));
  if (!sc.time_limit.empty()) argv.push_back("--time=" + sc.time_limit);
  for (const auto& a : sc.extra_args) argv.push_back(a);
  argv.push_back(script);
  argv.push_back(sc.kforge);
  argv.push_back(dir);
  std::string config = sc.node_config.empty() ? config_file : sc.node_config;
  if (!config.empty()) {
    argv.push_back("-c");
    argv.push_back(config);
  }
  return argv;
}

}  // namespace

Status SlurmBackend::submit(std::vector<Lease> leases) {
  const auto& sc = opt_.verifier.slurm;
  const std::int64_t now = clock_.wall_ms();
  // One run per shard (so `kforge run cancel` can scancel a run's tasks), at most
  // samples_per_task samples each.
  std::stable_sort(leases.begin(), leases.end(),
                   [](const Lease& a, const Lease& b) { return a.run_id < b.run_id; });
  std::vector<std::vector<Lease*>> shards;
  for (auto& l : leases) {
    if (shards.empty() || shards.back().front()->run_id != l.run_id ||
        static_cast<int>(shards.back().size()) >= sc.samples_per_task)
      shards.emplace_back();
    shards.back().push_back(&l);
  }
  std::int64_t array_id = 0;
  std::string dir;
  auto give_back = [&](const std::string& why) -> Status {
    KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
    for (const auto& l : leases) {
      KF_TRY(bool ours, queue_.release(l.job_id, owner_, Release::requeue, why, clock_.wall_ms()));
      (void)ours;
    }
    if (array_id > 0) {
      KF_TRY(store::Stmt * st, db_.cached(q()["slurm_delete_array"]));
      st->bind(1, array_id);
      KF_CHECK(st->run());
    }
    return tx.commit();
  };
  {
    KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
    KF_TRY(store::Stmt * na, db_.cached(q()["slurm_new_array"]));
    na->bind(1, owner_).bind(2, now);
    KF_TRY(auto id, na->one([](store::Stmt& r) { return r.int64(0); }));
    array_id = id.value_or(0);
    dir = (fs::path(sc.shared_dir) / ("array-" + std::to_string(array_id))).string();
    KF_TRY(store::Stmt * sd, db_.cached(q()["slurm_array_set_dir"]));
    sd->bind(1, array_id).bind(2, dir).bind(3, static_cast<std::int64_t>(shards.size()));
    KF_CHECK(sd->run());
    for (std::size_t t = 0; t < shards.size(); ++t) {
      KF_TRY(store::Stmt * nt, db_.cached(q()["slurm_new_task"]));
      nt->bind(1, array_id)
          .bind(2, static_cast<std::int64_t>(t))
          .bind(3, shards[t].front()->run_id)
          .bind(4, static_cast<std::int64_t>(shards[t].size()))
          .bind(5, now);
      KF_CHECK(nt->run());
      for (std::size_t i = 0; i < shards[t].size(); ++i) {
        KF_TRY(store::Stmt * nj, db_.cached(q()["slurm_new_task_job"]));
        nj->bind(1, array_id)
            .bind(2, static_cast<std::int64_t>(t))
            .bind(3, static_cast<std::int64_t>(i))
            .bind(4, shards[t][i]->job_id)
            .bind(5, shards[t][i]->attempt);
        KF_CHECK(nj->run());
      }
    }
    KF_CHECK(tx.commit());
  }
  // The shards and the task script, then sbatch.
  std::error_code ec;
  fs::remove_all(dir, ec);  // left by a database that was reset
  fs::create_directories(dir, ec);
  Status written = ec ? Status(fail("io", dir + ": " + ec.message())) : Status();
  for (std::size_t t = 0; written.ok() && t < shards.size(); ++t) {
    std::string text;
    for (const auto* l : shards[t])
      text += l->record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    written = write_file_atomic(fs::path(dir) / ("shard-" + std::to_string(t) + ".jsonl"), text);
    // The run's required targets (one run per shard), which the task compiles for besides the
    // node's verifier.cross_compile: `kforge verify --cross-compile` (verify_task.sh).
    const auto& targets = shards[t].front()->targets;
    if (written.ok() && !targets.empty()) {
      std::string list;
      for (const auto& target : targets) list += (list.empty() ? "" : ",") + target;
      written =
          write_file_atomic(fs::path(dir) / ("shard-" + std::to_string(t) + ".targets"), list);
    }
  }
  const std::string script = (fs::path(dir) / "verify_task.sh").string();
  if (written.ok()) written = write_file_atomic(script, task_script());
  if (!written.ok()) {
    spdlog::error("verifier: writing the shards: {}", written.error().message);
    KF_CHECK(alert("submit", "writing the shards: " + written.error().message));
    return give_back("writing the Slurm shards: " + written.error().message);
  }
  std::vector<std::string> argv = sbatch_argv(sc, shards.size(), dir, script, opt_.config_file);
  auto env = environment_without(opt_.drop_env);
  auto r = run_command(this->env(), argv, std::chrono::milliseconds(sc.command_timeout_ms), &env);
  std::string why;
  if (!r.ok())
    why = r.error().message;
  else if (r->exit_code != 0)
    why = "sbatch exited " + std::to_string(r->exit_code) + ": " + first_line(r->err);
  std::string slurm_id;
  if (why.empty()) {
    slurm_id = first_line(r->out);
    if (auto semi = slurm_id.find(';'); semi != std::string::npos) slurm_id.resize(semi);
    if (slurm_id.empty() || slurm_id.find_first_not_of("0123456789") != std::string::npos)
      why = "sbatch printed no job id: '" + first_line(r->out) + "'";
  }
  if (!why.empty()) {
    spdlog::error("verifier: Slurm refused the array of {} samples: {}", leases.size(), why);
    KF_CHECK(alert("submit", why));
    std::error_code ignored;
    fs::remove_all(dir, ignored);
    return give_back("sbatch: " + why);
  }
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["slurm_array_submitted"]));
    st->bind(1, array_id).bind(2, slurm_id).bind(3, clock_.wall_ms());
    KF_CHECK(st->run());
  }
  KF_CHECK(clear_alert("submit"));
  spdlog::info("verifier: Slurm array {} ({} tasks, {} samples) in {}", slurm_id, shards.size(),
               leases.size(), dir);
  return {};
}

}  // namespace kforge::verify
