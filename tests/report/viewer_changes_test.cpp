// A run's outcomes kept by the viewer and updated by the samples that changed (migration 0050's
// outcome_changes): that every write to what an outcome is read from is numbered, whichever
// statement makes it, and that the updated outcomes are what a whole read gives.

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "kforge/report/outcomes.hpp"
#include "kforge/report/viewer.hpp"
#include "viewer_util.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every field of an outcome as text: two outcomes are the same when these are.
std::string describe(const report::SampleOutcome& o) {
  std::ostringstream s;
  auto opt = [&](const auto& v) {
    if (v)
      s << *v;
    else
      s << "-";
    s << "|";
  };
  s << o.job_id << "|" << o.sample_id << "|" << o.key << "|" << static_cast<int>(o.state) << "|"
    << o.stage << "|";
  opt(o.job_error_kind);
  opt(o.job_error);
  s << o.failure_stage << "|";
  s << (o.stage_status ? static_cast<int>(*o.stage_status) : -1) << "|";
  opt(o.stage_error_kind);
  opt(o.stage_error);
  opt(o.verdict);
  for (const auto& f : o.flags) s << f << ",";
  opt(o.detail);
  for (const auto& [t, r] : o.targets) s << t << "=" << r << ",";
  opt(o.kernel_killed);
  opt(o.kernel_applicable);
  s << o.timed << "|";
  opt(o.speedup);
  opt(o.pass_perf);
  for (const auto& f : o.speed_flags) s << f << ",";
  opt(o.kernel_share);
  opt(o.dup_group);
  s << o.dup_group_size << "|" << o.prompt_tokens << "|" << o.completion_tokens << "|" << o.cost_usd
    << "|" << o.llm_ms << "|" << o.llm_calls << "|" << o.verify_ms << "|" << o.verifications << "|"
    << o.mended_outputs << "|" << o.reasoning_tokens << "|" << o.cached_prompt_tokens << "|"
    << o.repair_round << "|";
  for (const auto& r : o.rounds) {
    s << r.round << ":";
    opt(r.verdict);
    for (const auto& f : r.flags) s << f << ",";
    s << r.cost_usd << "/" << r.tokens << "/" << r.llm_ms << ";";
  }
  return s.str();
}

std::string describe(const std::vector<report::SampleOutcome>& all) {
  std::string out;
  for (const auto& o : all) out += describe(o) + "\n";
  return out;
}

// The tables an outcome is read from (outcomes.sql's outcome_* queries) whose writes the
// triggers number.
const std::vector<std::string> kTables = {"jobs", "stage_outputs", "verifications",
                                          "verification_speed", "verification_targets"};

class ViewerChanges : public ::testing::Test {
 protected:
  store::Db& db() { return vf.fx().db(); }
  // The SQL of every trigger on `table` that writes outcome_changes.
  std::vector<std::string> triggers_on(const std::string& table) {
    auto s = db().prepare(
        "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?1 "
        "AND sql LIKE '%outcome_changes%'");
    EXPECT_TRUE(s.ok());
    s->bind(1, table);
    std::vector<std::string> out;
    EXPECT_TRUE(s->each([&](store::Stmt& r) { out.push_back(r.text(0)); }).ok());
    return out;
  }
  // The columns of jobs whose update the trigger numbers (its UPDATE OF list).
  std::set<std::string> numbered_job_columns() {
    std::set<std::string> out;
    static const std::regex of(R"(AFTER UPDATE OF ([a-z_, ]+) ON jobs)");
    for (const auto& sql : triggers_on("jobs")) {
      std::smatch m;
      if (!std::regex_search(sql, m, of)) continue;
      std::stringstream cols(m[1].str());
      for (std::string c; std::getline(cols, c, ',');) {
        c.erase(0, c.find_first_not_of(' '));
        c.erase(c.find_last_not_of(' ') + 1);
        out.insert(c);
      }
    }
    return out;
  }
  std::int64_t run_id(const std::string& tag) {
    auto run = report::find_run(db(), tag);
    EXPECT_TRUE(run.ok());
    return run.ok() ? run->id : 0;
  }
  // The v2 samples page through the cache, then its kept outcomes against a whole read.
  void expect_kept_as_read(const std::string& what) {
    auto page = report::view(db(), {"/run", {{"tag", "v2"}}}, opts);
    ASSERT_EQ(page.status, 200) << what << ": " << page.body;
    auto run = report::find_run(db(), "v2");
    ASSERT_TRUE(run.ok());
    auto whole = report::load_outcomes(db(), *run);
    ASSERT_TRUE(whole.ok()) << whole.error().message;
    auto kept = cache.kept(run->id);
    ASSERT_TRUE(kept.has_value()) << what;
    EXPECT_EQ(describe(*kept->outcomes), describe(*whole)) << what;
  }
  ViewerFixture vf;
  report::ViewCache cache;
  report::ViewOptions opts = [this] {
    report::ViewOptions o;
    o.cache = &cache;
    return o;
  }();
};

