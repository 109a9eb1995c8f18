// The report as a declared contract (kforge_harness/report_fields.txt, harness_report.hpp): the
// pool parses each report once and fails closed, naming the field, for a field missing, renamed,
// unknown, of the wrong type, the pool's, or a report of another version; the harness checks its
// own report before writing it (contract/report_schema_test.py) and refuses a request of another
// version; a verdict line whose report does not parse is refused. The worker's events
// (worker_events.txt, worker_event.hpp) are declared the same way: an undeclared event, or a field
// renamed, is refused naming it; so are the pool's messages to the worker (worker_ops.txt), built
// through worker_op_text and refused by the worker when it does not declare them.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "kforge/verify/harness_report.hpp"
#include "kforge/verify/record_run.hpp"
#include "kforge/verify/verdict_line.hpp"
#include "kforge/verify/worker_event.hpp"
#include "verify_util.hpp"

namespace kforge::test {
namespace {

using verify::ReportOrigin;
using verify::Verdict;
using Json = nlohmann::json;

std::string parse_error(const Json& report, ReportOrigin origin = ReportOrigin::harness) {
  auto r = verify::parse_harness_report(report, origin);
  return r.ok() ? std::string("(parsed)") : r.error().message;
}

TEST(VerifyHarnessReport, PythonReportCheck) {
  TempDir tmp;
  auto r = run_process(
      {sandbox_python(), (source_dir() / "tests/verify/contract/report_schema_test.py").string(),
       (source_dir() / "libs/verify/harness").string(),
       (source_dir() / "tests/verify/fake_triton").string(),
       (source_dir() / "tests/verify/samples").string()},
      {"TMPDIR=" + tmp.path().string()}, 120);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("Ran 21 tests"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nOK"), std::string::npos) << r.err;
}

TEST(VerifyHarnessReport, TheDeclaredFieldsAreReadTyped) {
  EXPECT_GE(verify::harness_report_version(), 2);
  Json report = harness_json(
      {{"tests", {{{"name", "test_a"}, {"status", "passed"}, {"duration_ms", 12}}}},
       {"import_ms", 40},
       {"triton",
        {{"available", true},
         {"version", nullptr},
         {"kernels", {"add_kernel"}},
         {"launches", {{"add_kernel", 3}}},
         {"autotune", "single"},
         {"autotune_used", Json::array()},
         {"mutant", false},
         {"compile", {{"count", 1}, {"ms", 9}, {"cpu_ms", 4}, {"child_cpu_ms", 2}}},
         {"launcher", {{"count", 0}, {"ms", 0}}}}},
       {"speed",
        {{"timed", true},
         {"environment", {{"device", "H200"}, {"torch", "2.11"}}},
         {"kernels", {{{"time_us", 4.0}, {"gbps", nullptr}, {"reps", 30}}}},
         {"reference", {{"speedup", 1.5}, {"ci", {1.2, 1.8}}, {"mode", "device"}}},
         {"pass_perf", true},
         {"flags", Json::array()}}},
       {"cross_compile",
        {{"targets", {{"hip:gfx942", {{"result", "not_run"}, {"reason", "no launch"}}}}}}},
       {"mutant_phase", true}});
  auto h = verify::parse_harness_report(report, ReportOrigin::harness);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->verdict, Verdict::passed);
  EXPECT_EQ(h->phase, "done");
  ASSERT_TRUE(h->tests);
  EXPECT_EQ((*h->tests)[0].duration_ms, 12);
  ASSERT_TRUE(h->triton);
  EXPECT_EQ(h->triton->total_launches(), 3);
  EXPECT_EQ(h->triton->compile.child_cpu_ms, 2);
  ASSERT_TRUE(h->speed);
  EXPECT_EQ(h->speed->device, "H200");
  EXPECT_EQ(h->speed->kernel_us, 4.0);
  EXPECT_EQ(h->speed->speedup_lo, 1.2);
  ASSERT_TRUE(h->cross_compile);
  EXPECT_EQ((*h->cross_compile)[0].result, store::TargetResultKind::not_run);
  EXPECT_EQ((*h->cross_compile)[0].error, "no launch");
  EXPECT_TRUE(h->mutant_phase);
}

TEST(VerifyHarnessReport, MissingRenamedUnknownWrongTypeAndVersionFailNamingTheField) {
  Json renamed = harness_json();
  renamed["details"] = renamed["detail"];
  renamed.erase("detail");
  EXPECT_EQ(parse_error(renamed), "harness report: field \"detail\" is missing");
  renamed["detail"] = "x";
  EXPECT_EQ(parse_error(renamed),
            "harness report: field \"details\" is not a field of the report (report_fields.txt)");
  EXPECT_EQ(parse_error(harness_json({{"import_ms", "12"}})),
            "harness report: field \"import_ms\" is string '12', declared int");
  EXPECT_EQ(parse_error(harness_json({{"verdict", "fine"}})),
            "harness report: field \"verdict\" is string 'fine', declared name<verdicts>");
  EXPECT_EQ(parse_error(harness_json(
                {{"tests", {{{"name", "t"}, {"status", "passed"}, {"where", {{"line", 3}}}}}}})),
            "harness report: field \"tests[0].where.section\" is missing");
  EXPECT_EQ(parse_error(harness_json(
                {{"cross_compile", {{"targets", {{"hip:gfx942", {{"result", "fine"}}}}}}}})),
            "harness report: field \"cross_compile.targets{hip:gfx942}.result\" is string "
            "'fine', declared name<target_results>");
  EXPECT_EQ(parse_error(harness_json({{"speed", {{"timed", "yes"}}}})),
            "harness report: field \"speed.timed\" is string 'yes', declared bool");
  // The pool's fields: in a stored report only.
  EXPECT_EQ(parse_error(harness_json({{"pool", {{"slot", 0}}}})),
            "harness report: field \"pool\" is the pool's to write, not the harness's");
  EXPECT_EQ(parse_error(harness_json({{"pool", {{"slot", 0}}}}), ReportOrigin::stored), "(parsed)");
  EXPECT_EQ(parse_error(harness_json({{"harness", 1}})),
            "harness report: field \"harness\" is version 1, this kforge reads version " +
                std::to_string(verify::harness_report_version()) +
                " (the harness and kforge were installed apart)");
  EXPECT_EQ(parse_error(Json::array()), "harness report: not a JSON object");
  // A stored report without the harness's (the pool made the result) is none, not an error.
  auto none = verify::parse_stored_report({{"pool", {{"error", "no device"}}}});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

// A copy of the real harness whose report writer is changed by `edit` (the text put in place of
// the writer's `if bad is None:` branch): a harness that writes its report otherwise than
// report_fields.txt declares. A sample can no longer reach the writer (docs/VERIFIER.md, "Trust
// model"), so the harness itself is changed.
std::string edited_harness(const TempDir& tmp, const std::string& name, const std::string& edit) {
  namespace fs = std::filesystem;
  fs::path dir = tmp.path() / name;
  fs::copy(source_dir() / "libs" / "verify" / "harness", dir, fs::copy_options::recursive);
  fs::path pipes = dir / "kforge_harness" / "pipes.py";
  std::ifstream in(pipes);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string branch = "    if bad is None:\n        return text\n";
  auto at = text.find(branch);
  EXPECT_NE(at, std::string::npos) << "pipes.py's writer changed: update this test";
  if (at != std::string::npos) text.replace(at, branch.size(), edit);
  std::ofstream(pipes, std::ios::trunc) << text;
  return (dir / "kforge-harness.py").string();
}

TEST(VerifyHarnessReport, ARenamedFieldOnThePythonSideIsAnInfrastructureErrorNamingIt) {
  // The real harness, its writer made to send "details" for "detail" past its own check.
  TempDir tmp;
  auto renamed = test_config(tmp);
  renamed.harness = edited_harness(tmp, "renamed",
                                   "    if bad is None:\n"
                                   "        out = _loads(text)\n"
                                   "        out[\"details\"] = out.pop(\"detail\", \"\")\n"
                                   "        return _dumps(out, default=str)\n");
  auto pool = make_pool(renamed);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("pass")});
  EXPECT_EQ(r[0].verdict, Verdict::error);
  EXPECT_EQ(r[0].detail, "harness report: field \"detail\" is missing") << r[0].stderr_tail;
  EXPECT_EQ(r[0].flags, std::vector<std::string>{verify::kInfrastructure});
  EXPECT_FALSE(r[0].harness);
  EXPECT_EQ(r[0].report["pool"]["rejected_report"]["details"], "2 tests passed");
  // A field the harness's own check does not know: it sends an error report naming it.
  TempDir tmp2;
  auto unknown = test_config(tmp2);
  unknown.harness = edited_harness(tmp2, "unknown",
                                   "    if bad is None:\n"
                                   "        report = dict(report, bogus_field=1)\n"
                                   "        return checked_report(report)\n");
  auto pool2 = make_pool(unknown);
  ASSERT_TRUE(pool2);
  auto u = run_all(*pool2, {load_sample("pass")});
  EXPECT_EQ(u[0].verdict, Verdict::error);
  EXPECT_EQ(u[0].detail,
            "harness error: report field bogus_field: is not a field of the report "
            "(report_fields.txt)")
      << u[0].stderr_tail;
  EXPECT_EQ(u[0].flags, std::vector<std::string>{verify::kInfrastructure});
  ASSERT_TRUE(u[0].harness);
  EXPECT_EQ(u[0].harness->phase, "harness");
  // The same harness, its report left alone.
  TempDir tmp3;
  auto plain = make_pool(test_config(tmp3));
  ASSERT_TRUE(plain);
  auto p = run_all(*plain, {load_sample("pass")});
  EXPECT_EQ(p[0].verdict, Verdict::passed) << p[0].detail;
  ASSERT_TRUE(p[0].harness);
  EXPECT_EQ(p[0].harness->version, verify::harness_report_version());
}

TEST(VerifyHarnessReport, AVerdictLineWhoseReportDoesNotParseIsRefused) {
  verify::VerdictLine l;
  l.index = 3;
  l.result.key = "k";
  l.result.verdict = Verdict::passed;
  set_report(l.result, {{"speed", {{"timed", false}, {"reason", "timing is off"}}}});
  l.result.report["pool"] = {{"slot", 1}};
  auto back = verify::verdict_line_from_json(verify::to_json(l).dump());
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_TRUE(back->result.harness);
  ASSERT_TRUE(back->result.harness->speed);
  EXPECT_EQ(back->result.harness->speed->reason, "timing is off");
  l.result.report["speed"]["timed_out"] = l.result.report["speed"]["timed"];
  l.result.report["speed"].erase("timed");
  auto bad = verify::verdict_line_from_json(verify::to_json(l).dump());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message,
            "verdict line: field \"report\": harness report: field \"speed.timed\" is missing");
}

