// Verdicts and device states stored in a real SQLite file.

#include <gtest/gtest.h>

#include "kforge/core/fs.hpp"
#include "kforge/verify/store.hpp"
#include "testutil.hpp"

namespace kforge::verify {
namespace {

TEST(VerifyStore, StoresAVerdictWithItsReport) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(test::source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  VerifyResult r;
  r.verdict = Verdict::passed;
  r.detail = "1 test passed";
  r.flags = {kMutantSurvived};
  r.report = {{"tests", {{{"name", "test_add"}, {"status", "passed"}}}}};
  r.script = "import torch\n";
  r.stderr_tail = "warning\n";
  r.duration_ms = 1234;
  r.device = "cuda:0";
  auto id = store_verification(**db, {std::nullopt, 1, 1, 2}, r, 1700000000000);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select = read_file(test::source_dir() / "tests" / "verify" / "select_verification.sql");
  ASSERT_TRUE(select.ok());
  auto s = (*db)->prepare(*select);
  ASSERT_TRUE(s.ok());
  s->bind(1, *id);
  ASSERT_TRUE(s->step().value_or(false));
  EXPECT_EQ(s->text(0), "passed");
  EXPECT_EQ(s->text(1), R"(["mutant_survived"])");
  EXPECT_EQ(s->text(2), "1 test passed");
  EXPECT_EQ(nlohmann::json::parse(s->text(3))["tests"][0]["name"], "test_add");
  EXPECT_EQ(s->text(4), "import torch\n");
  EXPECT_EQ(s->int64(5), 1234);
  EXPECT_EQ(s->text(6), "cuda:0");
  EXPECT_EQ(s->int64(7), 2);
  // A sample that does not exist is refused (foreign key), with context.
  auto bad = store_verification(**db, {std::nullopt, 1, 99, 1}, r, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("sample 99"), std::string::npos);
}

TEST(VerifyStore, TextsWithANulByteAreStoredWhole) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok()) << db.error().message;
  auto fixtures = read_file(test::source_dir() / "tests" / "verify" / "fixtures.sql");
  ASSERT_TRUE(fixtures.ok());
  ASSERT_TRUE((*db)->exec(*fixtures).ok());
  VerifyResult r;
  r.verdict = Verdict::error;
  r.detail = std::string("ValueError: source code string cannot contain null bytes\0after", 62);
  r.stderr_tail = std::string("line 1\0line 2\n", 14);
  auto id = store_verification(**db, {std::nullopt, 1, 1, 1}, r, 1700000000000);
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto select =
      read_file(test::source_dir() / "tests" / "verify" / "select_verification_texts.sql");
  ASSERT_TRUE(select.ok());
  auto s = (*db)->prepare(*select);
  ASSERT_TRUE(s.ok());
  s->bind(1, *id);
  ASSERT_TRUE(s->step().value_or(false));
  EXPECT_EQ(s->text(0), r.detail);
  EXPECT_EQ(s->text(1), r.stderr_tail);
  EXPECT_EQ(s->int64(2), 62);
  EXPECT_EQ(s->int64(3), 14);
}

TEST(VerifyStore, DeviceAlerts) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok());
  std::vector<DeviceStatus> devs = {{"cuda:0", true, 4, 4, 0, ""},
                                    {"cuda:1", false, 4, 0, 3, "GPU probe failed: Xid 79"}};
  ASSERT_TRUE(store_device_status(**db, devs, 5).ok());
  devs[0].ready_workers = 3;
  ASSERT_TRUE(store_device_status(**db, devs, 6).ok());
  auto alerts = device_alerts(**db);
  ASSERT_TRUE(alerts.ok());
  ASSERT_EQ(alerts->size(), 1u);
  EXPECT_EQ((*alerts)[0].device, "cuda:1");
  EXPECT_EQ((*alerts)[0].start_failures, 3);
  EXPECT_EQ((*alerts)[0].reason, "GPU probe failed: Xid 79");
  EXPECT_EQ((*alerts)[0].updated_ms, 6);
}

// A daemon's pool at start replaces every row: an alert from an earlier configuration (or a pool
// that could not start) goes.
TEST(VerifyStore, ReplacingTheDevicesDropsEarlierRows) {
  test::TempDir tmp;
  auto db = store::Db::open({(tmp.path() / "k.db").string()});
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(
      replace_device_status(**db, {{"verifier", false, 0, 0, 1, "cannot start: no python"}}, 5)
          .ok());
  auto before = device_alerts(**db);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ((*before)[0].reason, "cannot start: no python");
  ASSERT_TRUE(replace_device_status(**db, {{"cpu", true, 2, 2, 0, ""}}, 6).ok());
  auto after = device_alerts(**db);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->empty());
}

}  // namespace
}  // namespace kforge::verify