TEST_F(ViewerChanges, EveryTableAnOutcomeIsReadFromNumbersItsInsertsUpdatesAndDeletes) {
  // A rebuilt table loses its triggers (migration 0012's note): this fails until a migration
  // that rebuilds one of these tables creates them again.
  for (const auto& table : kTables) {
    auto sqls = triggers_on(table);
    for (const char* event : {"AFTER INSERT ON", "AFTER UPDATE", "AFTER DELETE ON"}) {
      bool found = false;
      for (const auto& sql : sqls) found = found || sql.find(event) != std::string::npos;
      EXPECT_TRUE(found) << table << ": no trigger " << event << " writing outcome_changes";
    }
  }
}

TEST_F(ViewerChanges, EveryColumnOfJobsAnOutcomeReadsIsNumberedWhenUpdated) {
  // outcome_jobs reads the job's columns as j.NAME: each must be in the trigger's UPDATE OF
  // list (the job's ids, which no writer changes, are numbered as a move).
  const std::string sql = slurp(source_dir() / "libs/report/sql/outcomes.sql");
  const auto at = sql.find("-- name: outcome_jobs");
  ASSERT_NE(at, std::string::npos);
  const std::string query = sql.substr(at, sql.find(";", at) - at);
  auto numbered = numbered_job_columns();
  ASSERT_FALSE(numbered.empty());
  static const std::regex col(R"(\bj\.([a-z_]+))");
  int read = 0;
  for (auto it = std::sregex_iterator(query.begin(), query.end(), col);
       it != std::sregex_iterator(); ++it) {
    ++read;
    const std::string c = (*it)[1];
    if (c == "id") continue;
    EXPECT_TRUE(numbered.contains(c))
        << "outcome_jobs reads jobs." << c << ", which migration 0050's trigger does not number";
  }
  EXPECT_GE(read, 8);
}

TEST_F(ViewerChanges, EveryUpdateOfJobsInTheSqlFilesIsNumberedOrTouchesOnlyTheLease) {
  // Each UPDATE jobs statement of libs/*/sql: the columns it sets either include one the
  // trigger numbers (so the change is seen) or are only the lease's owner and expiry, which no
  // page shows. Found by reading the files, so a new writer is checked without listing it here.
  const auto numbered = numbered_job_columns();
  const std::set<std::string> lease = {"lease_owner", "lease_expires_ms"};
  static const std::regex update(R"(UPDATE\s+jobs\s+SET\s+([\s\S]*?)\bWHERE\b)", std::regex::icase);
  static const std::regex assigned(R"((?:^|,)\s*([a-z_]+)\s*=)");
  int statements = 0, numbered_statements = 0;
  for (const auto& lib : fs::directory_iterator(source_dir() / "libs")) {
    if (!fs::is_directory(lib.path() / "sql")) continue;
    for (const auto& file : fs::directory_iterator(lib.path() / "sql")) {
      const std::string text = slurp(file.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), update);
           it != std::sregex_iterator(); ++it) {
        ++statements;
        // The SET list's top-level assignments (a CASE or subquery's '=' is not one: those sit
        // after a comma-less expression, which the pattern skips by needing a comma first).
        std::string set = (*it)[1];
        std::set<std::string> cols;
        for (auto a = std::sregex_iterator(set.begin(), set.end(), assigned);
             a != std::sregex_iterator(); ++a)
          cols.insert((*a)[1]);
        bool seen = false, only_lease = !cols.empty();
        for (const auto& c : cols) {
          seen = seen || numbered.contains(c);
          only_lease = only_lease && lease.contains(c);
        }
        numbered_statements += seen;
        EXPECT_TRUE(seen || only_lease)
            << file.path().filename() << ": UPDATE jobs SET " << set.substr(0, 80)
            << " changes a job without a column migration 0050's trigger numbers";
      }
    }
  }
  // 19 at this writing (2026-11-29), 3 of them the lease's renewal or adoption alone.
  EXPECT_GE(statements, 19);
  EXPECT_GE(numbered_statements, 16);
}

