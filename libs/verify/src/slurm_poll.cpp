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
#include "kforge/verify/verdict_line.hpp"

namespace kforge::verify {

using namespace slurm;
namespace fs = std::filesystem;

Result<bool> SlurmBackend::newer_open(std::int64_t job_id, std::int64_t array_id) {
  KF_TRY(store::Stmt * st, db_.cached(q()["slurm_newer_open"]));
  st->bind(1, job_id).bind(2, array_id);
  KF_TRY(auto n, st->one([](store::Stmt& r) { return r.int64(0); }));
  return n.value_or(0) > 0;
}

Status SlurmBackend::settle_stale(std::int64_t array_id, int task, std::int64_t idx) {
  KF_TRY(store::Stmt * so, db_.cached(q()["slurm_set_outcome"]));
  so->bind(1, array_id).bind(2, static_cast<std::int64_t>(task)).bind(3, idx).bind(4, "dropped");
  ++stats_.lost;
  return so->run();
}

Status SlurmBackend::store_line(std::int64_t array_id, int task, const std::string& line,
                                int& stored) {
  auto parsed = verdict_line_from_json(line);
  if (!parsed.ok()) {
    spdlog::warn("verifier: array {} task {}: {}: {}", array_id, task, parsed.error().message,
                 line.substr(0, 200));
    return {};
  }
  VerdictLine& got = parsed.value();
  const std::int64_t idx = got.index;
  KF_TRY(store::Stmt * tj, db_.cached(q()["slurm_task_job"]));
  tj->bind(1, array_id).bind(2, static_cast<std::int64_t>(task)).bind(3, idx);
  KF_TRY(auto sent, tj->one([](store::Stmt& r) {
    return std::make_pair(r.int64(0), static_cast<int>(r.int64(1)));  // job, attempt
  }));
  if (!sent) return {};  // settled already (read again after a restart)
  // The job's repair round is the one whose code the shard carried.
  KF_TRY(auto row, queue_.job(sent->first));
  if (!row) return {};
  VerifyJob job = row->job;
  job.attempt = sent->second;
  KF_TRY(bool stale, newer_open(job.job_id, array_id));
  if (stale) return settle_stale(array_id, task, idx);
  VerifyResult& v = got.result;
  if (v.key != row->key) {
    spdlog::warn("verifier: array {} task {} line {} names '{}', the shard '{}': ignored", array_id,
                 task, idx, v.key, row->key);
    return {};
  }

  const std::int64_t now = clock_.wall_ms();
  KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
  // As the local pool's verdicts: to 'done', to the next repair round, or back to the queue.
  KF_TRY(VerdictOutcome out, queue_.store_verdict(owner_, job, v, now));
  const bool ours = out != VerdictOutcome::lost;
  const bool infrastructure = out == VerdictOutcome::requeued;
  const char* outcome = !ours ? "dropped" : infrastructure ? "requeued" : "stored";
  KF_TRY(store::Stmt * so, db_.cached(q()["slurm_set_outcome"]));
  so->bind(1, array_id).bind(2, static_cast<std::int64_t>(task)).bind(3, idx).bind(4, outcome);
  KF_CHECK(so->run());
  KF_TRY(store::Stmt * tc, db_.cached(q()["slurm_task_counts"]));
  tc->bind(1, array_id)
      .bind(2, static_cast<std::int64_t>(task))
      .bind(3, ours && !infrastructure ? 1 : 0)
      .bind(4, ours && infrastructure ? 1 : 0)
      .bind(5, now);
  KF_CHECK(tc->run());
  KF_CHECK(tx.commit());
  if (!ours) {
    ++stats_.lost;
  } else if (infrastructure) {
    ++stats_.requeued;
    spdlog::warn("verifier: {} goes back to the queue: {}", v.key, v.detail);
  } else {
    if (out == VerdictOutcome::to_repair) ++stats_.to_repair;
    ++stats_.stored;
    ++stored;
    ++stats_.by_verdict[std::string(to_string(v.verdict))];
    if (v.verified()) ++stats_.verified;
  }
  return {};
}

Status SlurmBackend::read_results(std::int64_t array_id, const std::string& dir, int task,
                                  int& stored) {
  const fs::path file = fs::path(dir) / ("result-" + std::to_string(task) + ".jsonl");
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};  // not started yet
  std::int64_t& offset = offsets_[{array_id, task}];
  in.seekg(0, std::ios::end);
  const std::int64_t size = in.tellg();
  if (size < offset) offset = 0;  // rewritten
  if (size == offset) return {};
  in.seekg(offset);
  std::string chunk(static_cast<std::size_t>(size - offset), '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t pos = 0;
  while (true) {
    auto nl = chunk.find('\n', pos);
    if (nl == std::string::npos) break;  // a line still being written
    if (nl > pos) KF_CHECK(store_line(array_id, task, chunk.substr(pos, nl - pos), stored));
    pos = nl + 1;
  }
  offset += static_cast<std::int64_t>(pos);
  return {};
}

Status SlurmBackend::end_task(std::int64_t array_id, const std::string& slurm_id, int task,
                              const std::string& state, const std::string& slurm_state,
                              const std::string& exit_code) {
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
  std::vector<std::pair<std::int64_t, std::int64_t>> open;  // idx, job
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["slurm_unfinished"]));
    st->bind(1, array_id).bind(2, static_cast<std::int64_t>(task));
    KF_CHECK(st->each([&](store::Stmt& r) { open.emplace_back(r.int64(0), r.int64(1)); }));
  }
  const std::string why = "Slurm task " + slurm_id + "_" + std::to_string(task) + " ended " +
                          (slurm_state.empty() ? state : slurm_state) +
                          (exit_code.empty() ? "" : " (exit " + exit_code + ")") +
                          " before verifying it";
  int requeued = 0;
  for (const auto& [idx, job] : open) {
    KF_TRY(bool stale, newer_open(job, array_id));
    if (stale) {
      KF_CHECK(settle_stale(array_id, task, idx));
      continue;
    }
    KF_TRY(store::Stmt * cnt, db_.cached(q()["slurm_times_requeued"]));
    cnt->bind(1, job);
    KF_TRY(auto times, cnt->one([](store::Stmt& r) { return r.int64(0); }));
    const bool give_up = times.value_or(0) + 1 >= kMaxRequeues;
    KF_TRY(auto queued, queue_.job(job));
    bool cancelled = false;
    // A cancelled run's job ends with its task (kforge run cancel scancels the run's tasks).
    if (queued) {
      KF_TRY(cancelled, queue_.run_cancelled(queued->job.run_id));
    }
    bool released = false;
    if (cancelled) {
      KF_TRY(released, queue_.release(job, owner_, Release::cancel, "the run was cancelled", now));
    } else if (give_up) {
      KF_TRY(
          released,
          queue_.release(job, owner_, Release::fail,
                         why + "; given up after " + std::to_string(kMaxRequeues) + " tasks", now));
    } else {
      KF_TRY(released, queue_.release(job, owner_, Release::requeue, why, now));
    }
    const bool ours = released && !cancelled;
    if (ours) ++requeued;
    KF_TRY(store::Stmt * so, db_.cached(q()["slurm_set_outcome"]));
    so->bind(1, array_id)
        .bind(2, static_cast<std::int64_t>(task))
        .bind(3, idx)
        .bind(4, ours ? "requeued" : "dropped");
    KF_CHECK(so->run());
  }
  {
    KF_TRY(store::Stmt * tc, db_.cached(q()["slurm_task_counts"]));
    tc->bind(1, array_id).bind(2, static_cast<std::int64_t>(task)).bind(3, 0).bind(4, requeued);
    tc->bind(5, now);
    KF_CHECK(tc->run());
    KF_TRY(store::Stmt * te, db_.cached(q()["slurm_task_end"]));
    te->bind(1, array_id)
        .bind(2, static_cast<std::int64_t>(task))
        .bind(3, state)
        .bind(4, slurm_state)
        .bind(5, exit_code)
        .bind(6, now);
    KF_CHECK(te->run());
    KF_TRY(store::Stmt * ae, db_.cached(q()["slurm_array_end"]));
    ae->bind(1, array_id).bind(2, now);
    KF_CHECK(ae->run());
  }
  KF_CHECK(tx.commit());
  offsets_.erase({array_id, task});
  scancelled_.erase(slurm_id + "_" + std::to_string(task));
  listed_.erase({array_id, task});
  stats_.requeued += static_cast<std::uint64_t>(requeued);
  if (requeued > 0)
    spdlog::warn("verifier: {}; {} of its samples go back to the queue", why, requeued);
  return {};
}

