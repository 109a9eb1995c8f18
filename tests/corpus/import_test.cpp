#include <gtest/gtest.h>

// GCC 12 at -O2 reports the std::optional<std::string> inside ImportOptions as "may be used
// uninitialized" where the options are built field by field below; it is initialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <fstream>

#include "kforge/core/sha256.hpp"
#include "kforge/corpus/importer.hpp"
#include "kforge/store/samples.hpp"
#include "testutil.hpp"

namespace kforge::corpus {
namespace {

using nlohmann::ordered_json;
using test::TempDir;
using test::write_text;

class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::OpenOptions o;
    o.path = (dir_ / "k.db").string();
    auto db = store::Db::open(o);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(db).value();
  }

  std::int64_t count() { return *store::Samples(*db_).count(); }

  Result<ImportSummary> import(const std::string& name, const std::string& text,
                               const ImportOptions& opts = {}) {
    write_text(dir_ / name, text);
    return import_file(*db_, dir_ / name, opts, clock_);
  }

  // Expects the import to fail, leave the table as it was, and mention every fragment.
  void expect_error(const std::string& name, const std::string& text,
                    std::vector<std::string> fragments, const ImportOptions& opts = {}) {
    std::int64_t before = count();
    auto r = import(name, text, opts);
    ASSERT_FALSE(r.ok()) << name << " imported";
    for (const auto& f : fragments)
      EXPECT_NE(r.error().message.find(f), std::string::npos)
          << "'" << f << "' not in: " << r.error().message;
    EXPECT_EQ(count(), before) << "a failed import wrote rows";
  }

  TempDir dir_;
  ManualClock clock_;
  std::unique_ptr<store::Db> db_;
};

ImportOptions tritonbench_opts() {
  ImportOptions o;
  auto m = parse_field_map("code=output,description_1=simp_instru,description_2=comp_instru");
  EXPECT_TRUE(m.ok());
  o.map = *m;
  o.map.key = "file";
  return o;
}

TEST_F(ImportTest, TritonBenchGKeepsEveryFieldAndIsIdempotent) {
  auto path = test::small_corpus();
  const int n = test::kSmallCorpusRecords;
  auto r = import_file(*db_, path, tritonbench_opts(), clock_);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->records, n);
  EXPECT_EQ(r->added, n);
  EXPECT_EQ(count(), n);

  // Every field of every record is kept, in order, and the mapped fields are filled.
  std::ifstream in(path);
  ordered_json all = ordered_json::parse(in);
  auto s = db_->prepare(
      "SELECT key, code, description_1, description_2, record_json, source_index "
      "FROM samples ORDER BY source_index");
  ASSERT_TRUE(s.ok());
  std::size_t i = 0;
  while (*s->step()) {
    const auto& rec = all.at(i);
    EXPECT_EQ(s->text(0), rec["file"].get<std::string>());
    EXPECT_EQ(s->text(1), rec["output"].get<std::string>());
    EXPECT_EQ(s->text(2), rec["simp_instru"].get<std::string>());
    EXPECT_EQ(s->text(3), rec["comp_instru"].get<std::string>());
    EXPECT_EQ(ordered_json::parse(s->text(4)), rec);
    EXPECT_EQ(ordered_json::parse(s->text(4)).dump(), rec.dump()) << "field order changed";
    EXPECT_EQ(s->int64(5), static_cast<std::int64_t>(i));
    ++i;
  }
  EXPECT_EQ(i, static_cast<std::size_t>(n));

  auto again = import_file(*db_, path, tritonbench_opts(), clock_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->added, 0);
  EXPECT_EQ(again->unchanged, n);
  EXPECT_EQ(count(), n);
}

TEST_F(ImportTest, ChangedRecordIsReportedAndLeftAloneUnlessUpdate) {
  ImportOptions o;
  o.map.key = "id";
  ASSERT_TRUE(
      import("a.json", R"([{"id": "a", "code": "x = 1"}, {"id": "b", "code": "y = 2"}])", o).ok());
  auto r = import(
      "a2.json",
      R"([{"id": "a", "code": "x = 100"}, {"id": "b", "code": "y = 2"}, {"id": "c", "code": "z"}])",
      o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->added, 1);
  EXPECT_EQ(r->unchanged, 1);
  EXPECT_EQ(r->changed, 1);
  EXPECT_EQ(r->updated, 0);
  EXPECT_EQ(r->changed_keys, std::vector<std::string>{"a"});
  auto s = db_->prepare("SELECT code FROM samples WHERE key='a'");
  ASSERT_TRUE(*s->step());
  EXPECT_EQ(s->text(0), "x = 1");

  o.update = true;
  r = import("a3.json", R"([{"id": "a", "code": "x = 100"}])", o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->updated, 1);
  auto s2 = db_->prepare("SELECT code, code_sha256 FROM samples WHERE key='a'");
  ASSERT_TRUE(*s2->step());
  EXPECT_EQ(s2->text(0), "x = 100");
  EXPECT_EQ(s2->text(1), sha256_hex("x = 100"));
}

