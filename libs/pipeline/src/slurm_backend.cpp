#include "kforge/pipeline/slurm_backend.hpp"

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

#include "kforge/core/embedded.hpp"
#include "kforge/core/fs.hpp"
#include "kforge/pipeline/jobs.hpp"
#include "kforge/verify/store.hpp"

extern "C" char** environ;

namespace kforge::pipeline {

std::span<const EmbeddedFile> slurm_scripts();

namespace {

namespace fs = std::filesystem;

const store::QuerySet& q() {
  return pipeline_queries();
}

// A sample whose task ended without its verdict this many times is given up as failed.
constexpr int kMaxRequeues = 3;

std::string task_script() {
  for (const auto& f : slurm_scripts())
    if (f.name.ends_with("verify_task.sh")) return std::string(f.data);
  return {};
}

// Slurm's JobState to the backend's task state; empty while the task has not ended.
std::string task_state(const std::string& s, bool& ended) {
  ended = true;
  if (s == "COMPLETED") return "completed";
  if (s == "CANCELLED") return "cancelled";
  if (s == "TIMEOUT" || s == "DEADLINE") return "timeout";
  if (s == "NODE_FAIL") return "node_fail";
  if (s == "FAILED" || s == "OUT_OF_MEMORY" || s == "BOOT_FAIL" || s == "PREEMPTED")
    return "failed";
  ended = false;
  if (s == "PENDING" || s == "REQUEUED" || s == "REQUEUE_HOLD" || s == "REQUEUE_FED" ||
      s == "CONFIGURING" || s == "RESV_DEL_HOLD")
    return "pending";
  return "running";  // RUNNING, COMPLETING, SUSPENDED, STAGE_OUT, SIGNALING, RESIZING, ...
}

struct TaskInfo {
  std::string state;  // JobState
  std::string exit_code;
};

// ArrayTaskId as scontrol prints it: "3", "2-5", "1,3,7-9", "0-99%4", "0-9:2".
std::vector<int> task_ids(std::string s) {
  std::vector<int> out;
  if (auto pct = s.find('%'); pct != std::string::npos) s.resize(pct);
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    int step = 1;
    if (auto colon = part.find(':'); colon != std::string::npos) {
      step = std::max(1, std::atoi(part.c_str() + colon + 1));
      part.resize(colon);
    }
    auto dash = part.find('-');
    int a = std::atoi(part.c_str());
    int b = dash == std::string::npos ? a : std::atoi(part.c_str() + dash + 1);
    for (int i = a; i <= b && out.size() < 100000; i += step) out.push_back(i);
  }
  return out;
}

// One line of `scontrol -o show job`: its Key=value words.
std::map<std::string, std::string> scontrol_fields(const std::string& line) {
  std::map<std::string, std::string> kv;
  std::stringstream words(line);
  std::string w;
  while (words >> w) {
    auto eq = w.find('=');
    if (eq != std::string::npos) kv.emplace(w.substr(0, eq), w.substr(eq + 1));
  }
  return kv;
}

// `scontrol -o show job ARRAYID`: a line per task (pending tasks may share a line).
std::map<int, TaskInfo> parse_scontrol(const std::string& text) {
  std::map<int, TaskInfo> out;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto kv = scontrol_fields(line);
    if (!kv.count("ArrayTaskId") || !kv.count("JobState")) continue;
    for (int t : task_ids(kv["ArrayTaskId"])) out[t] = {kv["JobState"], kv["ExitCode"]};
  }
  return out;
}

// `scontrol -o show job` (every job slurmctld knows): the array job id of each job whose
// working directory is DIR. Arrays are submitted with --chdir set to their own directory, so the
// directory names the array even when its job id was never recorded.
std::string array_job_in_dir(const std::string& text, const std::string& dir) {
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    auto kv = scontrol_fields(line);
    if (kv["WorkDir"] != dir) continue;
    const std::string id = kv.count("ArrayJobId") ? kv["ArrayJobId"] : kv["JobId"];
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) return id;
  }
  return {};
}

