// End to end: repair rounds. The real kforged (LLM stages and the verifier pool on the CPU, with
// the stand-in Triton of tests/verify/fake_triton) and kforge against the fake provider, over the
// small corpus of tests/pipeline/repair/. The provider's script (repair/fake_llm.json) gets each
// first generation wrong the way models do (the test asserts the contract the description
// states instead of what the code computes, or asserts nothing about the values), and fixes it
// only when the repair prompt carries the verifier's evidence: its rules match text that only
// the evidence holds.

#include <gtest/gtest.h>

#include "daemon_util.hpp"

namespace kforge::pipeline::e2e {
namespace {

fs::path repair_dir() {
  return test::source_dir() / "tests" / "pipeline" / "repair";
}

// A site with the repair corpus imported, the verifier on (CPU, stand-in Triton).
std::unique_ptr<Site> repair_site(json fake_script, Options o = {}) {
  auto site = std::make_unique<Site>(fake_script);
  o.verify = true;
  site->write_config(o);
  // The verifier section is the config's last: its samples import the stand-in Triton.
  std::string cfg = test::read_text(site->config());
  cfg += "  python_path: [\"" + (test::source_dir() / "tests" / "verify" / "fake_triton").string() +
         "\"]\n";
  test::write_text(site->config(), cfg);
  auto r = site->kforge({"import", (repair_dir() / "corpus.json").string(), "--map",
                         "code=code,description_1=description,description_2=description", "--key",
                         "key"});
  if (r.exit_code != 0) throw std::runtime_error("import failed: " + r.err);
  return site;
}

void create_run(Site& site, const std::string& tag, const std::vector<std::string>& keys,
                int rounds) {
  fs::path list = site.dir().path() / (tag + ".keys");
  std::string text;
  for (const auto& k : keys) text += k + "\n";
  test::write_text(list, text);
  site.create_run(tag, "v1",
                  {"--samples-from", list.string(), "--repair-rounds", std::to_string(rounds)});
}

std::int64_t count(Site& site, const std::string& tag, const std::string& where) {
  return site.scalar("SELECT count(*) FROM " + where.substr(0, where.find(' ')) +
                     " x JOIN runs r ON r.id = x.run_id JOIN samples s ON s.id = x.sample_id "
                     "WHERE r.tag = '" +
                     tag + "' AND " + where.substr(where.find(' ') + 1));
}

// Verdicts of a sample by round: "round:verdict:flags", oldest first.
std::vector<std::string> verdicts(Site& site, const std::string& tag, const std::string& key) {
  return site.rows(
      "SELECT v.repair_round, v.verdict, v.flags_json FROM verifications v JOIN runs r ON "
      "r.id = v.run_id JOIN samples s ON s.id = v.sample_id WHERE r.tag = '" +
          tag + "' AND s.key = '" + key + "' ORDER BY v.id",
      3);
}

std::string job_of(Site& site, const std::string& tag, const std::string& key) {
  auto rows = site.rows(
      "SELECT j.state, j.stage, j.repair_round, coalesce(j.error_kind, ''), coalesce(j.error, "
      "'') FROM jobs j JOIN runs r ON r.id = j.run_id JOIN samples s ON s.id = j.sample_id "
      "WHERE r.tag = '" +
          tag + "' AND s.key = '" + key + "'",
      5);
  return rows.empty() ? "(none)" : rows[0];
}

void stop(Site& site, Proc& d) {
  d.signal(SIGTERM);
  EXPECT_EQ(d.wait(60s), std::optional<int>(0)) << d.log();
  (void)site;
}

// Yield 0% after generate, 100% after one repair round; compare, export and debug show it.
TEST(Repair, YieldGoesFromNoneToAllInOneRound) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  auto site = repair_site(script("repair/fake_llm.json"));
  create_run(*site, "plain", {"double", "add"}, 0);
  create_run(*site, "fix", {"double", "add"}, 2);
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kEnded, 4, 120s), 4) << d->log();
  stop(*site, *d);

  // The first generation: a test asserting the described contract (a copy) fails; a test
  // asserting nothing about the values passes with the kernel skipped.
  EXPECT_EQ(verdicts(*site, "plain", "double"), std::vector<std::string>{"0|failed|[]"});
  EXPECT_EQ(verdicts(*site, "plain", "add"),
            std::vector<std::string>{"0|passed|[\"mutant_survived\"]"});
  // One repair round each, verified; nothing asked after that.
  EXPECT_EQ(verdicts(*site, "fix", "double"),
            (std::vector<std::string>{"0|failed|[]", "1|passed|[]"}));
  EXPECT_EQ(verdicts(*site, "fix", "add"),
            (std::vector<std::string>{"0|passed|[\"mutant_survived\"]", "1|passed|[]"}));
  EXPECT_EQ(count(*site, "fix", "stage_outputs stage = 'repair'"), 2);
  EXPECT_EQ(count(*site, "fix",
                  "stage_outputs stage = 'repair' AND repair_round = 1 AND "
                  "status = 'ok'"),
            2);
  EXPECT_EQ(job_of(*site, "fix", "double"), "done|done|1||");
  EXPECT_EQ(count(*site, "plain", "stage_outputs stage = 'repair'"), 0);
  // The repairs came from the rules that read the evidence.
  json stats = site->fake().stats();
  EXPECT_EQ(stats["by_rule"].value("repair-double", 0), 1) << stats.dump();
  EXPECT_EQ(stats["by_rule"].value("repair-add", 0), 1) << stats.dump();
  EXPECT_EQ(stats["by_rule"].value("repair-blind", 0), 0) << stats.dump();
  // No call identity was paid twice (two runs may send equal bytes: they are different calls).
  EXPECT_EQ(site->scalar("SELECT count(*) FROM (SELECT request_sha256 FROM llm_calls WHERE "
                         "status <> 'replayed' AND http_status = 200 GROUP BY 1 "
                         "HAVING count(*) > 1)"),
            0)
      << "an answer was asked for twice";

  // compare: yield after each round, cost per verified sample per round, flips from repair.
  auto cmp = site->kforge({"compare", "plain", "fix", "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  json c = json::parse(cmp.out);
  const json& runs = c["comparisons"][0]["runs"];
  const json& fix = runs["fix"]["repair"];
  EXPECT_EQ(runs["plain"]["verified"], 0);
  EXPECT_EQ(runs["fix"]["verified"], 2);
  EXPECT_EQ(fix["repair_rounds"], 2);
  ASSERT_EQ(fix["rounds"].size(), 3u) << fix.dump();
  EXPECT_EQ(fix["rounds"][0]["after"], "generate");
  EXPECT_EQ(fix["rounds"][0]["verified"], 0);
  EXPECT_EQ(fix["rounds"][0]["cost_per_verified"], nullptr);
  EXPECT_EQ(fix["rounds"][1]["after"], "repair 1");
  EXPECT_EQ(fix["rounds"][1]["verified"], 2);
  EXPECT_DOUBLE_EQ(fix["rounds"][1]["rate"].get<double>(), 1.0);
  EXPECT_TRUE(fix["rounds"][1]["cost_per_verified"].is_number());
  EXPECT_EQ(fix["rounds"][2]["verified"], 2);
  ASSERT_EQ(fix["repaired"].size(), 2u);
  EXPECT_EQ(fix["repaired"][0]["key"], "add");
  EXPECT_EQ(fix["repaired"][0]["from"], "flagged");
  EXPECT_EQ(fix["repaired"][0]["round"], 1);
  EXPECT_EQ(fix["repaired"][1]["key"], "double");
  EXPECT_EQ(fix["repaired"][1]["from"], "failed");
  EXPECT_EQ(runs["plain"]["repair"]["rounds"].size(), 1u);
  EXPECT_EQ(c["comparisons"][0]["gained"].size(), 2u);
  auto text = site->kforge({"compare", "plain", "fix"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("after repair 1"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("double  (failed -> verified in repair 1)"), std::string::npos)
      << text.out;

  // export: the final round's wrapper and test, with the round they come from.
  fs::path out = site->dir().path() / "fix.jsonl";
  auto ex = site->kforge({"export", "fix", "--out", out.string(), "--verdict", "passed"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  int n = 0;
  std::string exported = test::read_text(out);
  for (std::size_t at = 0, nl; (nl = exported.find('\n', at)) != std::string::npos; at = nl + 1) {
    std::string line = exported.substr(at, nl - at);
    json rec = json::parse(line);
    ++n;
    EXPECT_EQ(rec["repair_round"], 1) << line;
    EXPECT_EQ(rec["verdict"], "passed");
    EXPECT_EQ(rec["prompt"]["repair"]["version"], "v1") << line;
    if (rec["key"] == "double") {
      EXPECT_NE(rec["unitest_code"].get<std::string>().find("2.0 * v"), std::string::npos);
    }
  }
  EXPECT_EQ(n, 2);

  // debug: every round's prompt, answer and verdict.
  fs::path dbg = site->dir().path() / "debug";
  auto db = site->kforge({"debug", "fix", "double", "--out", dbg.string()});
  ASSERT_EQ(db.exit_code, 0) << db.err;
  std::string prompt = test::read_text(dbg / "double" / "repair-1.prompt.md");
  EXPECT_NE(prompt.find("Verdict: `failed`"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("out differs from x for n=1"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("unitest_code line 5"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("assert out == x"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("This is repair round 1 of at most 2"), std::string::npos);
  EXPECT_NE(test::read_text(dbg / "double" / "repair-1.response.txt").find("2.0 * v"),
            std::string::npos);
  EXPECT_EQ(json::parse(test::read_text(dbg / "double" / "round-0.verdict.json"))["verdict"],
            "failed");
  EXPECT_EQ(json::parse(test::read_text(dbg / "double" / "repair-1.verdict.json"))["verdict"],
            "passed");
  EXPECT_NE(test::read_text(dbg / "double" / "unitest_code.py").find("2.0 * v"), std::string::npos);
  auto da = site->kforge({"debug", "fix", "add", "--out", dbg.string()});
  ASSERT_EQ(da.exit_code, 0) << da.err;
  std::string add_prompt = test::read_text(dbg / "add" / "repair-1.prompt.md");
  EXPECT_NE(add_prompt.find("the test checks nothing that the kernel computes"), std::string::npos)
      << add_prompt;
}

// A repair that never succeeds stops after repair_rounds, with the last verdict.
TEST(Repair, ARepairThatNeverSucceedsStopsAfterTheRunsRounds) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  auto site = repair_site(script("repair/fake_llm.json"));
  create_run(*site, "two", {"negate"}, 2);
  create_run(*site, "one", {"negate"}, 1);
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kEnded, 2, 120s), 2) << d->log();
  stop(*site, *d);
  EXPECT_EQ(verdicts(*site, "two", "negate"),
            (std::vector<std::string>{"0|failed|[]", "1|failed|[]", "2|failed|[]"}));
  EXPECT_EQ(count(*site, "two", "stage_outputs stage = 'repair'"), 2);
  EXPECT_EQ(job_of(*site, "two", "negate"), "done|done|2||");
  EXPECT_EQ(verdicts(*site, "one", "negate"),
            (std::vector<std::string>{"0|failed|[]", "1|failed|[]"}));
  EXPECT_EQ(count(*site, "one", "stage_outputs stage = 'repair'"), 1);
  EXPECT_EQ(count(*site, "two", "job_events kind = 'repair'"), 2);
  // Round 2 is a request of its own (the round is part of the request's identity), not round 1's
  // stored answer, though it shows the same code and evidence.
  EXPECT_EQ(site->scalar("SELECT count(DISTINCT request_sha256) FROM stage_outputs o JOIN runs r "
                         "ON r.id = o.run_id WHERE r.tag = 'two' AND o.stage = 'repair'"),
            2);
  auto cmp = site->kforge({"compare", "one", "two", "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  json two = json::parse(cmp.out)["comparisons"][0]["runs"]["two"];
  EXPECT_EQ(two["verified"], 0);
  EXPECT_EQ(two["repair"]["rounds"].size(), 3u);
  EXPECT_EQ(two["repair"]["repaired"].size(), 0u);
}

// Where the verifier's Python lacks Triton (here: no stand-in on its path), every sample ends in
// an error flagged 'environment' after its first verification: no repair round is paid for what
// the machine lacks, and the daemon says once what is missing.
TEST(Repair, NoRoundIsSpentOnWhatTheVerifiersPythonLacks) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  if (test::run_process({"/usr/bin/python3", "-c", "import triton"}).exit_code == 0)
    GTEST_SKIP() << "triton is installed for /usr/bin/python3";
  auto site = std::make_unique<Site>(script("repair/fake_llm.json"));
  Options o;
  o.verify = true;
  site->write_config(o);
  auto r = site->kforge({"import", (repair_dir() / "corpus.json").string(), "--map",
                         "code=code,description_1=description,description_2=description", "--key",
                         "key"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  create_run(*site, "two", {"negate", "double"}, 2);
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kEnded, 2, 120s), 2) << d->log();
  stop(*site, *d);
  for (const char* key : {"negate", "double"}) {
    SCOPED_TRACE(key);
    auto v = verdicts(*site, "two", key);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0], "0|error|[\"environment\"]");
    EXPECT_EQ(job_of(*site, "two", key), "done|done|0||");
  }
  EXPECT_EQ(count(*site, "two", "stage_outputs stage = 'repair'"), 0);
  EXPECT_NE(d->log().find("samples that need them end in error, flagged 'environment' and not "
                          "repaired"),
            std::string::npos)
      << d->log();
}

// An answer that the code cannot work ends the sample with the model's reason; no further round.
TEST(Repair, AnUnfixableAnswerEndsTheSample) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  auto site = repair_site(script("repair/fake_llm.json"));
  create_run(*site, "ops", {"ops"}, 2);
  create_run(*site, "base", {"ops"}, 0);
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kEnded, 2, 120s), 2) << d->log();
  stop(*site, *d);
  auto v = verdicts(*site, "ops", "ops");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], "0|error|[]");
  std::string job = job_of(*site, "ops", "ops");
  EXPECT_EQ(job.rfind("done|done|1|unfixable|the code imports triton.ops", 0), 0u) << job;
  EXPECT_EQ(count(*site, "ops", "stage_outputs stage = 'repair'"), 1);
  EXPECT_EQ(count(*site, "ops", "job_events kind = 'unfixable'"), 1);
  EXPECT_EQ(site->fake().stats()["by_rule"].value("repair-ops", 0), 1);
  auto cmp = site->kforge({"compare", "base", "ops", "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  json ops = json::parse(cmp.out)["comparisons"][0]["runs"]["ops"];
  EXPECT_EQ(ops["repair"]["unfixable"], 1);
  EXPECT_EQ(ops["verdicts"]["error"], 1);
  fs::path dbg = site->dir().path() / "debug";
  ASSERT_EQ(site->kforge({"debug", "ops", "ops", "--out", dbg.string()}).exit_code, 0);
  EXPECT_NE(test::read_text(dbg / "ops" / "repair-1.unfixable.txt").find("triton.ops"),
            std::string::npos);
  EXPECT_NE(test::read_text(dbg / "ops" / "repair-1.prompt.md").find("No module named"),
            std::string::npos);
}

// A run that requires hip:gfx942: a passing sample whose kernel does not compile for it (32 warps
// of 64 threads) is not verified, and the repair round, reading the compiler's error, fixes the
// wrapper; a kernel with inline PTX is answered unfixable. A run without the target verifies
// both as they are, and compiles nothing.
TEST(Repair, ARequiredTargetThatDoesNotCompileIsRepairedWithTheCompilersError) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  auto site = repair_site(script("repair/fake_llm.json"));
  fs::path list = site->dir().path() / "amd.keys";
  test::write_text(list, "wide\nptx\n");
  site->create_run(
      "amd", "v1",
      {"--samples-from", list.string(), "--repair-rounds", "2", "--require-target", "hip:gfx942"});
  create_run(*site, "plain", {"wide", "ptx"}, 2);
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kEnded, 4, 120s), 4) << d->log();
  stop(*site, *d);
  EXPECT_EQ(verdicts(*site, "amd", "wide"),
            (std::vector<std::string>{"0|passed|[\"cross_compile_failed\"]", "1|passed|[]"}));
  EXPECT_EQ(verdicts(*site, "amd", "ptx"),
            std::vector<std::string>{"0|passed|[\"cross_compile_failed\"]"});
  std::string job = job_of(*site, "amd", "ptx");
  EXPECT_EQ(job.rfind("done|done|1|unfixable|the kernel copies through inline PTX", 0), 0u) << job;
  EXPECT_EQ(site->fake().stats()["by_rule"].value("repair-wide", 0), 1);
  EXPECT_EQ(site->fake().stats()["by_rule"].value("repair-ptx", 0), 1);
  EXPECT_EQ(verdicts(*site, "plain", "wide"), std::vector<std::string>{"0|passed|[]"});
  EXPECT_EQ(verdicts(*site, "plain", "ptx"), std::vector<std::string>{"0|passed|[]"});
  EXPECT_EQ(count(*site, "plain", "stage_outputs stage = 'repair'"), 0);
  // The repair prompt carried the compiler's error.
  fs::path dbg = site->dir().path() / "debug";
  ASSERT_EQ(site->kforge({"debug", "amd", "wide", "--out", dbg.string()}).exit_code, 0);
  std::string prompt = test::read_text(dbg / "wide" / "repair-1.prompt.md");
  EXPECT_NE(prompt.find("- `hip:gfx942`, kernel `wide_kernel`:"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("ttgir: RuntimeError: num_warps * warp_size = 2048 threads per block"),
            std::string::npos)
      << prompt;
  // Export keeps what compiles; compare gives the rate per target.
  fs::path out = site->dir().path() / "amd.jsonl";
  auto ex = site->kforge({"export", "amd", "--out", out.string(), "--compiles-for", "hip:gfx942"});
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  EXPECT_NE(ex.out.find("exported 1 sample of amd"), std::string::npos) << ex.out;
  json rec = json::parse(test::read_text(out));
  EXPECT_EQ(rec["key"], "wide");
  EXPECT_EQ(rec["cross_compile"], json({{"hip:gfx942", "ok"}}));
  EXPECT_EQ(rec["status"], "verified");
  auto cmp = site->kforge({"compare", "plain", "amd", "--json"});
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  json amd = json::parse(cmp.out)["comparisons"][0]["runs"]["amd"];
  EXPECT_EQ(amd["cross_compile"]["hip:gfx942"]["ok"], 1) << amd.dump();
  EXPECT_EQ(amd["cross_compile"]["hip:gfx942"]["error"], 1) << amd.dump();
  auto bad = site->kforge({"run", "create", "x", "--pipeline", "v1", "--require-target", "gfx942"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--require-target: 'gfx942' is not BACKEND:ARCH"), std::string::npos)
      << bad.err;
}

// kill -9 between rounds: the result is the uninterrupted one, and no answer that was stored is
// asked for again (a paid round is never repeated).
TEST(Repair, KillNineBetweenRoundsResumesWithoutRepeatingAPaidRound) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  json fake = script("repair/fake_llm.json");
  for (auto& rule : fake["rules"])
    if (rule["name"].get<std::string>().rfind("repair", 0) == 0) rule["latency_ms"] = 300;
  const std::vector<std::string> keys = {"add", "double", "negate", "ops"};
  auto summary = [&](Site& s) {
    auto rows = s.rows(
        "SELECT s.key, o.stage, o.repair_round, o.attempt, o.status, "
        "coalesce(kf_text(o.parsed_text), '') "
        "FROM stage_outputs o JOIN samples s ON s.id = o.sample_id ORDER BY s.key, o.id",
        6);
    for (auto& r : s.rows("SELECT s.key, v.repair_round, v.verdict, v.flags_json FROM "
                          "verifications v JOIN samples s ON s.id = v.sample_id ORDER BY s.key, "
                          "v.repair_round",
                          4))
      rows.push_back(r);
    for (const auto& k : keys) rows.push_back(job_of(s, "r", k));
    return rows;
  };
  auto ref = repair_site(fake);
  create_run(*ref, "r", keys, 2);
  {
    auto d = ref->start_daemon();
    ASSERT_EQ(ref->wait_for(kEnded, 4, 120s), 4) << d->log();
    stop(*ref, *d);
  }

  auto site = repair_site(fake);
  create_run(*site, "r", keys, 2);
  // Kill when the first job waits for its repair, when the first repair answer is stored, and
  // when the first round-2 repair is asked for.
  const std::vector<std::string> points = {
      "SELECT count(*) FROM jobs WHERE stage = 'repair'",
      "SELECT count(*) FROM stage_outputs WHERE stage = 'repair'",
      "SELECT count(*) FROM jobs WHERE stage = 'repair' AND repair_round = 2"};
  std::set<std::string> durable;
  json before = json::object();
  std::int64_t lost_in_flight = 0;
  for (std::size_t i = 0; i <= points.size(); ++i) {
    auto d = site->start_daemon();
    if (i < points.size()) {
      ASSERT_GE(site->wait_for(points[i], 1, 120s), 1) << d->log();
      d->kill9();
      auto until = std::chrono::steady_clock::now() + 10s;
      while (site->fake().stats()["in_flight"].get<int>() > 0 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(5ms);
    } else {
      ASSERT_EQ(site->wait_for(kEnded, 4, 120s), 4) << d->log();
      stop(*site, *d);
    }
    json now = site->fake().stats()["answered_by_hash"];
    for (const auto& [hash, n] : now.items()) {
      std::int64_t was = before.value(hash, std::int64_t{0});
      if (n.get<std::int64_t>() > was && was > 0) {
        EXPECT_EQ(durable.count(hash), 0u) << "a request whose answer was stored was sent again";
        lost_in_flight += n.get<std::int64_t>() - was;
      }
    }
    durable = site->durable_answers();
    before = now;
  }
  EXPECT_EQ(summary(*site), summary(*ref));
  // One answer per round and attempt, one verdict per round.
  EXPECT_EQ(site->scalar("SELECT count(*) FROM (SELECT job_id, stage, repair_round, attempt FROM "
                         "stage_outputs GROUP BY 1, 2, 3, 4 HAVING count(*) > 1)"),
            0);
  EXPECT_EQ(site->scalar("SELECT count(*) FROM (SELECT job_id, repair_round FROM verifications "
                         "GROUP BY 1, 2 HAVING count(*) > 1)"),
            0);
  std::int64_t repeated = 0;
  json answered = site->fake().stats()["answered_by_hash"];
  for (const auto& [hash, n] : answered.items()) repeated += n.get<std::int64_t>() - 1;
  EXPECT_EQ(repeated, lost_in_flight);
}

}  // namespace
}  // namespace kforge::pipeline::e2e