TEST_F(ImportTest, KeyDefaultsToAHashOfTheCode) {
  auto r =
      import("a.jsonl", "{\"code\": \"a\"}\n{\"code\": \"b\", \"extra\": [1, {\"n\": null}]}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->added, 2);
  auto s = db_->prepare("SELECT key, record_json FROM samples ORDER BY source_index");
  ASSERT_TRUE(*s->step());
  EXPECT_EQ(s->text(0), derived_key("a"));
  EXPECT_EQ(s->text(0).rfind("sha256:", 0), 0u);
  ASSERT_TRUE(*s->step());
  EXPECT_EQ(s->text(1), R"({"code":"b","extra":[1,{"n":null}]})");
}

TEST_F(ImportTest, OversizedRecordsAreImportedAndNamed) {
  ImportOptions o;
  o.warn_code_bytes = 100;
  auto r = import("big.jsonl",
                  "{\"code\": \"small\"}\n{\"code\": \"" + std::string(500, 'x') + "\"}\n", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->added, 2);
  EXPECT_EQ(r->oversized, 1);
  ASSERT_EQ(r->oversized_records.size(), 1u);
  EXPECT_EQ(r->oversized_records[0], derived_key(std::string(500, 'x')) + " (record 1, 500 bytes)");
}

TEST_F(ImportTest, JsonLinesSkipsBlankLinesAndCountsLines) {
  auto r = import("a.jsonl", "\n{\"code\": \"a\"}\n\n   \n{\"code\": 7}\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("record 1 (line 5)"), std::string::npos) << r.error().message;
}

TEST_F(ImportTest, TruncatedJsonImportsNothing) {
  ASSERT_TRUE(import("ok.json", R"([{"code": "keep"}])").ok());
  expect_error("t.json", "[{\"code\": \"a\"},\n {\"code\": \"b\"},\n {\"code\": \"c",
               {"t.json", "record 2", "line 3"});
  EXPECT_EQ(count(), 1);
}

TEST_F(ImportTest, TruncatedAfterLastRecordImportsNothing) {
  expect_error("t.json", "[{\"code\": \"a\"}, {\"code\": \"b\"}",
               {"t.json", "record 2", "unexpected end of input"});
}

TEST_F(ImportTest, InvalidUtf8ImportsNothing) {
  expect_error("u.json", "[{\"code\": \"a\"},\n{\"code\": \"b\xff\xfe\"}]",
               {"u.json", "record 1", "UTF-8", "line 2"});
  expect_error("u.jsonl", "{\"code\": \"a\"}\n{\"code\": \"\xc3\x28\"}\n",
               {"u.jsonl", "record 1 (line 2)", "UTF-8"});
}

TEST_F(ImportTest, MissingCodeNamesRecordLineAndField) {
  expect_error("m.json", "[\n{\"code\": \"a\"},\n{\"kode\": \"b\"}\n]",
               {"m.json", "record 1 (line 3)", "field 'code'", "missing"});
  ImportOptions o;
  o.map.code = "output";
  expect_error("m2.json", R"([{"code": "a"}])", {"record 0", "field 'output' (code)", "missing"},
               o);
}

TEST_F(ImportTest, WrongTypesAreNamed) {
  expect_error("w1.json", R"([{"code": 12}])",
               {"record 0", "field 'code'", "expected a string, got a number"});
  expect_error("w2.json", R"([{"code": "a", "description_1": ["x"]}])",
               {"field 'description_1'", "expected a string, got a list"});
  expect_error("w3.json", R"([{"code": "a"}, "just a string"])",
               {"record 1", "expected an object, got a string"});
  ImportOptions o;
  o.map.key = "id";
  expect_error("w4.json", R"([{"code": "a", "id": 1.5}])",
               {"field 'id' (key)", "a string or an integer"}, o);
  expect_error("w5.json", R"([{"code": "a"}])", {"field 'id' (key)", "missing"}, o);
  expect_error("w6.json", R"([{"code": ""}])", {"field 'code'", "empty"});
}

TEST_F(ImportTest, SameKeyTwiceInOneFileImportsNothing) {
  ImportOptions o;
  o.map.key = "id";
  expect_error("d.json",
               R"([{"id": "x", "code": "a"}, {"id": "y", "code": "b"}, {"id": "x", "code": "c"}])",
               {"record 2", "key 'x' already used by record 0"}, o);
  expect_error("d2.json", R"([{"code": "same"}, {"code": "same"}])", {"record 1", "the same code"});
}

TEST_F(ImportTest, EmptyAndNonListInputs) {
  expect_error("e.json", "", {"e.json", "empty"});
  expect_error("e2.json", "  \n\n", {"empty"});
  expect_error("e3.json", "[]", {"no records"});
  expect_error("o.json", R"({"code": "a"})", {"not a JSON list"},
               ImportOptions{Format::json, {}, false, false});
  expect_error("s.json", "42", {"neither a JSON list"});
  expect_error("n.json", "[[\"code\"]]", {"record 0", "expected an object, got a list"});
}

TEST_F(ImportTest, TrailingGarbageAfterTheListIsAnError) {
  expect_error("g.json", R"([{"code": "a"}] [{"code": "b"}])", {"g.json"});
}

TEST_F(ImportTest, DryRunWritesNothing) {
  ImportOptions o;
  o.dry_run = true;
  auto r = import("a.json", R"([{"code": "a"}, {"code": "b"}])", o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->added, 2);
  EXPECT_EQ(count(), 0);
}

TEST_F(ImportTest, FieldMapParsing) {
  auto m = parse_field_map("code=output,description_1=simp_instru,key=file");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->code, "output");
  EXPECT_EQ(m->description_1, "simp_instru");
  EXPECT_EQ(m->description_2, "description_2");
  EXPECT_EQ(*m->key, "file");
  EXPECT_FALSE(parse_field_map("code").ok());
  EXPECT_FALSE(parse_field_map("colour=x").ok());
  EXPECT_EQ(parse_field_map("colour=x").error().kind, "usage");
  EXPECT_FALSE(parse_field_map("code=").ok());
  // Issue 56, 9: one rule for every name a user gives, the targets too: the nearest, then all.
  auto typo = parse_field_map("cod=output,descripton_1=simp_instru");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().message,
            "--map: unknown target 'cod' (did you mean 'code'?); the targets are code, "
            "description_1, description_2 or key");
  typo = parse_field_map("code=output,descripton_1=simp_instru");
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.error().message.find("(did you mean 'description_1'?)"), std::string::npos)
      << typo.error().message;
  EXPECT_EQ(parse_field_map("colour=x").error().message,
            "--map: unknown target 'colour'; the targets are code, description_1, description_2 "
            "or key");
}