std::string event_error(const std::string& line) {
  auto r = verify::parse_worker_event(line);
  return r.ok() ? std::string("(parsed)") : r.error().message;
}

TEST(VerifyWorkerEvent, TheWorkersEventsAreReadTyped) {
  auto ready = verify::parse_worker_event(
      R"({"event": "ready", "pid": 7, "modules": {"torch": null, "triton": "3.6.0"},
          "probe": {"ok": true, "note": "not asked"}, "python": "3.12.3", "harness": 5})");
  ASSERT_TRUE(ready.ok()) << ready.error().message;
  EXPECT_EQ(ready->kind, verify::WorkerEventKind::ready);
  EXPECT_EQ(ready->pid, 7);
  EXPECT_TRUE(ready->probe_ok);
  EXPECT_EQ(ready->modules["triton"], "3.6.0");
  EXPECT_TRUE(ready->triton_key.is_null());
  auto started = verify::parse_worker_event(R"({"event": "started", "id": 3, "pid": 99})");
  ASSERT_TRUE(started.ok()) << started.error().message;
  EXPECT_EQ(started->kind, verify::WorkerEventKind::started);
  EXPECT_EQ(started->id, 3);
  EXPECT_EQ(started->pid, 99);
  auto finished = verify::parse_worker_event(
      R"({"event": "finished", "id": 3, "status": 256, "maxrss_kb": 1024, "cpu_ms": 40,
          "elapsed_ms": 55})");
  ASSERT_TRUE(finished.ok()) << finished.error().message;
  EXPECT_EQ(finished->kind, verify::WorkerEventKind::finished);
  EXPECT_EQ(finished->status, 256);
  EXPECT_EQ(finished->maxrss_kb, 1024);
  EXPECT_EQ(finished->cpu_ms, 40);
}

