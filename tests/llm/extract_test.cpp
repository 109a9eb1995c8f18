// extract_answer on answers as real models give them: lenient JSON, Python dicts, reasoning,
// labelled blocks. Each test checks the exact code taken and what was recorded as mended.

#include <gtest/gtest.h>

#include "kforge/llm/json.hpp"

namespace kforge::llm {
namespace {

using nlohmann::json;

const json kGen = json::parse(R"({
  "type": "object",
  "properties": {
    "kernel_wrapper": {"type": "string", "minLength": 1},
    "unitest_code": {"type": "string", "minLength": 1}
  },
  "required": ["kernel_wrapper", "unitest_code"],
  "additionalProperties": false
})");

const std::string kWrapper = "def add(x, y):\n\tz = torch.empty_like(x)\n    return z\n";
const std::string kTest = "def test_add():\n    assert torch.allclose(add(a, b), a + b)\n";

std::vector<std::string> v(std::initializer_list<const char*> l) {
  return {l.begin(), l.end()};
}

Extraction ok(const std::string& text) {
  auto r = extract_answer(text, kGen);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message) << "\n--- reply:\n" << text;
  return r.ok() ? std::move(*r) : Extraction{};
}

TEST(ExtractAnswer, StrictJsonIsNotMended) {
  json j = {{"kernel_wrapper", kWrapper}, {"unitest_code", kTest}};
  auto e = ok(j.dump());
  EXPECT_EQ(e.value["kernel_wrapper"], kWrapper);
  EXPECT_TRUE(e.mended.empty());
  EXPECT_EQ(e.where, "the whole reply");
}

TEST(ExtractAnswer, RawNewlinesAndTabsInsideStrings) {
  std::string text =
      "{\"kernel_wrapper\": \"" + kWrapper + "\", \"unitest_code\": \"" + kTest + "\"}";
  auto e = ok(text);
  EXPECT_EQ(e.value["kernel_wrapper"], kWrapper);
  EXPECT_EQ(e.value["unitest_code"], kTest);
  EXPECT_EQ(e.mended, v({"raw_newlines"}));
}

TEST(ExtractAnswer, PythonDictWithTripleQuotes) {
  std::string text = "```python\n{\n    'kernel_wrapper': \"\"\"" + kWrapper +
                     "\"\"\",\n    'unitest_code': '''" + kTest + "''',\n}\n```";
  auto e = ok(text);
  EXPECT_EQ(e.value["kernel_wrapper"], kWrapper);
  EXPECT_EQ(e.value["unitest_code"], kTest);
  EXPECT_EQ(e.mended, v({"python_literal", "trailing_comma", "triple_quotes"}));
}

