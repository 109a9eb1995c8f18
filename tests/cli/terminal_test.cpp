// What models, crawls and samples wrote reaches the terminal as text: escape sequences in keys,
// errors and verdict details are printed escaped by status, compare, debug and the error
// messages, on report's fixture database (tests/report/fixture.hpp).

#include <gtest/gtest.h>

#include "report_cli_fixture.hpp"

namespace kforge::test {
namespace {

// No byte that a terminal acts on: C0 controls but \n and \t, DEL, and C1 controls (UTF-8 C2 80
// to C2 9F).
void expect_inert(const std::string& text, const std::string& what) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F;
    bool c1 = c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) < 0xA0;
    if (c0 || c1) {
      ADD_FAILURE() << what << ": control byte " << static_cast<int>(c) << " at " << i << " in "
                    << text.substr(i > 40 ? i - 40 : 0, 80);
      return;
    }
  }
}

TEST_F(ReportCli, ModelWrittenEscapeSequencesNeverReachTheTerminal) {
  fx.exec("add_terminal_escapes");
  fx.exec("add_terminal_escapes_to_errors");
  fx.exec("add_terminal_escapes_to_details");
  auto status = kforge({"status", "v1"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  expect_inert(status.out, "status");
  expect_inert(status.err, "status (stderr)");
  EXPECT_TRUE(has(status.out, "\\x1b[1m\\x1b]0;pwned\\x07")) << status.out;
  EXPECT_TRUE(has(status.out, "\\x1b[2J\\u009b31m")) << status.out;
  // --json keeps the texts whole, escaped as JSON escapes them.
  auto json = kforge({"status", "v1", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  expect_inert(json.out, "status --json");
  EXPECT_TRUE(has(json.out, "\\u001b[1m")) << json.out;

  auto compare = kforge({"compare", "v1", "v2"});
  ASSERT_EQ(compare.exit_code, 0) << compare.err;
  expect_inert(compare.out, "compare");
  EXPECT_TRUE(has(compare.out, "\\x1b[1m")) << compare.out;

  auto out = fx.dir() / "debug";
  auto debug = kforge({"debug", "v2", "--failed", "--out", out.string()});
  ASSERT_EQ(debug.exit_code, 0) << debug.err;
  expect_inert(debug.out, "debug");
  expect_inert(debug.err, "debug (stderr)");

  // An error message quoting a key.
  auto missing = kforge({"debug", "v1", std::string("no\x1b[2Jsuch.py"), "--out", out.string()});
  EXPECT_NE(missing.exit_code, 0);
  expect_inert(missing.err, "error message");
  EXPECT_TRUE(has(missing.err, "no\\x1b[2Jsuch.py")) << missing.err;
}

}  // namespace
}  // namespace kforge::test
