// printable(): the one escaper of text for the terminal.

#include <gtest/gtest.h>

#include <spdlog/spdlog.h>

#include "kforge/core/fs.hpp"
#include "kforge/core/log.hpp"
#include "kforge/core/printable.hpp"
#include "testutil.hpp"

namespace kforge {
namespace {

TEST(Printable, EscapesControlsAndKeepsText) {
  EXPECT_EQ(printable("bold \x1b[1mX\x1b[0m"), "bold \\x1b[1mX\\x1b[0m");
  EXPECT_EQ(printable("title\x1b]0;pwned\x07"), "title\\x1b]0;pwned\\x07");
  EXPECT_EQ(printable("a\rb\nc\td\x7f"), "a\\x0db\\x0ac\td\\x7f");
  EXPECT_EQ(printable("a\nb", Newlines::keep), "a\nb");
  EXPECT_EQ(printable(std::string("nul\0x", 5)), "nul\\x00x");
  // C1 controls in UTF-8 (U+009B is a control sequence introducer) and bytes that are not UTF-8.
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\u009b31m");
  EXPECT_EQ(printable("\x9b"
                      "31m \xff"),
            "\\x9b31m \\xff");
  EXPECT_EQ(printable("\xe2\x82"), "\\xe2\\x82");  // cut short
  // Text in any script stays as it is.
  for (const char* plain : {"é ü ñ", "日本語", "emoji 🙂", "\xc2\xa0nbsp", "tab\there"})
    EXPECT_EQ(printable(plain), plain);
}

TEST(Printable, EveryStringOfADocument) {
  nlohmann::ordered_json j = {{"k\x1b", {"a\x1b[1m", 3, {{"x", "\x07"}}}}, {"n", 1.5}};
  auto p = printable_strings(j);
  EXPECT_EQ(p.dump(), R"({"k\\x1b":["a\\x1b[1m",3,{"x":"\\x07"}],"n":1.5})");
}

// Issue 56, 3: kforged's log quotes models' answers and corpus keys, and under scripts/run its
// stderr is the terminal: a log line shows their escape sequences as text, as the CLI does.
TEST(Printable, LogLinesShowEscapeSequencesAsText) {
  test::TempDir tmp;
  auto file = tmp.path() / "kforged.log";
  setup_logging("info", file.string());
  spdlog::warn(
      "sample esc\x1b[1m.py: no JSON object in the reply (\"Sure!\x1b]0;pwned\x07 "
      "\x1b[2J\xc2\x9b"
      "31m\rdone\")\nsecond line");
  spdlog::default_logger()->flush();
  auto text = read_file(file);
  ASSERT_TRUE(text.ok()) << text.error().message;
  for (char c : {'\x1b', '\x07', '\r'})
    EXPECT_EQ(text->find(c), std::string::npos) << static_cast<int>(c) << ": " << *text;
  EXPECT_EQ(text->find("\xc2\x9b"), std::string::npos) << *text;
  EXPECT_NE(text->find(" warning sample esc\\x1b[1m.py: no JSON object in the reply (\"Sure!"
                       "\\x1b]0;pwned\\x07 \\x1b[2J\\u009b31m\\x0ddone\")\nsecond line\n"),
            std::string::npos)
      << *text;
  spdlog::drop_all();
}

}  // namespace
}  // namespace kforge