TEST_F(ViewerChanges, ARunThatMovesIsUpdatedByTheSamplesThatChangedAsAWholeReadWouldGive) {
  // The first page reads v2 whole; each write after it (a job's state, stage, error or round,
  // an answer, a verdict, a speed label, a cross-compile result, a deleted verification, a
  // changed one) is read by the samples it changed, and the kept outcomes are what a whole
  // read gives at that moment.
  expect_kept_as_read("first read");
  ASSERT_EQ(cache.reads(), 1);
  auto& fx = vf.fx();
  const std::string v2 = std::to_string(run_id("v2"));
  auto job = [&](const std::string& set, const std::string& key) {
    return "UPDATE jobs SET " + set + " WHERE run_id = " + v2 +
           " AND sample_id = (SELECT id FROM samples WHERE key = '" + key + "')";
  };
  // SELECT of the newest verification's id of `key` in v2 with `values` after it.
  auto newest = [&](const std::string& key, const std::string& values) {
    return "SELECT max(id), " + values + " FROM verifications WHERE run_id = " + v2 +
           " AND sample_id = (SELECT id FROM samples WHERE key = '" + key + "')";
  };
  const std::vector<std::pair<std::string, std::function<void()>>> writes = {
      {"a job leased",
       [&] {
         fx.exec("lease_job", {"v2", "add_kernel.py"});
       }},
      {"a job failed",
       [&] {
         ASSERT_TRUE(db().exec(job("state = 'failed', error_kind = 'unfixable', error = 'no'",
                                   "layernorm.py"))
                         .ok());
       }},
      {"a job sent to repair",
       [&] {
         ASSERT_TRUE(
             db().exec(job("state = 'queued', stage = 'repair', repair_round = 1", "softmax.py"))
                 .ok());
       }},
      {"an answer",
       [&] {
         fx.exec("add_answer", {"v2", "softmax.py", "repair", "ok", "1", "{\"code\": \"x\"}"});
       }},
      {"a failed generation",
       [&] {
         fx.exec("add_failed_generation", {"v2", "add_kernel.py"});
       }},
      {"a new verdict",
       [&] {
         fx.exec("add_reverification", {"v2", "repaired.py", "failed", ""});
       }},
      {"a speed label",
       [&] {
         ASSERT_TRUE(db().exec("INSERT INTO verification_speed (verification_id, timed, device, "
                               "kernel_us, speedup, min_speedup, pass_perf, flags_json, "
                               "exclusive_ms) " +
                               newest("repaired.py", "1, 'H200', 12.5, 1.4, 1.0, 1, '[]', 200"))
                         .ok());
       }},
      {"a speed label's flags",
       [&] {
         fx.exec("set_speed_flags", {"repaired.py", "v2", "[\"perf_suspect\"]"});
       }},
      {"a cross-compile result",
       [&] {
         ASSERT_TRUE(db().exec("INSERT INTO verification_targets (verification_id, target, "
                               "result) " +
                               newest("repaired.py", "'hip:gfx1100', 'ok'"))
                         .ok());
       }},
      {"a verification changed",
       [&] {
         fx.exec("set_mutation_report",
                 {"repaired.py",
                  "{\"killed\": 2, \"applicable\": 3, \"kernel\": {\"killed\": 1, "
                  "\"applicable\": 2}}"});
       }},
      {"the newest verification deleted",
       [&] {
         ASSERT_TRUE(db().exec("DELETE FROM verifications WHERE id = (SELECT max(id) FROM "
                               "verifications WHERE run_id = " +
                               v2 + ")")
                         .ok());
       }},
  };
  std::int64_t updates = 0;
  for (const auto& [what, write] : writes) {
    write();
    expect_kept_as_read(what);
    EXPECT_EQ(cache.reads(), 1) << what << ": read whole again";
    EXPECT_EQ(cache.updates(), ++updates) << what;
  }
}