std::string first_line(const std::string& s) {
  auto start = s.find_first_not_of(" \n");
  if (start == std::string::npos) return {};
  auto end = s.find('\n', start);
  return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::vector<std::string> environment_without(const std::vector<std::string>& drop) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string v(*e);
    auto eq = v.find('=');
    std::string name = v.substr(0, eq);
    if (std::find(drop.begin(), drop.end(), name) == drop.end()) env.push_back(std::move(v));
  }
  return env;
}

}  // namespace

Result<CommandResult> run_command(Env& env, const std::vector<std::string>& argv,
                                  std::chrono::milliseconds timeout,
                                  const std::vector<std::string>* environment) {
  RunOptions o;
  o.timeout = timeout;
  if (environment) o.env = *environment;
  KF_TRY(auto out, env.run(argv, o));
  CommandResult r;
  r.exit_code = out.exit_code;
  r.out = std::move(out.out);
  r.err = std::move(out.err);
  return r;
}

Result<std::unique_ptr<SlurmBackend>> SlurmBackend::create(store::Db& db, Clock& clock,
                                                           SlurmBackendOptions options,
                                                           std::string owner,
                                                           const std::string& owner_glob) {
  const auto& sc = options.verifier.slurm;
  if (sc.shared_dir.empty()) return fail("config", "verifier.slurm.shared_dir is not set");
  std::error_code ec;
  fs::create_directories(sc.shared_dir, ec);
  if (ec) return fail("io", "verifier.slurm.shared_dir " + sc.shared_dir + ": " + ec.message());
  if (task_script().empty()) return fail("config", "the Slurm task script is not built in");
  std::unique_ptr<SlurmBackend> s(new SlurmBackend(db, clock, std::move(options), owner));
  const std::int64_t now = clock.wall_ms();
  // An earlier kforged killed between sbatch and recording its answer left an array without a
  // job id that may be running: find it in Slurm by its directory and watch it, rather than
  // verify its samples twice. What is not found was never submitted and is dropped below.
  std::vector<std::pair<std::int64_t, std::string>> unrecorded;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["slurm_unsubmitted_arrays"]));
    while (true) {
      KF_TRY(bool row, st->step());
      if (!row) break;
      unrecorded.emplace_back(st->int64(0), st->text(1));
    }
    st->reset();
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
    KF_TRY(store::Stmt * adopt, db.cached(q()["slurm_adopt_jobs"]));
    adopt->bind(1, owner).bind(2, now + s->lease_ms()).bind(3, owner_glob).bind(4, now);
    KF_CHECK(adopt->run());
    const auto adopted = db.changes();
    KF_TRY(store::Stmt * arrays, db.cached(q()["slurm_adopt_arrays"]));
    arrays->bind(1, owner).bind(2, owner_glob);
    KF_CHECK(arrays->run());
    if (db.changes() > 0)
      spdlog::info("verifier: watching {} Slurm array jobs of an earlier kforged ({} samples)",
                   db.changes(), adopted);
    KF_TRY(store::Stmt * st, db.cached(q()["slurm_reclaim"]));
    st->bind(1, owner_glob).bind(2, now).bind(3, now).bind(4, owner);
    KF_CHECK(st->run());
    if (db.changes() > 0)
      spdlog::warn("verifier: took back {} jobs an earlier kforged was verifying", db.changes());
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
    KF_TRY(store::Stmt * st, db_.cached(q()["vstage_renew"]));
    st->bind(1, owner_).bind(2, now + lease_ms());
    KF_CHECK(st->run());
    last_renew_ms_ = now;
  }
  auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.steady_now() - t0);
  auto rest = std::min<std::chrono::milliseconds>(
      max_wait, std::chrono::milliseconds(opt_.verifier.slurm.poll_ms));
  if (spent < rest) clock_.sleep_for(rest - spent);
  return {};
}

