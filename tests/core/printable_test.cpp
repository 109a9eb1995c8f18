// printable(): the one escaper of text for the terminal.

#include <gtest/gtest.h>

#include "kforge/core/printable.hpp"

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

}  // namespace
}  // namespace kforge