TEST_F(ViewerChanges, AnUpdateCopiesTheOutcomesAPageHoldsAndChangesThemInPlaceWhenNoneDoes) {
  // Copy-on-write: while a page still holds the run's outcomes (a slow page being written out),
  // an update leaves them as they were and keeps a changed copy; when none does, the kept
  // outcomes are changed in place. Either way they are what a whole read gives, new samples
  // (first and last by key) included.
  expect_kept_as_read("first read");
  const std::int64_t v2 = run_id("v2");
  const std::string run = std::to_string(v2);
  auto kept = cache.kept(v2);
  ASSERT_TRUE(kept.has_value());
  report::ViewCache::Outcomes held = kept->outcomes;  // as a page holds them
  kept.reset();
  const std::string before = describe(*held);
  vf.fx().exec("add_reverification", {"v2", "layernorm.py", "passed", ""});
  expect_kept_as_read("a verdict while a page holds the outcomes");
  EXPECT_EQ(cache.updates(), 1);
  EXPECT_EQ(cache.updates_in_place(), 0);
  EXPECT_EQ(describe(*held), before) << "the outcomes a page holds changed under it";
  EXPECT_NE(cache.kept(v2)->outcomes.get(), held.get());
  held.reset();

  // No page holds them now: each change below is made in place.
  const auto* where = cache.kept(v2)->outcomes.get();
  auto add_job = [&](const std::string& key) {
    ASSERT_TRUE(db().exec("INSERT INTO samples (key, code_sha256, code, record_json, source, "
                          "source_index, created_ms, updated_ms) VALUES ('" +
                          key + "', 'x', 'pass', '{}', 'test', 0, 1, 1)")
                    .ok());
    ASSERT_TRUE(db().exec("INSERT INTO jobs (run_id, sample_id, stage, created_ms, updated_ms) "
                          "SELECT " +
                          run + ", id, 'analyze', 1, 1 FROM samples WHERE key = '" + key + "'")
                    .ok());
  };
  const std::vector<std::pair<std::string, std::function<void()>>> writes = {
      {"a verdict",
       [&] {
         vf.fx().exec("add_reverification", {"v2", "softmax.py", "failed", ""});
       }},
      {"a job first by key", [&] { add_job("000_first.py"); }},
      {"a job last by key", [&] { add_job("zzz_last.py"); }},
      {"a job failed and another answered",
       [&] {
         ASSERT_TRUE(
             db().exec("UPDATE jobs SET state = 'failed', error = 'no' WHERE run_id = " + run +
                       " AND sample_id = (SELECT id FROM samples WHERE key = "
                       "'000_first.py')")
                 .ok());
         vf.fx().exec("add_answer", {"v2", "softmax.py", "repair", "ok", "1", "{\"code\": \"y\"}"});
       }},
  };
  std::int64_t in_place = 0;
  for (const auto& [what, write] : writes) {
    write();
    expect_kept_as_read(what);
    EXPECT_EQ(cache.reads(), 1) << what << ": read whole again";
    EXPECT_EQ(cache.updates_in_place(), ++in_place) << what;
    EXPECT_EQ(cache.kept(v2)->outcomes.get(), where) << what << ": copied";
  }
  const auto& all = *cache.kept(v2)->outcomes;
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front().key, "000_first.py");
  EXPECT_EQ(all.back().key, "zzz_last.py");
}

TEST_F(ViewerChanges, PagesOfAMovingRunServedAtOnceAreWhatAWholeReadGives) {
  // Four threads, each with its own connection, fetch v2's pages while its jobs change: each
  // update is made in place or into a copy depending on whether another page holds the
  // outcomes at that moment. No page may fail, and at the end the kept outcomes are what a
  // whole read gives.
  expect_kept_as_read("first read");
  constexpr int kThreads = 4, kWrites = 12;
  std::vector<std::unique_ptr<store::Db>> dbs;
  for (int i = 0; i < kThreads; ++i) {
    auto c = store::Db::open({.path = vf.fx().db_path().string(), .migrate = false});
    ASSERT_TRUE(c.ok()) << c.error().message;
    dbs.push_back(std::move(*c));
  }
  const std::string v2 = std::to_string(run_id("v2"));
  std::atomic<bool> done{false};
  std::atomic<int> failed{0};
  std::vector<int> pages(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      const std::vector<report::ViewRequest> asks = {
          {"/run", {{"tag", "v2"}}},
          {"/run", {{"tag", "v2"}, {"verdict", "failed"}}},
          {"/sample", {{"tag", "v2"}, {"key", "softmax.py"}}}};
      for (std::size_t i = 0; !done.load() || i < asks.size(); ++i) {
        auto page = report::view(*dbs[t], asks[i % asks.size()], opts);
        if (page.status != 200) {
          ADD_FAILURE() << "thread " << t << ", page " << pages[t] << ": " << page.body;
          ++failed;
        }
        ++pages[t];
      }
    });
  for (int w = 0; w < kWrites; ++w) {
    // Counted before the write: a page may read it before this thread looks again.
    const std::int64_t seen = cache.updates() + cache.reads();
    ASSERT_TRUE(
        db().exec("UPDATE jobs SET error = 'write " + std::to_string(w) + "' WHERE run_id = " + v2 +
                  " AND sample_id = (SELECT min(sample_id) FROM jobs WHERE run_id = " + v2 + ")")
            .ok());
    vf.fx().exec("add_reverification", {"v2", w % 2 == 0 ? "layernorm.py" : "softmax.py",
                                        w % 3 == 0 ? "passed" : "failed", ""});
    // Wait for a page to have seen this write (the threads' pages read it), whatever the pace.
    while (cache.updates() + cache.reads() == seen && failed.load() == 0) std::this_thread::yield();
  }
  done = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(cache.reads(), 1);  // every change was read by the samples it changed
  EXPECT_GE(cache.updates(), kWrites);
  expect_kept_as_read("after the writes");
}

