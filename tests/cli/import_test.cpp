// kforge import: records read as a stream, fields mapped, re-imports, --update, standard input,
// and errors that name the file, record and line.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_fixture.hpp"
#include "kforge/store/db.hpp"

namespace kforge::test {
namespace {

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
  // One rule for every field a user names: the nearest field, and the record's fields.
  r = kforge({"import", corpus, "--map", "code=outptu"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("field 'outptu' (code): missing (every record needs the code: --map "
                       "code=FIELD names it) (did you mean 'output'?); the record's fields are: "
                       "file, repo, simp_instru"),
            std::string::npos)
      << r.err;
  r = kforge({"import", corpus, "--map", "code=output", "--key", "fiel"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("record 0 (line "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("field 'fiel' (key): missing (--key names it as the "
                       "record's key) (did you mean 'file'?); the record's fields are: file, repo"),
            std::string::npos)
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

}  // namespace
}  // namespace kforge::test