TEST(VerifyWorkerEvent, AnUndeclaredEventOrFieldIsRefusedNamingIt) {
  EXPECT_EQ(event_error(R"({"event": "paused", "id": 3})"),
            "worker event: 'paused' is not an event of worker_events.txt (ready, started, "
            "finished)");
  EXPECT_EQ(event_error(R"({"event": "finished", "id": 3, "status": 0, "maxrss_kb": 1,
                            "cpu": 40, "elapsed_ms": 5})"),
            "worker event: field \"finished.cpu_ms\" is missing");
  EXPECT_EQ(event_error(R"({"event": "started", "id": 3, "pid": 99, "note": "x"})"),
            "worker event: field \"started.note\" is not a field of the event "
            "(worker_events.txt)");
  EXPECT_EQ(event_error(R"({"event": "started", "id": 3, "pid": "99"})"),
            "worker event: field \"started.pid\" is string '99', declared int");
  EXPECT_EQ(event_error(R"({"id": 3})"), "worker event: field \"event\" is missing or not text");
  EXPECT_EQ(event_error("not json"), "worker event: not a JSON object: not json");
}

// The real worker, made to send an event the file does not declare (past its own check): the
// pool refuses it, naming it, and takes the worker for failed; with one start failure allowed,
// the device leaves the rotation with that reason, and the sample is not run on a worker the
// pool cannot read.
TEST(VerifyWorkerEvent, AnUndeclaredEventFromTheWorkerFailsItNamingTheEvent) {
  namespace fs = std::filesystem;
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.max_start_failures = 1;
  fs::path dir = tmp.path() / "paused";
  fs::copy(source_dir() / "libs" / "verify" / "harness", dir, fs::copy_options::recursive);
  fs::path worker = dir / "kforge_harness" / "worker.py";
  std::ifstream in(worker);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string send = "    send_event(sock, ready)\n";
  auto at = text.find(send);
  ASSERT_NE(at, std::string::npos) << "worker.py's ready event changed: update this test";
  text.replace(at, send.size(),
               "    sock.send(json.dumps(dict(ready, event=\"paused\")).encode())\n");
  std::ofstream(worker, std::ios::trunc) << text;
  cfg.harness = (dir / "kforge-harness.py").string();
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("pass")});
  EXPECT_EQ(r[0].verdict, Verdict::error);
  EXPECT_EQ(r[0].flags, std::vector<std::string>{verify::kInfrastructure});
  auto devices = pool->devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_FALSE(devices[0].in_rotation);
  EXPECT_NE(devices[0].reason.find("worker event: 'paused' is not an event of worker_events.txt "
                                   "(ready, started, finished)"),
            std::string::npos)
      << devices[0].reason;
}

