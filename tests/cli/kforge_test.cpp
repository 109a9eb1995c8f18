// The kforge program as a whole: global options, unknown commands and variables named with the
// nearest known one, exit codes (0 success, 1 failure, 2 bad usage), help, the configuration
// checked with file and line, a newer database refused, and scripts/run's printed steps.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"

namespace kforge::test {
namespace {

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

// -q prints the result and errors only: run create's line, not its prompts' hashes or the hint.
TEST_F(Cli, QuietRunCreatePrintsItsResultLineOnly) {
  ASSERT_EQ(kforge({"import", test::small_corpus().string(), "--map", kMap, "-q"}).exit_code, 0);
  auto loud = kforge({"run", "create", "loud", "--pipeline", "v2", "--limit", "2"});
  ASSERT_EQ(loud.exit_code, 0) << loud.err;
  EXPECT_NE(loud.out.find("  prompt v2/analyze.md sha256 "), std::string::npos) << loud.out;
  EXPECT_NE(loud.out.find("kforged picks it up"), std::string::npos) << loud.out;
  auto quiet = kforge({"-q", "run", "create", "quiet", "--pipeline", "v2", "--limit", "2"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out.rfind("run 'quiet' created: 2 jobs, pipeline v2", 0), 0u) << quiet.out;
  EXPECT_EQ(quiet.out.find('\n'), quiet.out.size() - 1) << quiet.out;
  EXPECT_EQ(quiet.err, "");
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
  // A usage error points to the command's own help, not the root's.
  EXPECT_NE(limit.err.find("(kforge run create --help)"), std::string::npos) << limit.err;
  auto unknown_option = kforge({"status", "--colour"});
  EXPECT_EQ(unknown_option.exit_code, 2);
  EXPECT_NE(unknown_option.err.find("(kforge status --help)"), std::string::npos)
      << unknown_option.err;
  auto global_first = kforge({"-q", "corpus", "dups", "--limit", "x"});
  EXPECT_EQ(global_first.exit_code, 2);
  EXPECT_NE(global_first.err.find("(kforge corpus dups --help)"), std::string::npos)
      << global_first.err;
  // So do the usage errors kforge finds after the parser: a value the parser took, a --map target.
  auto pipeline = kforge({"run", "create", "a", "--pipeline", "v9"});
  EXPECT_EQ(pipeline.exit_code, 2);
  EXPECT_NE(pipeline.err.find("unknown pipeline 'v9'"), std::string::npos) << pipeline.err;
  EXPECT_NE(pipeline.err.find("(kforge run create --help)\n"), std::string::npos) << pipeline.err;
  auto target = kforge({"-q", "import", test::small_corpus().string(), "--map", "cod=output"});
  EXPECT_EQ(target.exit_code, 2);
  EXPECT_NE(target.err.find("--map: unknown target 'cod' (did you mean 'code'?)"),
            std::string::npos)
      << target.err;
  EXPECT_NE(target.err.find("(kforge import --help)\n"), std::string::npos) << target.err;
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
  // --dedup first keeps the group's representative (README), not the first imported.
  EXPECT_NE(r.out.find("the group's representative"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("first imported"), std::string::npos) << r.out;
}

TEST_F(Cli, BadConfigurationNamesFileAndLine) {
  test::write_text(dir_ / "bad.yaml", "log:\n  level: info\nstore:\n  pathh: x.db\n");
  auto r = kforge({"--config", (dir_ / "bad.yaml").string(), "status"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad.yaml:4: store.pathh: unknown key (did you mean store.path?)"),
            std::string::npos)
      << r.err;
  // Every error is listed, with -v or without, by kforge and by kforged --check-config.
  test::write_text(dir_ / "bad3.yaml",
                   "stor:\n  path: x.db\nlog:\n  levle: info\nllm:\n  max_in_flight: many\n");
  for (const auto& argv :
       {std::vector<std::string>{test::binary("apps/kforge/kforge").string(), "--config",
                                 (dir_ / "bad3.yaml").string(), "status"},
        std::vector<std::string>{test::binary("apps/kforged/kforged").string(), "--config",
                                 (dir_ / "bad3.yaml").string(), "--check-config"}}) {
    r = test::run_process(argv);
    EXPECT_EQ(r.exit_code, 1) << argv[0];
    for (const char* want :
         {"3 errors in the configuration:", "bad3.yaml:1: stor: unknown key (did you mean store?)",
          "bad3.yaml:4: log.levle: unknown key (did you mean log.level?)",
          "bad3.yaml:6: llm.max_in_flight: expected an integer, got 'many'"})
      EXPECT_NE(r.err.find(want), std::string::npos) << argv[0] << ": " << want << "\n" << r.err;
    EXPECT_EQ(r.err.find("more)"), std::string::npos) << r.err;
  }

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
}  // namespace kforge::test
