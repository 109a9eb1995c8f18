// The kforge and kforged binaries as a user runs them: exit codes, messages, the import flow.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kforge/store/db.hpp"
#include "testutil.hpp"

namespace kforge {
namespace {

using test::ProcResult;
using test::TempDir;

class Cli : public ::testing::Test {
 protected:
  ProcResult kforge(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), test::binary("apps/kforge/kforge").string());
    env.push_back("KFORGE_DB=" + (dir_ / "k.db").string());
    env.push_back("KFORGE_CONFIG=" + (dir_ / "none.yaml").string());
    if (!std::filesystem::exists(dir_ / "none.yaml")) test::write_text(dir_ / "none.yaml", "{}\n");
    return test::run_process(args, env);
  }
  std::int64_t samples() {
    auto r = kforge({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["samples"].get<std::int64_t>();
  }
  TempDir dir_;
};

const char* kMap = "code=output,description_1=simp_instru,description_2=comp_instru";

TEST_F(Cli, ImportTritonBenchThenStatusThenReimportThenTruncated) {
  auto corpus = test::small_corpus();
  const int n = test::kSmallCorpusRecords;
  auto r = kforge({"import", corpus.string(), "--map", kMap, "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::to_string(n) + " added"), std::string::npos) << r.out;
  EXPECT_EQ(samples(), n);

  r = kforge({"import", corpus.string(), "--map", kMap, "--key", "file", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["added"], 0);
  EXPECT_EQ(j["unchanged"], n);
  EXPECT_EQ(samples(), n);

  std::string text = test::read_text(corpus);
  test::write_text(dir_ / "truncated.json", text.substr(0, text.size() / 2));
  r = kforge({"import", (dir_ / "truncated.json").string(), "--map", kMap, "--key", "file"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("truncated.json: record "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("line "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was imported"), std::string::npos) << r.err;
  EXPECT_LT(r.err.size(), 600u) << "the error should be one readable line";
  EXPECT_EQ(samples(), n);
}

TEST_F(Cli, StatusNeverCreatesADatabase) {
  auto r = kforge({"status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("database " + (dir_ / "k.db").string() + " does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("kforge import FILE creates it"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  for (auto args :
       std::vector<std::vector<std::string>>{{"run", "create", "a", "--pipeline", "v1"},
                                             {"export", "a", "--out", "x.json"},
                                             {"compare", "a", "b"},
                                             {"retry", "a", "--verdict", "error"},
                                             {"debug", "a", "--failed", "--out", "d"}}) {
    auto c = kforge(args);
    EXPECT_EQ(c.exit_code, 1) << args[0] << ": " << c.err;
    EXPECT_NE(c.err.find("does not exist"), std::string::npos) << args[0] << ": " << c.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  // A failed import leaves no database behind either, nor does a dry run.
  test::write_text(dir_ / "bad.json", "[{\"code\": 3}]");
  r = kforge({"import", (dir_ / "bad.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  r = kforge({"import", test::small_corpus().string(), "--map", kMap, "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  // After a real import, status reads it.
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  r = kforge({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("samples    40"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("daemon     none has run on this database"), std::string::npos) << r.out;
}

// status shows what the database takes on disk: the file and its write-ahead log.
TEST_F(Cli, StatusShowsTheDatabaseSizeWithItsLog) {
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  auto r = kforge({"status", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto b = nlohmann::json::parse(r.out)["database_bytes"];
  auto file = static_cast<std::int64_t>(std::filesystem::file_size(dir_ / "k.db"));
  EXPECT_EQ(b["file"].get<std::int64_t>(), file);
  EXPECT_GE(b["wal"].get<std::int64_t>(), 0);
  EXPECT_EQ(b["total"].get<std::int64_t>(), file + b["wal"].get<std::int64_t>());
  r = kforge({"status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto line = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(line.find("B: file "), std::string::npos) << line;
  EXPECT_NE(line.find(" + WAL "), std::string::npos) << line;
}

TEST_F(Cli, ImportRefusesAMapFieldNoRecordHas) {
  auto corpus = test::small_corpus().string();
  auto r = kforge({"import", corpus, "--map", "code=output,description_1=simp_instrux"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--map description_1=simp_instrux: no record has a field 'simp_instrux' "
                       "(did you mean 'simp_instru'?)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("the records' fields are: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("comp_instru"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("nothing was imported"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "k.db"));
  // A target given twice is bad usage.
  r = kforge({"import", corpus, "--map", "code=output,code=file"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--map: target 'code' is given twice (code=output and code=file)"),
            std::string::npos)
      << r.err;
  // A code field no record has names the fields the record does have.
  r = kforge({"import", corpus, "--map", "code=outputx"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("field 'outputx' (code): missing"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the record's fields are: file, repo, simp_instru"), std::string::npos)
      << r.err;
}

TEST_F(Cli, ImportReportsFieldsPresentInSomeRecordsOnly) {
  auto recs = nlohmann::json::parse(test::read_text(test::small_corpus()));
  for (int i = 0; i < 5; ++i) recs[i].erase("simp_instru");
  test::write_text(dir_ / "partial.json", recs.dump());
  auto r = kforge({"import", (dir_ / "partial.json").string(), "--map", kMap, "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: description_1 ('simp_instru') is in 35 of 40 records; the other 5 "
                       "have it empty"),
            std::string::npos)
      << r.err;
  r = kforge(
      {"import", (dir_ / "partial.json").string(), "--map", kMap, "--key", "file", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["fields"]["description_1"]["present"], 35);
  EXPECT_EQ(j["fields"]["description_2"]["present"], 40);
  // Default field names that no record has are reported, not refused.
  r = kforge({"import", test::small_corpus().string(), "--map", "code=output", "--key", "file",
              "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("note: description_1: no record has a field 'description_1', so it stays "
                       "empty (--map description_1=FIELD names another)"),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, UpdateRepairsMappedFieldsThatChanged) {
  auto corpus = test::small_corpus().string();
  // The wrong field mapped first: every description_1 holds the long instruction.
  auto r =
      kforge({"import", corpus, "--map",
              "code=output,description_1=comp_instru,description_2=comp_instru", "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kforge({"import", corpus, "--map", kMap, "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 unchanged, 40 changed"), std::string::npos) << r.out;
  r = kforge({"import", corpus, "--map", kMap, "--key", "file", "--update"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("replaced 40 changed records"), std::string::npos) << r.out;
  r = kforge({"import", corpus, "--map", kMap, "--key", "file"});
  EXPECT_NE(r.out.find("40 unchanged, 0 changed"), std::string::npos) << r.out;
  store::OpenOptions o;
  o.path = (dir_ / "k.db").string();
  auto db = store::Db::open(o);
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto recs = nlohmann::json::parse(test::read_text(test::small_corpus()));
  auto st = (*db)->prepare("SELECT description_1 FROM samples WHERE key = ?1");
  ASSERT_TRUE(st.ok());
  st->bind(1, recs[3]["file"].get<std::string>());
  auto got = st->one([](store::Stmt& s) { return s.text(0); });
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ(**got, recs[3]["simp_instru"].get<std::string>());
}

TEST_F(Cli, ImportReadsStandardInput) {
  test::write_text(dir_ / "none.yaml", "{}\n");
  auto sh = test::run_process(
      {"/bin/sh", "-c", "exec \"$0\" import - --map " + std::string(kMap) + " --key file < \"$1\"",
       test::binary("apps/kforge/kforge").string(), test::small_corpus().string()},
      {"KFORGE_DB=" + (dir_ / "k.db").string(), "KFORGE_CONFIG=" + (dir_ / "none.yaml").string()});
  ASSERT_EQ(sh.exit_code, 0) << sh.err;
  EXPECT_NE(sh.out.find("-: 40 records: 40 added"), std::string::npos) << sh.out;
  EXPECT_EQ(samples(), 40);
  auto bad = test::run_process(
      {"/bin/sh", "-c", "echo '[{\"output\": 1}]' | exec \"$0\" import - --map code=output",
       test::binary("apps/kforge/kforge").string()},
      {"KFORGE_DB=" + (dir_ / "k.db").string(), "KFORGE_CONFIG=" + (dir_ / "none.yaml").string()});
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("stdin: record 0"), std::string::npos) << bad.err;
}

TEST_F(Cli, GlobalOptionsGoBeforeOrAfterTheSubcommand) {
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  test::write_text(dir_ / "other.yaml", "store:\n  path: " + (dir_ / "k.db").string() + "\n");
  for (auto args : std::vector<std::vector<std::string>>{
           {"--config", (dir_ / "other.yaml").string(), "status"},
           {"status", "--config", (dir_ / "other.yaml").string()},
           {"status", "-c", (dir_ / "other.yaml").string(), "--json"},
           {"status", "-q"},
           {"-q", "status"},
           {"status", "-v"},
           {"status", "--config=" + (dir_ / "other.yaml").string()}}) {
    auto r = kforge(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << " " << args[1] << ": " << r.err;
  }
  auto r = kforge({"run", "create", "a", "--pipeline", "v1", "--limit", "1", "-q", "--config",
                   (dir_ / "other.yaml").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli, UnknownCommandsAreNamedWithTheNearestOne) {
  auto r = kforge({"stauts"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'stauts' for kforge (did you mean 'status'?)"),
            std::string::npos)
      << r.err;
  r = kforge({"--config", (dir_ / "none.yaml").string(), "exprot", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean 'export'?"), std::string::npos) << r.err;
  r = kforge({"corpus", "dpus"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'dpus' for kforge corpus (did you mean 'dups'?)"),
            std::string::npos)
      << r.err;
  r = kforge({"run", "craete", "x"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'craete' for kforge run (did you mean 'create'?)"),
            std::string::npos)
      << r.err;
  r = kforge({"frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate' for kforge; commands: import, status"),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, UnknownKforgeVariablesAreNamed) {
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  auto r = kforge({"status"}, {"KFORGE_LLM_MODELL=gpt-x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("kforge: warning: KFORGE_LLM_MODELL is set but is not a kforge variable, "
                       "so it is ignored (did you mean KFORGE_LLM_MODEL?)"),
            std::string::npos)
      << r.err;
  r = kforge({"status"}, {"KFORGE_LLM_MODEL=gpt-x"});
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
  // The README's example: two letters swapped is one mistake, nearer than a letter left out.
  r = kforge({"status"}, {"KFORGE_LLM_MODLE=gpt-x"});
  EXPECT_NE(r.err.find("kforge: warning: KFORGE_LLM_MODLE is set but is not a kforge variable, "
                       "so it is ignored (did you mean KFORGE_LLM_MODEL?)"),
            std::string::npos)
      << r.err;
  r = test::run_process({test::binary("apps/kforged/kforged").string(), "--config",
                         (dir_ / "none.yaml").string(), "--check-config"},
                        {"KFORGE_LLM_MODLE=gpt-x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("KFORGE_LLM_MODLE is set but is not a kforge variable, so it is "
                       "ignored (did you mean KFORGE_LLM_MODEL?)"),
            std::string::npos)
      << r.err;
  r = test::run_process({test::binary("apps/kforged/kforged").string(), "--config",
                         (dir_ / "none.yaml").string(), "--check-config"},
                        {"KFORGE_VERIFIER_PYTON=/usr/bin/python3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("KFORGE_VERIFIER_PYTON is set but is not a kforge variable, so it is "
                       "ignored (did you mean KFORGE_VERIFIER_PYTHON?)"),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, KforgedHelpNamesItsSignalsAndConfiguration) {
  auto r = test::run_process({test::binary("apps/kforged/kforged").string(), "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* s : {"SIGTERM", "SIGINT", "SIGHUP", "$KFORGE_CONFIG", "./kforge.yaml",
                        "/etc/kforge/kforge.yaml", "KFORGE_<SECTION>_<KEY>"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST_F(Cli, ExitCodes) {
  EXPECT_EQ(kforge({"--help"}).exit_code, 0);
  EXPECT_EQ(kforge({"import", "--help"}).exit_code, 0);
  EXPECT_EQ(kforge({"status", "--help"}).exit_code, 0);
  EXPECT_EQ(kforge({}).exit_code, 2);
  EXPECT_EQ(kforge({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(kforge({"import"}).exit_code, 2);
  EXPECT_EQ(kforge({"import", "x.json", "--format", "xml"}).exit_code, 2);
  EXPECT_EQ(kforge({"import", "x.json", "--map", "colour=x"}).exit_code, 2);
  // Bad option values read like every other error: one line, what was expected.
  auto limit = kforge({"run", "create", "a", "--pipeline", "v1", "--limit", "-3"});
  EXPECT_EQ(limit.exit_code, 2);
  EXPECT_NE(limit.err.find("kforge: error: --limit: expected 1 or more samples, got -3"),
            std::string::npos)
      << limit.err;
  EXPECT_LT(limit.err.size(), 200u) << limit.err;
  limit = kforge({"run", "create", "a", "--pipeline", "v1", "--limit", "0"});
  EXPECT_EQ(limit.exit_code, 2);
  EXPECT_NE(limit.err.find("expected 1 or more samples, got 0 (leave the option out for no "
                           "limit)"),
            std::string::npos)
      << limit.err;
  limit = kforge({"run", "create", "a", "--pipeline", "v1", "--limit", "lots"});
  EXPECT_NE(limit.err.find("expected a whole number of samples, got 'lots'"), std::string::npos)
      << limit.err;
  auto r = kforge({"import", (dir_ / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.json: No such file"), std::string::npos) << r.err;
}

// A subcommand's --help lists the global options it takes too.
TEST_F(Cli, SubcommandHelpListsTheGlobalOptions) {
  for (auto args : std::vector<std::vector<std::string>>{{"status", "--help"},
                                                         {"run", "create", "--help"},
                                                         {"corpus", "dups", "--help"},
                                                         {"export", "--help"}}) {
    auto r = kforge(args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    for (const char* s : {"Global options (before or after the command):", "-c,--config",
                          "$KFORGE_CONFIG", "-q,--quiet", "-v,--verbose"})
      EXPECT_NE(r.out.find(s), std::string::npos) << args[0] << ": " << s << "\n" << r.out;
  }
  // The footers a command has are kept.
  auto r = kforge({"run", "create", "--help"});
  EXPECT_NE(r.out.find("form an A/B pair"), std::string::npos) << r.out;
}

TEST_F(Cli, BadConfigurationNamesFileAndLine) {
  test::write_text(dir_ / "bad.yaml", "log:\n  level: info\nstore:\n  pathh: x.db\n");
  auto r = kforge({"--config", (dir_ / "bad.yaml").string(), "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.yaml:4: store.pathh: unknown key"), std::string::npos) << r.err;

  test::write_text(dir_ / "bad2.yaml", "store:\n  busy_timeout_ms: soon\n");
  r = test::run_process({test::binary("apps/kforged/kforged").string(), "--config",
                         (dir_ / "bad2.yaml").string(), "--check-config"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad2.yaml:2: store.busy_timeout_ms: expected an integer, got 'soon'"),
            std::string::npos)
      << r.err;
}

TEST_F(Cli, ShippedConfigurationIsValid) {
  auto r =
      test::run_process({test::binary("apps/kforged/kforged").string(), "--config",
                         (test::source_dir() / "config/kforge.yaml").string(), "--check-config"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(Cli, NewerDatabaseIsRefused) {
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  // scripts/bootstrap installs the sqlite3 shell; only its absence is a reason to skip.
  if (!std::filesystem::exists("/usr/bin/sqlite3")) GTEST_SKIP() << "sqlite3 shell not installed";
  auto sqlite = test::run_process({"/usr/bin/sqlite3", (dir_ / "k.db").string(),
                                   "INSERT INTO kforge_schema VALUES (9999, '9999_x.sql', 0)"});
  ASSERT_EQ(sqlite.exit_code, 0) << sqlite.err;
  auto r = kforge({"status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("newer kforge"), std::string::npos) << r.err;
}

// scripts/run prints commands that work as printed: on a restart it names the runs there and
// a tag still free instead of "run create first" again.
TEST_F(Cli, RunScriptStepsWorkOnARestart) {
  auto steps = [&] {
    return test::run_process({(test::source_dir() / "scripts" / "lib" / "run-steps").string(),
                              test::binary("apps/kforge/kforge").string(),
                              (dir_ / "none.yaml").string(), "corpus.json", "big.json"},
                             {"KFORGE_DB=" + (dir_ / "k.db").string()});
  };
  test::write_text(dir_ / "none.yaml", "{}\n");
  auto r = steps();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("import corpus.json --map"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run create first --pipeline v2"), std::string::npos) << r.out;
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap}).exit_code, 0);
  ASSERT_EQ(kforge({"run", "create", "first", "--pipeline", "v2", "--limit", "2"}).exit_code, 0);
  r = steps();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("run create first"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("import corpus.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runs from an earlier start: first"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run create second --pipeline v1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compare first second"), std::string::npos) << r.out;
  // Each printed command is accepted as printed.
  auto second = kforge({"run", "create", "second", "--pipeline", "v1", "--limit", "2"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(kforge({"compare", "first", "second"}).exit_code, 0);
}

}  // namespace
}  // namespace kforge