TEST_F(ImportTest, GeneratedCorpusOf4000Records) {
  std::string path = (dir_ / "big.json").string();
  {
    std::ofstream out(path);
    out << "[\n";
    for (int i = 0; i < 4000; ++i) {
      ordered_json rec = {
          {"code", "@triton.jit\ndef kernel_" + std::to_string(i) +
                       "(x_ptr, n, BLOCK: tl.constexpr):\n    pid = tl.program_id(0)\n"},
          {"description_1", "interface " + std::to_string(i)},
          {"description_2", "task " + std::to_string(i)},
          {"repo", "org/repo" + std::to_string(i % 37)},
          {"stars", i * 3},
          {"tags", {"a", i % 2 == 0 ? "even" : "odd"}}};
      out << rec.dump() << (i + 1 < 4000 ? ",\n" : "\n");
    }
    out << "]\n";
  }
  std::int64_t progress_calls = 0, last_records = 0;
  auto r = import_file(*db_, path, {}, clock_, [&](const ReadProgress& p) {
    ++progress_calls;
    EXPECT_LE(p.bytes_read, p.bytes_total);
    last_records = p.records;
  });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->added, 4000);
  EXPECT_EQ(count(), 4000);
  EXPECT_GT(progress_calls, 10);
  EXPECT_EQ(last_records, 4000);
  auto again = import_file(*db_, path, {}, clock_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->unchanged, 4000);
  EXPECT_EQ(count(), 4000);
}

}  // namespace
}  // namespace kforge::corpus