TEST_F(ViewerChanges, ADeletedJobOrANewGroupingIsReadWhole) {
  expect_kept_as_read("first read");
  const std::string v2 = std::to_string(run_id("v2"));
  ASSERT_TRUE(db().exec("DELETE FROM jobs WHERE run_id = " + v2 +
                        " AND sample_id = (SELECT id FROM samples WHERE key = 'softmax.py')")
                  .ok());
  expect_kept_as_read("a job deleted");
  EXPECT_EQ(cache.reads(), 2);
  EXPECT_EQ(cache.updates(), 0);
  // kforge corpus dedup groups anew: any sample's group may change.
  ASSERT_TRUE(db().exec("INSERT INTO dedup_groups (sample_id, group_id, linked_to, similarity) "
                        "SELECT id, id, id, 1.0 FROM samples WHERE key = 'layernorm.py'")
                  .ok());
  ASSERT_TRUE(db().exec("INSERT INTO dedup_state (id, scheme, threshold, samples, pairs, groups, "
                        "computed_ms) VALUES (1, 'minhash', 0.9, 1, 0, 1, 2) ON CONFLICT (id) DO "
                        "UPDATE SET computed_ms = 2")
                  .ok());
  expect_kept_as_read("a new grouping");
  EXPECT_EQ(cache.reads(), 3);
}

TEST_F(ViewerChanges, AChangeNumberIsKeptPerSampleAndASampleReadAloneIsAsReadWithItsRun) {
  auto run = report::find_run(db(), "v2");
  ASSERT_TRUE(run.ok());
  auto before = report::outcome_change_mark(db(), run->id);
  ASSERT_TRUE(before.ok());
  vf.fx().exec("lease_job", {"v2", "add_kernel.py"});
  vf.fx().exec("add_failed_generation", {"v2", "add_kernel.py"});
  auto changes = report::outcome_changes_since(db(), run->id, *before);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->samples.size(), 1u);  // two writes, one sample
  EXPECT_FALSE(changes->removed);
  EXPECT_EQ(changes->mark, *before + 2);
  auto alone = report::load_outcomes_of(db(), *run, changes->samples);
  auto whole = report::load_outcomes(db(), *run);
  ASSERT_TRUE(alone.ok() && whole.ok());
  ASSERT_EQ(alone->size(), 1u);
  EXPECT_EQ(alone->front().key, "add_kernel.py");
  for (const auto& o : *whole) {
    if (o.key == "add_kernel.py") {
      EXPECT_EQ(describe(alone->front()), describe(o));
    }
  }
  // The lease's renewal alone (renew_leases) changes nothing shown: no number.
  ASSERT_TRUE(db().exec("UPDATE jobs SET lease_expires_ms = 1900000000000 WHERE run_id = " +
                        std::to_string(run->id))
                  .ok());
  auto after = report::outcome_change_mark(db(), run->id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, changes->mark);
}

TEST_F(ViewerChanges, ADownloadIsKeptUntilItsRowsOrTheirRecordsChange) {
  // The JSON Lines download of a filter is made once and kept; an answer, a verdict or a record
  // imported again makes it anew.
  auto get = [&] {
    return report::view(db(), {"/export", {{"tag", "v2"}, {"verdict", "failed"}}}, opts).body;
  };
  const std::string first = get();
  ASSERT_FALSE(first.empty());
  EXPECT_EQ(get(), first);
  // layernorm.py is failed in v2: its record gains a field, as a re-import would write.
  ASSERT_TRUE(db().exec("UPDATE samples SET record_json = json_set(record_json, '$.curator_note', "
                        "'kept') WHERE key = 'layernorm.py'")
                  .ok());
  const std::string record = get();
  EXPECT_NE(record, first);
  EXPECT_NE(record.find("curator_note"), std::string::npos) << record;
  vf.fx().exec("add_reverification", {"v2", "layernorm.py", "passed", ""});
  const std::string verdict = get();
  EXPECT_EQ(verdict.find("\"file\":\"layernorm.py\""), std::string::npos) << verdict;
  EXPECT_NE(verdict, record);
}

}  // namespace
}  // namespace kforge::test
