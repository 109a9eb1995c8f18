// Batch mode end to end: the real kforged in llm.mode batch against the fake provider's Files
// and Batch API, over the tests' corpus: the same stage outputs as an interactive run, and a
// kill -9 at every step of a batch (uploaded, created, polled, downloaded, recorded) with no
// request paid twice.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <algorithm>

#include <sstream>

#include "daemon_util.hpp"

namespace kforge::pipeline::e2e {
namespace {

Options batch_options(const std::string& mode_lines) {
  Options o;
  o.max_in_flight = kN;
  o.llm_extra = mode_lines +
                "  batch:\n    collect_ms: 300\n    poll_ms: 50\n"
                "  prices:\n    fake-model: {prompt_per_mtok: 1, completion_per_mtok: 2}\n";
  return o;
}

int max_paid(Site& s) {
  int m = 0;
  json by_id = s.fake().stats()["batch"]["lines_by_custom_id"];
  for (const auto& [id, n] : by_id.items()) m = std::max(m, n.get<int>());
  return m;
}

// An uninterrupted interactive run: the reference.
std::pair<std::vector<std::string>, std::vector<std::string>> reference() {
  static std::pair<std::vector<std::string>, std::vector<std::string>> ref = [] {
    Site site(script("fake_llm_answers.json"));
    Options o;
    o.max_in_flight = kN;
    site.write_config(o);
    site.import_corpus();
    site.create_run("v2", "v2");
    auto d = site.start_daemon();
    if (site.wait_for(kPastLlm, kN) != kN) throw std::runtime_error(d->log());
    d->signal(SIGTERM);
    d->wait(20s);
    return std::make_pair(final_states(site, "v2"), outputs(site, "v2"));
  }();
  return ref;
}

TEST(BatchDaemon, AV2RunInBatchModeGivesTheInteractiveRunsOutputsAtHalfThePrice) {
  auto ref = reference();
  Site site(script("fake_llm_answers.json"));
  // Per model: this model in batch mode, the default interactive.
  site.write_config(batch_options("  modes:\n    fake-model: batch\n"));
  site.import_corpus();
  site.create_run("v2", "v2");
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for(kPastLlm, kN), kN) << d->log();
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait(20s), 0) << d->log();
  EXPECT_EQ(final_states(site, "v2"), ref.first);
  EXPECT_EQ(outputs(site, "v2"), ref.second);
  json st = site.fake().stats();
  EXPECT_EQ(st["requests"], st["batch"]["lines"]) << "nothing went to the interactive endpoint";
  EXPECT_EQ(max_paid(site), 1);
  // Stages of a sample follow each other batch after batch: analyze, then generate.
  EXPECT_GE(site.scalar("SELECT count(*) FROM llm_batches WHERE state = 'done'"), 2);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_batches WHERE state <> 'done'"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok'"),
            st["batch"]["lines"].get<std::int64_t>());
  // The batch price: half of the listed one.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok' AND "
                        "abs(cost_usd - 0.5 * (prompt_tokens + 2.0 * completion_tokens) / 1e6) "
                        "> 1e-12"),
            0);
}

struct KillPoint {
  const char* name;
  const char* hold_after;  // the fake holds its answer after this step; "" none
  const char* wait_sql;    // else: kill when this count is >= 1
};

void PrintTo(const KillPoint& k, std::ostream* os) {
  *os << k.name;
}

class BatchKill : public ::testing::TestWithParam<KillPoint> {};