// The events the file declares are exactly C++'s (kWorkerEventNames), in the same order.
TEST(VerifyWorkerEvent, TheFileDeclaresExactlyTheEventsCppKnows) {
  std::ifstream in(source_dir() / "libs/verify/harness/kforge_harness/worker_events.txt");
  ASSERT_TRUE(in);
  std::vector<std::string> declared;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("version", 0) == 0) continue;
    std::string path = line.substr(0, line.find(' '));
    if (path.find('.') == std::string::npos) declared.push_back(path);
  }
  std::vector<std::string> cpp;
  for (const auto& e : verify::kWorkerEventNames) cpp.emplace_back(e.name);
  EXPECT_EQ(declared, cpp);
}

// `kforge verify`'s summary lines read the pool's mutation score and the device lock's figures
// through the declared report (HarnessReport), not by key: a passing sample with launches has
// its score on its line, as the stored report holds it.
TEST(VerifyHarnessReport, TheSummaryLineTakesTheMutationScoreThroughTheDeclaredReport) {
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.kernel_mutants = 0;
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  verify::RecordRunOptions opts;
  opts.slowest = 0;
  std::ostringstream lines;
  verify::RecordRun run(*pool, opts, &lines);
  ASSERT_TRUE(run.submit(0, load_sample("triton_vector_add")).ok());
  run.finish();
  auto line = Json::parse(lines.str().substr(0, lines.str().find('\n')), nullptr, false);
  ASSERT_TRUE(line.is_object()) << lines.str();
  EXPECT_EQ(line["verdict"], "passed") << line.dump();
  ASSERT_TRUE(line.contains("mutation")) << line.dump();
  EXPECT_GE(line["mutation"]["killed"].get<int>(), 1) << line["mutation"].dump();
  EXPECT_EQ(line["mutation"]["applicable"], line["mutation"]["killed"]) << line["mutation"].dump();
}