Result<std::map<int, SlurmBackend::OpenTask>> SlurmBackend::open_tasks(std::int64_t array_id) {
  std::map<int, OpenTask> out;
  std::vector<std::pair<int, std::int64_t>> rows;  // task, shard index
  std::vector<std::int64_t> jobs;
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["slurm_open_task_jobs"]));
    st->bind(1, array_id);
    KF_CHECK(st->each([&](store::Stmt& r) {
      rows.emplace_back(static_cast<int>(r.int64(0)), r.int64(2));
      jobs.push_back(r.int64(1));
    }));
  }
  if (jobs.empty()) return out;
  KF_TRY(auto lost, queue_.not_held(owner_, jobs));
  const std::set<std::int64_t> gone(lost.begin(), lost.end());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    OpenTask& t = out[rows[i].first];
    t.open.insert(rows[i].second);
    if (gone.count(jobs[i]) > 0) t.unwanted.insert(rows[i].second);
  }
  return out;
}

bool SlurmBackend::list_unwanted(const std::string& dir, std::int64_t array_id, int task,
                                 const std::set<std::int64_t>& unwanted) {
  std::string text;
  for (std::int64_t idx : unwanted) text += std::to_string(idx) + "\n";
  const fs::path file = fs::path(dir) / ("skip-" + std::to_string(task) + ".txt");
  if (Status w = write_file_atomic(file, text); !w.ok()) {
    spdlog::warn("verifier: array {} task {}: writing {}: {}", array_id, task, file.string(),
                 w.error().message);
    return false;
  }
  spdlog::info(
      "verifier: array {} task {}: {} of its samples are no longer wanted (cancelled, past "
      "their deadline, or taken back); its kforge verify skips them or stops the one running "
      "({})",
      array_id, task, unwanted.size(), file.string());
  return true;
}