// The daemon is killed once at the point, restarted, and runs to the end.
TEST_P(BatchKill, AtEveryStepNoRequestIsPaidTwice) {
  const KillPoint& k = GetParam();
  auto ref = reference();
  json s = script("fake_llm_answers.json");
  if (*k.hold_after) s["batch"] = {{"hold_after", k.hold_after}, {"hold_ms", 20'000}};
  Site site(s);
  site.write_config(batch_options("  mode: batch\n"));
  site.import_corpus();
  site.create_run("v2", "v2");
  {
    auto d = site.start_daemon();
    if (*k.hold_after) {
      auto until = std::chrono::steady_clock::now() + 60s;
      while (site.fake().stats()["batch"]["holds"].get<int>() < 1 &&
             std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(5ms);
      ASSERT_EQ(site.fake().stats()["batch"]["holds"], 1) << d->log();
    } else {
      ASSERT_GE(site.wait_for(k.wait_sql, 1), 1) << d->log();
    }
    d->kill9();
  }
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for(kPastLlm, kN), kN) << d->log();
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait(20s), 0) << d->log();

  json st = site.fake().stats();
  EXPECT_EQ(max_paid(site), 1) << k.name << ": a request was answered (paid) twice";
  EXPECT_EQ(st["requests"], st["batch"]["lines"]) << "nothing went to the interactive endpoint";
  EXPECT_EQ(st["batch"]["created"].get<std::int64_t>(),
            site.scalar("SELECT count(*) FROM llm_batches"))
      << "every batch created at the provider is one of ours, none created twice";
  EXPECT_EQ(st["batch"]["files"].get<std::int64_t>(),
            site.scalar("SELECT count(*) FROM llm_batches"))
      << "every input file uploaded once";
  EXPECT_EQ(final_states(site, "v2"), ref.first);
  EXPECT_EQ(outputs(site, "v2"), ref.second);
  // The cost shown is the bill: every answer priced once, at the batch price.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok' AND "
                        "abs(cost_usd - 0.5 * (prompt_tokens + 2.0 * completion_tokens) / 1e6) "
                        "> 1e-12"),
            0)
      << k.name;
  EXPECT_EQ(site.scalar("SELECT count(*) FROM (SELECT request_sha256 FROM llm_calls WHERE "
                        "status = 'ok' GROUP BY 1 HAVING count(*) > 1)"),
            0);
  std::string name = k.name;
  if (name == "created") {
    EXPECT_NE(d->log().find("found at the provider"), std::string::npos) << d->log();
  }
  if (name == "uploaded") {
    EXPECT_NE(d->log().find("input file"), std::string::npos) << d->log();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Steps, BatchKill,
    ::testing::Values(
        KillPoint{"uploaded", "upload", ""}, KillPoint{"created", "create", ""},
        KillPoint{"polled", "poll", ""}, KillPoint{"downloaded", "content", ""},
        KillPoint{"recorded", "",
                  "SELECT count(*) FROM llm_batch_lines WHERE state IN ('answered', 'applied')"},
        KillPoint{"checkpointed", "",
                  "SELECT count(*) FROM stage_outputs WHERE stage = 'analyze'"}),
    [](const ::testing::TestParamInfo<KillPoint>& p) { return std::string(p.param.name); });

// What `vllm run-batch` does with an input file, against the fake provider's chat endpoint:
// one result line per request, {"custom_id", "response": {"status_code", "body"}}.
std::string run_batch(Site& site, const std::string& input) {
  httplib::Client http("127.0.0.1", site.fake().port());
  std::string out;
  std::istringstream in(input);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json l = json::parse(line);
    auto r = http.Post("/v1/chat/completions", l["body"].dump(), "application/json");
    if (!r) throw std::runtime_error("the fake provider did not answer");
    out += json{{"id", "vllm-" + l["custom_id"].get<std::string>().substr(0, 8)},
                {"custom_id", l["custom_id"]},
                {"response",
                 {{"status_code", r->status}, {"request_id", "r"}, {"body", json::parse(r->body)}}},
                {"error", nullptr}}
               .dump() +
           "\n";
  }
  return out;
}