TEST(ExtractAnswer, SingleQuotedPythonDictWithEscapesAndLiterals) {
  auto r = extract_answer(
      R"({'kernel_wrapper': 'def f(x):\n    return x  # it\'s "fine"', 'unitest_code': 'assert f(1) == 1', 'ok': True, 'why': None})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->value["kernel_wrapper"], "def f(x):\n    return x  # it's \"fine\"");
  EXPECT_EQ(r->value["ok"], true);
  EXPECT_TRUE(r->value["why"].is_null());
  EXPECT_EQ(r->mended, v({"python_literal"}));
}

TEST(ExtractAnswer, TrailingCommaBomAndExtraKeys) {
  json j = {{"kernel_wrapper", kWrapper}, {"unitest_code", kTest}, {"explanation", "because"}};
  std::string text = "\xEF\xBB\xBF" + j.dump();
  text.insert(text.size() - 1, ",");
  auto e = ok(text);
  EXPECT_FALSE(e.value.contains("explanation"));
  EXPECT_EQ(e.value["unitest_code"], kTest);
  EXPECT_EQ(e.mended, v({"bom", "extra_keys", "trailing_comma"}));
}

TEST(ExtractAnswer, FencedCodeInsideValuesIsUnwrapped) {
  json j = {{"kernel_wrapper", "```python\n" + kWrapper + "```"},
            {"unitest_code", "\n```py\n" + kTest + "\n```\n"}};
  auto e = ok(j.dump());
  EXPECT_EQ(e.value["kernel_wrapper"], kWrapper);
  EXPECT_EQ(e.value["unitest_code"], kTest);
  EXPECT_EQ(e.mended, v({"fenced_value"}));
}

TEST(ExtractAnswer, LabelledFencedBlocks) {
  std::string text = "Here is the wrapper.\n\n### kernel_wrapper\n```python\n" + kWrapper +
                     "```\n\nAnd the test:\n\n```unitest_code\n" + kTest + "```\n";
  auto e = ok(text);
  EXPECT_EQ(e.value["kernel_wrapper"], kWrapper);
  EXPECT_EQ(e.value["unitest_code"], kTest);
  EXPECT_EQ(e.mended, v({"labelled_blocks"}));
  // Prose that mentions a field is not a label: the code under it is not taken for that field.
  auto prose =
      extract_answer("**kernel_wrapper**:\n```python\n" + kWrapper +
                         "```\nThe test below calls kernel_wrapper:\n```python\n" + kTest + "```\n",
                     kGen);
  EXPECT_FALSE(prose.ok());
  auto both = extract_answer("kernel_wrapper and unitest_code:\n```python\nx = 1\n```\n", kGen);
  EXPECT_FALSE(both.ok());
}

TEST(ExtractAnswer, NeverTakesADraftFromReasoning) {
  json draft = {{"kernel_wrapper", "def add(x, y):\n    return x  # draft\n"},
                {"unitest_code", "assert True\n"}};
  json final = {{"kernel_wrapper", kWrapper}, {"unitest_code", kTest}};
  std::string text = "<think>\nFirst try:\n" + draft.dump() +
                     "\nHmm, wrong.\n</think>\n\n```json\n" + final.dump() + "\n```";
  auto e = ok(text);
  EXPECT_EQ(e.value["kernel_wrapper"], kWrapper);

  // Reasoning opened by the server's chat template: only </think> is in the text.
  auto e2 = ok("draft: " + draft.dump() + "\n</think>\n" + final.dump());
  EXPECT_EQ(e2.value["kernel_wrapper"], kWrapper);

  // A reply cut while thinking has no answer, whatever the reasoning holds.
  auto cut = extract_answer("<think>\n" + draft.dump() + "\nlet me check", kGen);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("no answer after the reasoning"), std::string::npos)
      << cut.error().message;
}

TEST(ExtractAnswer, SplitReasoningKeepsTheReasoning) {
  auto s = split_reasoning("<think>a</think>answer<thinking>b</thinking>");
  EXPECT_EQ(s.answer, "answer");
  EXPECT_EQ(s.reasoning, "a\n\nb");
  EXPECT_FALSE(s.cut_in_reasoning);
  auto cut = split_reasoning("x<think>still going");
  EXPECT_EQ(cut.answer, "x");
  EXPECT_EQ(cut.reasoning, "still going");
  EXPECT_TRUE(cut.cut_in_reasoning);
}

TEST(ExtractAnswer, BrokenTextSaysWhereItBroke) {
  auto r = extract_answer("{\"kernel_wrapper\": \"x\", \"unitest_code\": }", kGen);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("line 1 column"), std::string::npos) << r.error().message;
  std::vector<std::string> mended;
  std::string err;
  EXPECT_FALSE(parse_lenient("{'a': 1,,}", mended, err));
  EXPECT_NE(err.find("line 1 column 9"), std::string::npos) << err;
  EXPECT_TRUE(mended.empty());
}

TEST(ExtractAnswer, InvalidEscapesAreKeptAsPythonKeepsThem) {
  std::vector<std::string> mended;
  std::string err;
  auto j = parse_lenient(R"({"re": "\d+\.\w", "u": "\u00e9\ud83d\ude00"})", mended, err);
  ASSERT_TRUE(j) << err;
  EXPECT_EQ((*j)["re"], "\\d+\\.\\w");
  EXPECT_EQ((*j)["u"], "\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(mended, v({"invalid_escape", "invalid_escape", "invalid_escape"}));
}

}  // namespace
}  // namespace kforge::llm
