#include <gtest/gtest.h>

#include "kforge/llm/json.hpp"

namespace kforge::llm {
namespace {

using nlohmann::json;

const json kSchema = json::parse(R"({
  "type": "object",
  "required": ["analysis"],
  "properties": {
    "analysis": {
      "type": "object",
      "required": ["core_function", "key_parameters"],
      "properties": {
        "core_function": {"type": "string", "minLength": 1},
        "key_parameters": {"type": "array", "items": {"type": "string"}},
        "kind": {"enum": ["copy", "transpose"]}
      }
    }
  }
})");

const char* kGood = R"({"analysis": {"core_function": "Z = X.T", "key_parameters": ["BLOCK_M"]}})";

TEST(ExtractJson, BareObject) {
  auto r = extract_json(kGood, kSchema);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["analysis"]["core_function"], "Z = X.T");
}

TEST(ExtractJson, FencedBlock) {
  auto r = extract_json(std::string("```json\n") + kGood + "\n```", kSchema);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["analysis"]["key_parameters"][0], "BLOCK_M");
}

TEST(ExtractJson, WrappedInProseWithBracesInTheProse) {
  std::string text = std::string("Sure. In Triton, {pid} is the program id. Result:\n") + kGood +
                     "\nHope this helps {really}.";
  auto r = extract_json(text, kSchema);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["analysis"]["core_function"], "Z = X.T");
}

TEST(ExtractJson, SeveralFencesTakesTheOneThatValidates) {
  std::string text =
      "Draft:\n```json\n{\"analysis\": {\"core_function\": \"copy\"}}\n```\n"
      "Final:\n```JSON\n" +
      std::string(kGood) + "\n```\n";
  auto r = extract_json(text, kSchema);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["analysis"]["core_function"], "Z = X.T");
  // Without a schema the first object wins.
  auto first = extract_json(text);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->at("analysis").at("core_function"), "copy");
}

TEST(ExtractJson, BracesInsideStringsDoNotConfuseTheScan) {
  std::string text =
      "Here: {\"kernel_wrapper\": \"def f():\\n    d = {'a': 1}\\n    return '}'\", "
      "\"unitest_code\": \"assert True\"} done";
  auto r = extract_json(text);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["unitest_code"], "assert True");
}

TEST(ExtractJson, StringEncodedObject) {
  auto r = extract_json(R"("{\"a\": 1}")");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["a"], 1);
}

TEST(ExtractJson, FailureSaysWhy) {
  auto none = extract_json("I cannot help with that.");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().kind, "parse");
  EXPECT_NE(none.error().message.find("no JSON object"), std::string::npos) << none.error().message;

  auto wrong =
      extract_json(R"({"analysis": {"core_function": "x", "key_parameters": [1]}})", kSchema);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("$.analysis.key_parameters[0]: expected string, got "
                                       "integer"),
            std::string::npos)
      << wrong.error().message;

  auto broken = extract_json("```json\n{\"a\": 1,,}\n```");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("fenced block at line 1: not JSON"), std::string::npos)
      << broken.error().message;

  auto array = extract_json("[1, 2]");
  ASSERT_FALSE(array.ok());

  EXPECT_FALSE(extract_json("   ").ok());
}

TEST(ValidateSchema, Subset) {
  EXPECT_EQ(validate_schema(json::parse(kGood), kSchema), "");
  EXPECT_EQ(validate_schema(json::parse(R"({"x": 1})"), kSchema),
            "$: missing required property 'analysis'");
  EXPECT_EQ(
      validate_schema(json::parse(R"({"analysis": {"core_function": "", "key_parameters": []}})"),
                      kSchema),
      "$.analysis.core_function: shorter than 1 characters");
  EXPECT_EQ(validate_schema(json::parse(R"({"analysis": {"core_function": "a", "key_parameters": [],
                                           "kind": "gather"}})"),
                            kSchema),
            R"($.analysis.kind: "gather" is not one of ["copy","transpose"])");
  json closed = {{"type", "object"},
                 {"additionalProperties", false},
                 {"properties", {{"a", {{"type", "integer"}}}}}};
  EXPECT_EQ(validate_schema(json{{"a", 1}}, closed), "");
  EXPECT_EQ(validate_schema(json{{"a", 1.5}}, closed), "$.a: expected integer, got number");
  EXPECT_EQ(validate_schema(json{{"b", 1}}, closed), "$: unexpected property 'b'");
  json multi = {{"type", json::array({"string", "null"})}};
  EXPECT_EQ(validate_schema(nullptr, multi), "");
  EXPECT_EQ(validate_schema(3, multi), "$: expected string or null, got integer");
  json items = {{"type", "array"}, {"minItems", 2}};
  EXPECT_EQ(validate_schema(json::array({1}), items), "$: fewer than 2 items");
}

}  // namespace
}  // namespace kforge::llm