Status SlurmBackend::maybe_submit() {
  const auto& sc = opt_.verifier.slurm;
  const std::int64_t now = clock_.wall_ms();
  KF_TRY(store::Stmt * fl, db_.cached(q()["slurm_in_flight"]));
  KF_TRY(auto in_flight, fl->one([](store::Stmt& r) { return r.int64(0); }));
  const std::int64_t full = static_cast<std::int64_t>(sc.samples_per_task) * sc.max_array_tasks;
  const std::int64_t room =
      std::min<std::int64_t>(full, sc.max_samples_in_flight - in_flight.value_or(0));
  if (room <= 0) return {};
  KF_TRY(store::Stmt * qs, db_.cached(q()["slurm_queued"]));
  KF_TRY(auto queued, qs->one([](store::Stmt& r) { return r.int64(0); }));
  if (queued.value_or(0) == 0) {
    queued_since_ms_ = 0;
    return {};
  }
  if (queued_since_ms_ == 0) queued_since_ms_ = now;
  // A full array goes at once; a partial one after submit_interval_ms of waiting.
  if (*queued < room && now - queued_since_ms_ < sc.submit_interval_ms) return {};
  if (now - last_submit_ms_ < std::min<std::int64_t>(sc.submit_interval_ms, 1000)) return {};
  last_submit_ms_ = now;
  queued_since_ms_ = 0;

  std::vector<Lease> leases;
  {
    KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
    while (static_cast<std::int64_t>(leases.size()) < room) {
      KF_TRY(store::Stmt * st, db_.cached(q()["vstage_lease"]));
      st->bind(1, owner_).bind(2, now + lease_ms()).bind(3, now);
      KF_TRY(auto row, st->one([](store::Stmt& r) {
        return std::array<std::int64_t, 4>{r.int64(0), r.int64(1), r.int64(2), r.int64(3)};
      }));
      if (!row) break;
      Lease l{(*row)[0], (*row)[1], (*row)[2], 1, nlohmann::ordered_json::object()};
      KF_TRY(store::Stmt * ss, db_.cached(q()["vstage_sample"]));
      ss->bind(1, l.sample_id);
      KF_TRY(auto sample,
             ss->one([](store::Stmt& r) { return std::make_pair(r.text(0), r.text(1)); }));
      if (sample) {
        l.record["key"] = sample->first;
        l.record["code"] = sample->second;
      }
      KF_TRY(store::Stmt * gs, db_.cached(q()["vstage_generated"]));
      gs->bind(1, l.job_id).bind(2, (*row)[3]);  // the code of the job's repair round
      KF_TRY(auto text, gs->one([](store::Stmt& r) { return r.opt_text(0); }));
      if (text && *text) {
        auto j = nlohmann::json::parse(**text, nullptr, false);
        if (j.is_object()) {
          for (const char* f : {"kernel_wrapper", "unitest_code"})
            if (j.contains(f) && j[f].is_string()) l.record[f] = j[f].get<std::string>();
        }
      }
      l.record["job_id"] = l.job_id;
      KF_TRY(store::Stmt * as, db_.cached(q()["vstage_next_attempt"]));
      as->bind(1, l.job_id);
      KF_TRY(auto next, as->one([](store::Stmt& r) { return r.int64(0); }));
      if (next) l.attempt = static_cast<int>(*next);
      leases.push_back(std::move(l));
    }
    KF_CHECK(tx.commit());
  }
  if (leases.empty()) return {};
  stats_.leased += leases.size();
  return submit(std::move(leases));
}

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
      KF_TRY(store::Stmt * st, db_.cached(q()["vstage_finish"]));
      st->bind(1, l.job_id)
          .bind(2, owner_)
          .bind(3, "verify_queued")
          .bind(4, "verify")
          .bind(5, "verifier")
          .bind(6, why)
          .bind(7, clock_.wall_ms());
      KF_CHECK(st->run());
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
  }
  const std::string script = (fs::path(dir) / "verify_task.sh").string();
  if (written.ok()) written = write_file_atomic(script, task_script());
  if (!written.ok()) {
    spdlog::error("verifier: writing the shards: {}", written.error().message);
    KF_CHECK(alert("submit", "writing the shards: " + written.error().message));
    return give_back("writing the Slurm shards: " + written.error().message);
  }
  std::vector<std::string> argv = {sc.sbatch,
                                   "--parsable",
                                   "--array=0-" + std::to_string(shards.size() - 1),
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
  std::string config = sc.node_config.empty() ? opt_.config_file : sc.node_config;
  if (!config.empty()) {
    argv.push_back("-c");
    argv.push_back(config);
  }
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
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("index") || !j["index"].is_number_integer() ||
      !j.contains("verdict") || !j["verdict"].is_string()) {
    spdlog::warn("verifier: array {} task {}: a result line that is not a result: {}", array_id,
                 task, line.substr(0, 200));
    return {};
  }
  const std::int64_t idx = j["index"].get<std::int64_t>();
  KF_TRY(store::Stmt * tj, db_.cached(q()["slurm_task_job"]));
  tj->bind(1, array_id).bind(2, static_cast<std::int64_t>(task)).bind(3, idx);
  struct Row {
    std::int64_t job_id;
    int attempt;
    std::int64_t run_id, sample_id;
    std::string key;
    int round;  // the job's repair round, whose code the shard carried
  };
  KF_TRY(auto row, tj->one([](store::Stmt& r) {
    return Row{r.int64(0), static_cast<int>(r.int64(1)), r.int64(2), r.int64(3),
               r.text(4),  static_cast<int>(r.int64(5))};
  }));
  if (!row) return {};  // settled already (read again after a restart)
  KF_TRY(bool stale, newer_open(row->job_id, array_id));
  if (stale) return settle_stale(array_id, task, idx);
  verify::VerifyResult v;
  v.key = j.value("key", std::string());
  if (v.key != row->key) {
    spdlog::warn("verifier: array {} task {} line {} names '{}', the shard '{}': ignored", array_id,
                 task, idx, v.key, row->key);
    return {};
  }
  auto verdict = verify::parse_verdict(j["verdict"].get<std::string>());
  if (!verdict) return {};
  v.tag = row->job_id;
  v.verdict = *verdict;
  v.detail = j.value("detail", std::string());
  if (j.contains("flags") && j["flags"].is_array())
    for (const auto& f : j["flags"])
      if (f.is_string()) v.flags.push_back(f.get<std::string>());
  if (j.contains("report")) v.report = j["report"];
  v.script = j.value("script", std::string());
  v.stderr_tail = j.value("stderr_tail", std::string());
  v.duration_ms = j.value("duration_ms", std::int64_t{0});
  v.device = j.value("device", std::string());
  KF_TRY(int rounds, run_repair_rounds(db_, row->run_id));

  const std::int64_t now = clock_.wall_ms();
  KF_TRY(store::Transaction tx, store::Transaction::begin(db_));
  // As the local pool's verdicts: to 'done', to the next repair round, or back to the queue.
  KF_TRY(VerdictOutcome out,
         store_job_verdict(
             db_, owner_,
             {row->job_id, row->run_id, row->sample_id, row->attempt, row->round, rounds}, v, now));
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
    ++stats_.by_verdict[std::string(verify::to_string(v.verdict))];
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
    while (true) {
      KF_TRY(bool row, st->step());
      if (!row) break;
      open.emplace_back(st->int64(0), st->int64(1));
    }
    st->reset();
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
    KF_TRY(store::Stmt * rs, db_.cached(q()["slurm_job_run_state"]));
    rs->bind(1, job);
    KF_TRY(auto run_state, rs->one([](store::Stmt& r) { return r.text(0); }));
    // A cancelled run's job ends with its task (kforge run cancel scancels the run's tasks).
    const bool cancelled = run_state && *run_state == "cancelled";
    KF_TRY(store::Stmt * fin, db_.cached(q()["vstage_finish"]));
    fin->bind(1, job).bind(2, owner_).bind(4, "verify").bind(7, now);
    if (cancelled)
      fin->bind(3, "cancelled").bind(5, "cancelled").bind(6, "the run was cancelled");
    else if (give_up)
      fin->bind(3, "failed")
          .bind(5, "verifier")
          .bind(6, why + "; given up after " + std::to_string(kMaxRequeues) + " tasks");
    else
      fin->bind(3, "verify_queued").bind(5, "verifier").bind(6, why);
    KF_CHECK(fin->run());
    const bool ours = db_.changes() > 0 && !cancelled;
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
  stats_.requeued += static_cast<std::uint64_t>(requeued);
  if (requeued > 0)
    spdlog::warn("verifier: {}; {} of its samples go back to the queue", why, requeued);
  return {};
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
    while (true) {
      KF_TRY(bool row, st->step());
      if (!row) break;
      arrays.push_back({st->int64(0), st->text(1), st->text(2)});
    }
    st->reset();
  }
  std::string watch_error;
  for (const auto& a : arrays) {
    struct Live {
      int task;
      std::string state, run_state;
    };
    std::vector<Live> live;
    {
      KF_TRY(store::Stmt * st, db_.cached(q()["slurm_live_tasks"]));
      st->bind(1, a.id);
      while (true) {
        KF_TRY(bool row, st->step());
        if (!row) break;
        live.push_back({static_cast<int>(st->int64(0)), st->text(1), st->text(2)});
      }
      st->reset();
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
    std::vector<std::string> to_cancel;
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
      // A cancelled run's tasks are cancelled on the cluster too.
      const std::string name = a.slurm_id + "_" + std::to_string(t.task);
      if (t.run_state == "cancelled" && !scancelled_[name]) {
        scancelled_[name] = true;
        to_cancel.push_back(name);
      }
    }
    if (!to_cancel.empty()) {
      std::vector<std::string> argv = {sc.scancel};
      argv.insert(argv.end(), to_cancel.begin(), to_cancel.end());
      auto c = run_command(env(), argv, std::chrono::milliseconds(sc.command_timeout_ms));
      if (!c.ok() || c->exit_code != 0)
        spdlog::warn("verifier: scancel of a cancelled run's tasks failed: {}",
                     c.ok() ? first_line(c->err) : c.error().message);
    }
  }
  if (!watch_error.empty()) {
    spdlog::error("verifier: watching the Slurm tasks: {}", watch_error);
    KF_CHECK(alert("watch", watch_error));
  } else {
    KF_CHECK(clear_alert("watch"));
  }
  return {};
}

Result<int> scancel_run_tasks(store::Db& db, const verify::SlurmConfig& cfg, std::int64_t run_id) {
  std::vector<std::string> names;
  {
    KF_TRY(store::Stmt * st, db.cached(q()["slurm_run_tasks"]));
    st->bind(1, run_id);
    while (true) {
      KF_TRY(bool row, st->step());
      if (!row) break;
      names.push_back(st->text(0));
    }
    st->reset();
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
    while (true) {
      KF_TRY(bool row, st->step());
      if (!row) break;
      out.tasks_by_state[st->text(0)] = st->int64(1);
    }
    st->reset();
  }
  KF_TRY(store::Stmt * st, db.cached(q()["slurm_alerts"]));
  while (true) {
    KF_TRY(bool row, st->step());
    if (!row) break;
    out.alerts.push_back({st->text(0), st->text(1), st->int64(2), st->int64(3), st->int64(4)});
  }
  st->reset();
  return out;
}

}  // namespace kforge::pipeline