void SlurmBackend::scancel_unwanted(const std::vector<std::string>& names) {
  if (names.empty()) return;
  const auto& sc = opt_.verifier.slurm;
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : " ") + n;
  spdlog::info(
      "verifier: scancel {} Slurm tasks whose samples are no longer wanted (cancelled, past "
      "their deadline, or taken back): {}",
      names.size(), list);
  std::vector<std::string> argv = {sc.scancel};
  argv.insert(argv.end(), names.begin(), names.end());
  auto c = run_command(env(), argv, std::chrono::milliseconds(sc.command_timeout_ms));
  if (!c.ok() || c->exit_code != 0)
    spdlog::warn("verifier: scancel of tasks no longer wanted failed: {}",
                 c.ok() ? first_line(c->err) : c.error().message);
}

Status SlurmBackend::poll() {
  const auto& sc = opt_.verifier.slurm;
  struct Array {
    std::int64_t id;
    std::string slurm_id, dir;
  };
  std::vector<Array> arrays;
  {
    KF_TRY(store::Stmt * st, db_.cached(q()["slurm_open_arrays"]));
    st->bind(1, owner_);
    KF_CHECK(st->each([&](store::Stmt& r) {
      arrays.push_back({r.int64(0), r.text(1), r.text(2)});
    }));
  }
  std::string watch_error;
  for (const auto& a : arrays) {
    struct Live {
      int task;
      std::string state;
      std::int64_t run_id;
      bool run_cancelled;
    };
    std::vector<Live> live;
    {
      KF_TRY(store::Stmt * st, db_.cached(q()["slurm_live_tasks"]));
      st->bind(1, a.id);
      KF_CHECK(st->each([&](store::Stmt& r) {
        live.push_back({static_cast<int>(r.int64(0)), r.text(1), r.int64(2), false});
      }));
    }
    for (auto& t : live) {
      KF_TRY(t.run_cancelled, queue_.run_cancelled(t.run_id));
    }
    // States first, then the result files: a task seen ended has written all it will write.
    auto r = run_command(env(), {sc.scontrol, "-o", "show", "job", a.slurm_id},
                         std::chrono::milliseconds(sc.command_timeout_ms));
    std::map<int, TaskInfo> info;
    bool unknown = false;
    if (!r.ok()) {
      watch_error = "scontrol: " + r.error().message;
    } else if (r->exit_code != 0) {
      if (r->err.find("Invalid job id") != std::string::npos)
        unknown = true;  // purged (MinJobAge) or lost with the controller's state
      else
        watch_error = "scontrol exited " + std::to_string(r->exit_code) + ": " + first_line(r->err);
    } else {
      info = parse_scontrol(r->out);
    }
    std::vector<int> running;  // listed by Slurm, not ended
    std::set<int> unwanted;
    for (const auto& t : live) {
      int stored = 0;
      KF_CHECK(read_results(a.id, a.dir, t.task, stored));
      if (unknown) {
        KF_CHECK(end_task(a.id, a.slurm_id, t.task, "lost", "", ""));
        continue;
      }
      auto it = info.find(t.task);
      if (it == info.end()) continue;  // not listed (yet): look again next time
      bool ended = false;
      std::string state = task_state(it->second.state, ended);
      if (ended) {
        KF_CHECK(end_task(a.id, a.slurm_id, t.task, state, it->second.state, it->second.exit_code));
        continue;
      }
      if (state != t.state) {
        KF_TRY(store::Stmt * st, db_.cached(q()["slurm_task_state"]));
        st->bind(1, a.id)
            .bind(2, static_cast<std::int64_t>(t.task))
            .bind(3, state)
            .bind(4, it->second.state)
            .bind(5, it->second.exit_code)
            .bind(6, clock_.wall_ms());
        KF_CHECK(st->run());
      }
      running.push_back(t.task);
      // A cancelled run's tasks are cancelled on the cluster too.
      if (t.run_cancelled) unwanted.insert(t.task);
    }
    // So is a task none of whose unfinished samples this backend still holds: scored items
    // whose client went away or whose deadline passed, a cancelled run's jobs (their verdicts
    // would be dropped). A task holding wanted samples too lists the others in its skip file,
    // which its kforge verify reads while it runs: those not started never start, the one
    // running is stopped, and the wanted ones go on. Once every unfinished sample of a task is
    // listed there, the task ends by itself.
    KF_TRY(auto open, open_tasks(a.id));
    std::vector<std::string> to_cancel;
    for (int task : running) {
      const std::string name = a.slurm_id + "_" + std::to_string(task);
      bool cancel = unwanted.count(task) > 0;
      if (auto it = open.find(task); !cancel && it != open.end() && !it->second.unwanted.empty()) {
        std::set<std::int64_t>& listed = listed_[{a.id, task}];
        const auto& gone = it->second.unwanted;
        if (!std::includes(listed.begin(), listed.end(), gone.begin(), gone.end())) {
          if (gone.size() == it->second.open.size()) {
            cancel = true;  // nothing left for it to do: scancel, pending or running
          } else {
            std::set<std::int64_t> all = listed;
            all.insert(gone.begin(), gone.end());
            // Not written: it runs on as before, and the next poll writes it again.
            if (list_unwanted(a.dir, a.id, task, all)) listed = std::move(all);
          }
        }
      }
      if (cancel && !scancelled_[name]) {
        scancelled_[name] = true;
        to_cancel.push_back(name);
      }
    }
    scancel_unwanted(to_cancel);
  }
  if (!watch_error.empty()) {
    spdlog::error("verifier: watching the Slurm tasks: {}", watch_error);
    KF_CHECK(alert("watch", watch_error));
  } else {
    KF_CHECK(clear_alert("watch"));
  }
  return {};
}