std::string op_text(const verify::WorkerOp& op, std::size_t fds) {
  auto r = verify::worker_op_text(op, fds);
  return r.ok() ? *r : "error: " + r.error().message;
}

TEST(VerifyWorkerOp, ThePoolsMessagesAreBuiltFromTheDeclaration) {
  using verify::WorkerOpKind;
  EXPECT_EQ(op_text({WorkerOpKind::run, 3, "/w/3/request.json"}, 3),
            R"({"id":3,"op":"run","request":"/w/3/request.json"})");
  EXPECT_EQ(op_text({WorkerOpKind::prepare, 4, "/w/4/prep.json"}, 4),
            R"({"id":4,"op":"prepare","prep":"/w/4/prep.json"})");
  EXPECT_EQ(op_text({WorkerOpKind::exit, 0, ""}, 0), R"({"op":"exit"})");
  // The descriptors a message carries are the file's too.
  EXPECT_EQ(op_text({WorkerOpKind::run, 3, "/w/3/request.json"}, 2),
            "error: worker message: run came with 2 file descriptors, declared 3");
  EXPECT_EQ(op_text({WorkerOpKind::exit, 0, ""}, 1),
            "error: worker message: exit came with 1 file descriptors, declared 0");
}

// The ops the file declares are exactly C++'s (kWorkerOpNames), in the same order: an op renamed
// on one side only fails here (and, at run time, worker_op_text or the worker refuses it).
TEST(VerifyWorkerOp, TheFileDeclaresExactlyTheOpsCppKnows) {
  std::ifstream in(source_dir() / "libs/verify/harness/kforge_harness/worker_ops.txt");
  ASSERT_TRUE(in);
  std::vector<std::string> declared, with_fds, files;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("version", 0) == 0) continue;
    std::istringstream words(line);
    std::string path, second;
    words >> path >> second;
    if (path == "fds")
      with_fds.push_back(second);
    else if (path == "file")
      files.push_back(second);
    else if (path.find('.') == std::string::npos &&
             std::find(files.begin(), files.end(), path) == files.end())
      declared.push_back(path);
  }
  std::vector<std::string> cpp, cpp_files;
  for (const auto& e : verify::kWorkerOpNames) cpp.emplace_back(e.name);
  for (const auto& e : verify::kWorkerFileNames) cpp_files.emplace_back(e.name);
  EXPECT_EQ(declared, cpp);
  EXPECT_EQ(with_fds, cpp);
  EXPECT_EQ(files, cpp_files);
}

std::string file_text(verify::WorkerFile f, const nlohmann::json& content) {
  auto r = verify::worker_file_text(f, content);
  return r.ok() ? *r : "error: " + r.error().message;
}