TEST(BatchOffline, ExportAndImportRunTheWholePipelineWithoutAProviderOrADaemon) {
  auto ref = reference();
  Site site(script("fake_llm_answers.json"));
  site.write_config(batch_options(""));
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  fs::path res = site.dir() / "results.jsonl";
  int rounds = 0;
  for (; rounds < 5 && site.scalar(kPastLlm) < kN; ++rounds) {
    auto e = site.kforge({"batch", "export", "v2", "--out", req.string()});
    ASSERT_EQ(e.exit_code, 0) << e.err;
    std::string input = test::read_text(req);
    ASSERT_FALSE(input.empty()) << "no ready request, yet jobs are not past the LLM stages";
    // Exporting again writes the same requests: nothing was consumed.
    auto e2 =
        site.kforge({"batch", "export", "v2", "--out", (site.dir() / "again.jsonl").string()});
    ASSERT_EQ(e2.exit_code, 0) << e2.err;
    EXPECT_EQ(test::read_text(site.dir() / "again.jsonl"), input);
    test::write_text(res, run_batch(site, input));
    auto i = site.kforge({"batch", "import", "v2", res.string(), "--json"});
    ASSERT_EQ(i.exit_code, 0) << i.err;
    json r = json::parse(i.out);
    EXPECT_EQ(r["checkpointed"], r["answers"]) << i.out;
    // Importing the same file again changes nothing.
    auto again = site.kforge({"batch", "import", "v2", res.string(), "--json"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(json::parse(again.out)["checkpointed"], 0) << again.out;
    // ... and says why: every answer was imported before, none is for another run.
    EXPECT_EQ(json::parse(again.out)["imported_before"], r["answers"]) << again.out;
    EXPECT_EQ(json::parse(again.out)["not_ready"], 0) << again.out;
  }
  EXPECT_EQ(rounds, 2) << "analyze, then generate";
  EXPECT_EQ(site.scalar(kPastLlm), kN);
  EXPECT_EQ(final_states(site, "v2"), ref.first);
  EXPECT_EQ(outputs(site, "v2"), ref.second);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_batches"), 0) << "no provider batch was made";
}

// Issue 56, 7: export writes its lines as they come, into a temporary file renamed into place:
// standard output gets the same lines, and a failed export leaves the old file whole, no
// temporary file, and nothing on standard output.
TEST(BatchOffline, ExportWritesAsItGoesAndAFailedExportLeavesNothingHalfWritten) {
  Site site(script("fake_llm_answers.json"));
  site.write_config(batch_options(""));
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  auto e = site.kforge({"batch", "export", "v2", "--out", req.string()});
  ASSERT_EQ(e.exit_code, 0) << e.err;
  std::string input = test::read_text(req);
  EXPECT_GT(std::count(input.begin(), input.end(), '\n'), 0);
  auto out = site.kforge({"batch", "export", "v2", "--out", "-"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out, input);
  fs::path old = site.dir() / "old.jsonl";
  test::write_text(old, "old\n");
  auto bad = site.kforge({"batch", "export", "no-such-run", "--out", old.string()});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_EQ(test::read_text(old), "old\n");
  for (const auto& f : fs::directory_iterator(site.dir().path()))
    EXPECT_EQ(f.path().filename().string().find("old.jsonl.tmp"), std::string::npos) << f.path();
  auto bad_out = site.kforge({"batch", "export", "no-such-run", "--out", "-"});
  EXPECT_NE(bad_out.exit_code, 0);
  EXPECT_EQ(bad_out.out, "");
}

// An answer the kernel-fact checks reject is counted as rejected, not checkpointed; a second
// import of the file counts every answer as imported before; one for no request of the run is
// counted apart.
TEST(BatchOffline, ImportCountsRejectedAnswersAndReimportsHonestly) {
  Site site(script("fake_llm_answers.json"));
  site.write_config(batch_options(""));
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  ASSERT_EQ(site.kforge({"batch", "export", "v2", "--out", req.string()}).exit_code, 0);
  std::istringstream in(run_batch(site, test::read_text(req)));
  std::string results, line, last;
  int n = 0;
  while (std::getline(in, line)) {
    last = line;
    if (n++ == 0) {
      // The first analysis names a kernel its code does not define.
      json l = json::parse(line);
      json& message = l["response"]["body"]["choices"][0]["message"];
      json answer = json::parse(message["content"].get<std::string>());
      answer["analysis"]["kernel_launches"][0]["kernel"] = "no_such_kernel";
      message["content"] = answer.dump();
      line = l.dump();
    }
    results += line + "\n";
  }
  // And an answer for a request no run of this database made.
  json stray = json::parse(last);
  stray["custom_id"] = std::string(64, 'f');
  results += stray.dump() + "\n";
  fs::path res = site.dir() / "results.jsonl";
  test::write_text(res, results);
  auto i = site.kforge({"batch", "import", "v2", res.string(), "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  json r = json::parse(i.out);
  EXPECT_EQ(r["answers"], n + 1) << i.out;
  EXPECT_EQ(r["rejected"], 1) << i.out;
  EXPECT_EQ(r["checkpointed"], n - 1) << i.out;
  EXPECT_EQ(r["not_ready"], 1) << i.out;
  EXPECT_EQ(r["imported_before"], 0) << i.out;
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs WHERE status = 'rejected'"), 1);
  auto again = site.kforge({"batch", "import", "v2", res.string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("of the " + std::to_string(n + 1) +
                           " answers: 0 checkpointed, 0 rejected by the checks and 0 unusable "
                           "(their requests are asked again), " +
                           std::to_string(n) + " imported before, 1 not for a ready request"),
            std::string::npos)
      << again.out;
}

TEST(BatchOffline, AResultFileIsValidatedLineByLineAndNothingIsImportedFromABadOne) {
  Site site(script("fake_llm_answers.json"));
  site.write_config(batch_options(""));
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  ASSERT_EQ(site.kforge({"batch", "export", "v2", "--out", req.string()}).exit_code, 0);
  std::string good = run_batch(site, test::read_text(req));
  std::istringstream in(good);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  json bad = json::parse(second);
  bad["response"]["status_code"] = "200";
  fs::path res = site.dir() / "results.jsonl";
  test::write_text(res, first + "\n" + bad.dump() + "\nnot json\n" + first + "\n");
  auto r = site.kforge({"batch", "import", "v2", res.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(res.string() + ":2: response.status_code: expected an integer"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(res.string() + ":3: not a JSON object"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(res.string() + ":4: custom_id"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("appears again (first at line 1)"), std::string::npos) << r.err;
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls"), 0);
  auto none = site.kforge({"batch", "import", "nosuch", res.string()});
  EXPECT_NE(none.exit_code, 0);
}

// Issue 43, 4: vLLM writes a failed request as "response": {"status_code": 400, "body": null}
// with its error as a string. The import takes it as a failed line (its request queued, the
// error recorded) and says which lines were new, already recorded, unknown or failed.
TEST(BatchOffline, ImportTakesVllmFailedLinesAndSaysWhichLinesWereNewKnownUnknownOrFailed) {
  Site site(script("fake_llm_answers.json"));
  site.write_config(batch_options(""));
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  ASSERT_EQ(site.kforge({"batch", "export", "v2", "--out", req.string()}).exit_code, 0);
  std::istringstream in(run_batch(site, test::read_text(req)));
  std::string results, line, failed_id, last;
  int n = 0;
  while (std::getline(in, line)) {
    json l = json::parse(line);
    last = line;
    if (n++ == 0) {
      failed_id = l["custom_id"];
      l["response"] = {{"status_code", 400}, {"request_id", "vllm-batch-1"}, {"body", nullptr}};
      l["error"] = "The prompt is too long for this model's context (kforge test).";
      line = l.dump();
    }
    results += line + "\n";
  }
  fs::path res = site.dir() / "results.jsonl";
  test::write_text(res, results);
  auto i = site.kforge({"batch", "import", "v2", res.string(), "--json"});
  ASSERT_EQ(i.exit_code, 0) << i.err;
  json r = json::parse(i.out);
  EXPECT_EQ(r["new"], n - 1) << i.out;
  EXPECT_EQ(r["failed"], 1) << i.out;
  EXPECT_EQ(r["already_recorded"], 0) << i.out;
  EXPECT_EQ(r["unknown"], 0) << i.out;
  // The failed line's error is recorded; its request stays queued for the next export.
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE request_sha256 = '" + failed_id +
                        "' AND status = 'error' AND http_status = 400 AND cost_usd = 0 AND error "
                        "LIKE '%too long for this model%'"),
            1);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'failed'"), 0);
  ASSERT_EQ(site.kforge({"batch", "export", "v2", "--out", req.string()}).exit_code, 0);
  EXPECT_NE(test::read_text(req).find(failed_id), std::string::npos)
      << "the failed line's request is exported again";
  // Again, with an answer for a request no run made: nothing new, the rest told apart.
  json stray = json::parse(last);
  stray["custom_id"] = std::string(64, 'e');
  test::write_text(res, results + stray.dump() + "\n");
  auto again = site.kforge({"batch", "import", "v2", res.string(), "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  json a = json::parse(again.out);
  EXPECT_EQ(a["new"], 0) << again.out;
  EXPECT_EQ(a["already_recorded"], n - 1) << again.out;
  EXPECT_EQ(a["unknown"], 1) << again.out;
  EXPECT_EQ(a["failed"], 1) << again.out;
  auto text = site.kforge({"batch", "import", "v2", res.string()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(std::to_string(n + 1) + " lines in " + res.string() + ": 0 new, " +
                          std::to_string(n - 1) + " already recorded, 1 unknown"),
            std::string::npos)
      << text.out;
}

// Issue 56, 7: an older vLLM writes a failed line's error.code as a number, a newer one nests the
// error object in another: both are failed lines with their message (the file's good lines
// imported too), and importing the same failed line again records it once.
TEST(BatchOffline, ImportReadsErrorCodesOfAnyTypeAndNestedMessagesAndRecordsAFailedLineOnce) {
  Site site(script("fake_llm_answers.json"));
  site.write_config(batch_options(""));
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  ASSERT_EQ(site.kforge({"batch", "export", "v2", "--out", req.string()}).exit_code, 0);
  std::istringstream in(run_batch(site, test::read_text(req)));
  std::string results, line, numeric_id, nested_id;
  int n = 0;
  while (std::getline(in, line)) {
    json l = json::parse(line);
    if (n == 0 || n == 1) {
      l["response"] = {{"status_code", 400}, {"request_id", "vllm-batch-1"}, {"body", nullptr}};
      if (n == 0) {
        numeric_id = l["custom_id"];
        l["error"] = {{"code", 400}, {"message", "numeric code (kforge test)"}};
      } else {
        nested_id = l["custom_id"];
        l["error"] = {{"error", {{"message", "nested message (kforge test)"}, {"code", 400}}}};
      }
      line = l.dump();
    }
    ++n;
    results += line + "\n";
  }
  fs::path res = site.dir() / "results.jsonl";
  test::write_text(res, results);
  for (int pass = 0; pass < 2; ++pass) {
    auto i = site.kforge({"batch", "import", "v2", res.string(), "--json"});
    ASSERT_EQ(i.exit_code, 0) << i.err;
    json r = json::parse(i.out);
    EXPECT_EQ(r["failed"], 2) << i.out;
    EXPECT_EQ(r[pass == 0 ? "new" : "already_recorded"], n - 2) << i.out;
  }
  EXPECT_EQ(
      site.scalar("SELECT count(*) FROM llm_calls WHERE request_sha256 = '" + numeric_id +
                  "' AND status = 'error' AND error LIKE '%400: numeric code (kforge test)%'"),
      1);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE request_sha256 = '" + nested_id +
                        "' AND status = 'error' AND error LIKE '%400: nested message (kforge "
                        "test)%'"),
            1);
}

// Issue 56, 7: kforge batch import reads a result file a line at a time, each answer when its
// request comes, and holds at most llm.batch.lines_in_memory of them at once: a file of big
// answers (each line padded to 2 MB, as long answers or a provider's extra fields make it; 80 MB
// in all) is imported whole with a peak memory under the file's size.
TEST(BatchOffline, ImportHoldsAFewAnswersAtATimeNotTheWholeFile) {
  Site site(script("fake_llm_answers.json"));
  Options o;
  o.llm_extra = "  batch:\n    lines_in_memory: 2\n";
  site.write_config(o);
  site.import_corpus();
  site.create_run("v2", "v2");
  fs::path req = site.dir() / "requests.jsonl";
  ASSERT_EQ(site.kforge({"batch", "export", "v2", "--out", req.string()}).exit_code, 0);
  std::istringstream in(run_batch(site, test::read_text(req)));
  fs::path res = site.dir() / "results.jsonl";
  int n = 0;
  {
    std::ofstream out(res, std::ios::binary);
    const std::string padding(2 << 20, 'p');
    for (std::string line; std::getline(in, line); ++n) {
      json l = json::parse(line);
      l["response"]["body"]["kforge_padding"] = padding;
      out << l.dump() << "\n";
    }
  }
  ASSERT_EQ(n, kN);
  ASSERT_GT(fs::file_size(res), 80u << 20);
  SpawnOptions so;
  so.argv = {test::binary("apps/kforge/kforge").string(),
             "--config",
             site.config().string(),
             "batch",
             "import",
             "v2",
             res.string(),
             "--json"};
  so.new_session = false;
  auto pid = default_env().spawn(so);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  auto end = default_env().wait(*pid, WaitMode::block);
  ASSERT_TRUE(end);
  ASSERT_TRUE(WIFEXITED(end->status) && WEXITSTATUS(end->status) == 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM stage_outputs WHERE stage = 'analyze' AND "
                        "status = 'ok'"),
            kN)
      << "every answer imported";
  // Held whole, the file alone would take its 80 MB (and every answer in flight at once a copy
  // of it and more); a few at a time, the program's own memory and two answers being recorded.
  EXPECT_LT(static_cast<std::uintmax_t>(end->maxrss_kb) << 10, fs::file_size(res))
      << "peak " << end->maxrss_kb / 1024 << " MB for a " << fs::file_size(res) / (1 << 20)
      << " MB file";
}

// Issue 56, 7: kforged killed while the provider deletes a batch's files, its lines recorded
// and not yet written as calls (the files' DELETE is the step between the two): after the next
// start every answer is priced once at the batch price (the cost shown is the bill), and no file
// is left at the provider.
TEST(BatchDaemon, KilledWhileTheFilesAreDeletedEveryAnswerIsPricedAndNoFileIsLeft) {
  json s = script("fake_llm_answers.json");
  s["batch"] = {{"hold_after", "delete"}, {"hold_ms", 20'000}};
  Site site(s);
  site.write_config(batch_options("  mode: batch\n"));
  site.import_corpus();
  site.create_run("v2", "v2");
  {
    auto d = site.start_daemon();
    auto until = std::chrono::steady_clock::now() + 60s;
    while (site.fake().stats()["batch"]["holds"].get<int>() < 1 &&
           std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(5ms);
    ASSERT_EQ(site.fake().stats()["batch"]["holds"], 1) << d->log();
    d->kill9();
  }
  ASSERT_EQ(site.scalar("SELECT count(*) FROM llm_batches WHERE state = 'done' AND "
                        "files_deleted_ms IS NULL"),
            1);
  ASSERT_EQ(site.scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'applied'"), 0)
      << "nothing is applied before its llm_calls row is written";
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for(kPastLlm, kN), kN) << d->log();
  d->signal(SIGTERM);
  ASSERT_EQ(d->wait(20s), 0) << d->log();
  json st = site.fake().stats();
  EXPECT_EQ(st["batch"]["files_stored"], 0) << "no file left at the provider";
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_batches WHERE files_deleted_ms IS NULL"), 0);
  EXPECT_EQ(max_paid(site), 1);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok'"),
            st["batch"]["lines"].get<std::int64_t>());
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_calls WHERE status = 'ok' AND "
                        "abs(cost_usd - 0.5 * (prompt_tokens + 2.0 * completion_tokens) / 1e6) "
                        "> 1e-12"),
            0)
      << "an answer recorded at $0 after the restart";
  EXPECT_EQ(site.scalar("SELECT count(*) FROM llm_batch_lines WHERE state = 'answered'"), 0);
}

// Issue 43, 3: a completion window the provider refuses (configured as accepted, wrongly) is
// not a loop of uploads: the run pauses with the provider's message, no job fails, and the
// input file is deleted.
TEST(BatchDaemon, ACompletionWindowTheProviderRefusesPausesTheRunWithItsMessage) {
  Site site(script("fake_llm_answers.json"));
  Options o;
  o.max_in_flight = kN;
  o.llm_extra =
      "  mode: batch\n"
      "  batch:\n    collect_ms: 300\n    poll_ms: 50\n    completion_window: 1h\n"
      "    accepted_windows: [24h, 1h]\n";
  site.write_config(o);
  site.import_corpus();
  site.create_run("v2", "v2");
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM runs WHERE state = 'paused'", 1), 1) << d->log();
  std::this_thread::sleep_for(1s);  // time for a loop to show, if there were one
  json st = site.fake().stats()["batch"];
  EXPECT_EQ(st["files"], 1) << "uploaded once";
  EXPECT_EQ(st["refused_creates"], 1);
  EXPECT_EQ(st["deleted_files"], 1);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM jobs WHERE state = 'failed'"), 0);
  EXPECT_EQ(site.scalar("SELECT count(*) FROM job_events WHERE kind = 'paused' AND message LIKE "
                        "'%Invalid value for ''completion_window''%llm.batch.completion_window%'"),
            1);
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(20s), 0) << d->log();
}

TEST(BatchDaemon, StatusAndMetricsShowTheBatchesInFlight) {
  json s = script("fake_llm_answers.json");
  s["batch"] = {{"latency_ms", 60'000}};
  Site site(s);
  Options o = batch_options("  mode: batch\n");
  int port = free_port();
  o.http_listen = "127.0.0.1:" + std::to_string(port);
  site.write_config(o);
  site.import_corpus();
  site.create_run("v2", "v2");
  auto d = site.start_daemon();
  ASSERT_EQ(site.wait_for("SELECT count(*) FROM llm_batches WHERE state = 'submitted' AND "
                          "provider_status = 'in_progress'",
                          1),
            1)
      << d->log();
  auto j = site.kforge({"status", "v2", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json st = json::parse(j.out);
  ASSERT_EQ(st["runs"][0]["batches"].size(), 1u) << j.out;
  json b = st["runs"][0]["batches"][0];
  EXPECT_EQ(b["provider_status"], "in_progress");
  EXPECT_EQ(b["run_lines"], kN);
  EXPECT_EQ(b["lines"], kN);
  EXPECT_GE(b["age_s"].get<int>(), 0);
  auto t = site.kforge({"status", "v2"});
  EXPECT_NE(t.out.find("batch    "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("in_progress, " + std::to_string(kN) + " of this run's requests"),
            std::string::npos)
      << t.out;
  // The metrics page is refreshed every second.
  std::string metrics;
  for (int i = 0; i < 50; ++i) {
    httplib::Client http("127.0.0.1", port);
    auto r = http.Get("/metrics");
    metrics = r ? r->body : "";
    if (metrics.find("kforge_llm_batches_open 1\n") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_NE(metrics.find("kforge_llm_batches_open 1\n"), std::string::npos) << metrics;
  EXPECT_NE(
      metrics.find("kforge_llm_batch_requests{state=\"in_batch\"} " + std::to_string(kN) + "\n"),
      std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("kforge_llm_batches_total{how=\"created\"} 1\n"), std::string::npos)
      << metrics;
  d->kill9();
}

}  // namespace
}  // namespace kforge::pipeline::e2e