Result<int> scancel_run_tasks(store::Db& db, const SlurmConfig& cfg, std::int64_t run_id) {
  std::vector<std::string> names;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["slurm_run_tasks"]));
    st->bind(1, run_id);
    KF_CHECK(st->each([&](store::Stmt& r) { names.push_back(r.text(0)); }));
  }
  if (names.empty()) return 0;
  std::vector<std::string> argv = {cfg.scancel};
  argv.insert(argv.end(), names.begin(), names.end());
  KF_TRY(auto r,
         run_command(default_env(), argv, std::chrono::milliseconds(cfg.command_timeout_ms)));
  if (r.exit_code != 0)
    return fail("slurm",
                "scancel exited " + std::to_string(r.exit_code) + ": " + first_line(r.err));
  return static_cast<int>(names.size());
}

Result<SlurmSummary> slurm_summary(store::Db& db) {
  SlurmSummary out;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["slurm_tasks_by_state"]));
    KF_CHECK(st->each([&](store::Stmt& r) { out.tasks_by_state[r.text(0)] = r.int64(1); }));
  }
  KF_TRY(store::Stmt * st, db.cached(q()["slurm_alerts"]));
  KF_CHECK(st->each([&](store::Stmt& r) {
    out.alerts.push_back({r.text(0), r.text(1), r.int64(2), r.int64(3), r.int64(4)});
  }));
  return out;
}

}  // namespace kforge::verify