// What the pool writes for a prestarted child itself (prep.json, and the request down its request
// pipe) is declared in worker_ops.txt too (`file prep`, `file request`) and written through one
// checked writer; a field renamed or left out is an error naming it.
TEST(VerifyWorkerOp, APrestartedChildsPrepAndRequestAreDeclared) {
  using verify::WorkerFile;
  nlohmann::json prep = {{"sandbox", {{"dir", "/w/4"}}},
                         {"python_path", {"/p"}},
                         {"gpu", false},
                         {"cuda_sync", "auto"},
                         {"gpu_vendor", "cpu"}};
  EXPECT_EQ(file_text(WorkerFile::prep, prep), prep.dump());
  nlohmann::json renamed = prep;
  renamed.erase("gpu");
  renamed["warm_gpu"] = false;
  EXPECT_EQ(file_text(WorkerFile::prep, renamed),
            "error: worker file: field \"prep.gpu\" is missing");
  renamed = prep;
  renamed["note"] = 1;
  EXPECT_EQ(file_text(WorkerFile::prep, renamed),
            "error: worker file: field \"prep.note\" is not a field of the message "
            "(worker_ops.txt)");
  EXPECT_EQ(file_text(WorkerFile::prep, {{"sandbox", nullptr},
                                         {"python_path", nlohmann::json::array()},
                                         {"gpu", true},
                                         {"cuda_sync", "blocking"},
                                         {"gpu_vendor", "nvidia"}}),
            "error: worker file: field \"prep.sandbox\" is null, declared object+");
  // The request is the runner's to read; declared: an object with the report version.
  nlohmann::json req = {{"report_version", verify::harness_report_version()}, {"key", "k"}};
  EXPECT_EQ(file_text(WorkerFile::request, req), req.dump());
  EXPECT_EQ(file_text(WorkerFile::request, {{"key", "k"}}),
            "error: worker file: field \"request.report_version\" is missing");
}

// The real worker of a harness whose worker_ops.txt calls the run op "start" (renamed on the
// Python side only): it refuses the pool's "run", naming it, and ends; the pool takes it for lost,
// runs the sample once more on a new worker, which refuses it again, and the sample ends in an
// infrastructure error whose detail says why.
TEST(VerifyWorkerOp, AnOpTheWorkerDoesNotDeclareIsRefusedNamingIt) {
  namespace fs = std::filesystem;
  TempDir tmp;
  auto cfg = test_config(tmp);
  cfg.cpu_workers = 1;
  cfg.prestart = false;  // every sample goes to the worker as a "run" message
  fs::path dir = tmp.path() / "renamed";
  fs::copy(source_dir() / "libs" / "verify" / "harness", dir, fs::copy_options::recursive);
  fs::path ops = dir / "kforge_harness" / "worker_ops.txt";
  std::ifstream in(ops);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  for (const std::string from : {"\nfds run ", "\nrun "}) {
    auto at = text.find(from);
    ASSERT_NE(at, std::string::npos) << "worker_ops.txt changed: update this test";
    text.replace(at, from.size(), from.substr(0, from.size() - 4) + "start ");
  }
  for (std::string from = "\nrun."; text.find(from) != std::string::npos;)
    text.replace(text.find(from), from.size(), "\nstart.");
  std::ofstream(ops, std::ios::trunc) << text;
  cfg.harness = (dir / "kforge-harness.py").string();
  auto pool = make_pool(cfg);
  ASSERT_TRUE(pool);
  auto r = run_all(*pool, {load_sample("pass")});
  EXPECT_EQ(r[0].verdict, Verdict::error);
  EXPECT_EQ(r[0].flags, std::vector<std::string>{verify::kInfrastructure});
  EXPECT_NE(r[0].detail.find("the verifier worker died while running the sample"),
            std::string::npos)
      << r[0].detail;
  EXPECT_NE(r[0].detail.find("worker: refused the pool's message: op: 'run' is not an op of "
                             "worker_ops.txt (start, prepare, exit)"),
            std::string::npos)
      << r[0].detail;
}

}  // namespace
}  // namespace kforge::test
