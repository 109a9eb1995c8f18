// The verdict line (verify/verdict_line.hpp) a Slurm array task writes and the Slurm backend
// reads: what one side writes the other reads back equal, and a line with a field missing,
// unknown or of the wrong type is refused with the field's name. No cluster needed.

#include <gtest/gtest.h>

#include "kforge/verify/verdict_line.hpp"

namespace kforge::verify {
namespace {

VerdictLine sample_line() {
  VerdictLine l;
  l.index = 7;
  VerifyResult& r = l.result;
  r.key = "softmax.py";
  r.verdict = Verdict::passed;
  r.detail = "2 tests passed";
  r.flags = {kWeakTest, kConstantOutput};
  r.report = {{"mutation", {{"killed", 3}, {"applicable", 4}}}, {"tests", {{{"name", "t"}}}}};
  r.script = "import torch\n";
  r.stderr_tail = "warning: é\n";
  r.duration_ms = 1234;
  r.device = "cuda:1";
  return l;
}

TEST(VerdictLine, WhatATaskWritesTheBackendReadsBackEqual) {
  VerdictLine l = sample_line();
  std::string text = to_json(l).dump();
  auto back = verdict_line_from_json(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->index, 7);
  const VerifyResult& r = back->result;
  EXPECT_EQ(r.key, l.result.key);
  EXPECT_EQ(r.verdict, Verdict::passed);
  EXPECT_EQ(r.detail, l.result.detail);
  EXPECT_EQ(r.flags, l.result.flags);
  EXPECT_EQ(r.report, l.result.report);
  EXPECT_EQ(r.script, l.result.script);
  EXPECT_EQ(r.stderr_tail, l.result.stderr_tail);
  EXPECT_EQ(r.duration_ms, 1234);
  EXPECT_EQ(r.device, "cuda:1");
  EXPECT_EQ(to_json(*back).dump(), text);
  // Every verdict survives the trip.
  for (Verdict v : {Verdict::passed, Verdict::failed, Verdict::error, Verdict::timeout,
                    Verdict::crashed, Verdict::invalid, Verdict::skipped}) {
    l.result.verdict = v;
    auto b = verdict_line_from_json(to_json(l).dump());
    ASSERT_TRUE(b.ok()) << b.error().message;
    EXPECT_EQ(b->result.verdict, v);
  }
}

TEST(VerdictLine, MissingUnknownAndMistypedFieldsAreRefusedByName) {
  const auto good = to_json(sample_line());
  for (const auto& [name, value] : good.items()) {
    auto missing = good;
    missing.erase(name);
    auto r = verdict_line_from_json(missing.dump());
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().kind, "parse");
    EXPECT_EQ(r.error().message, "verdict line: field \"" + name + "\" is missing");
    (void)value;
  }
  auto renamed = good;
  renamed["stderr"] = renamed["stderr_tail"];
  renamed.erase("stderr_tail");
  auto r = verdict_line_from_json(renamed.dump());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "verdict line: unknown field \"stderr\"");
  struct Case {
    const char* field;
    nlohmann::ordered_json value;
    const char* message;
  };
  for (const Case& c :
       {Case{"index", "7", "field \"index\" is not an integer"},
        Case{"duration_ms", 1.5, "field \"duration_ms\" is not an integer"},
        Case{"key", nullptr, "field \"key\" is not a string"},
        Case{"flags", "weak_test", "field \"flags\" is not a list"},
        Case{"flags", {1}, "field \"flags\" holds something that is not a string"},
        Case{"verdict", "exploded", "field \"verdict\": 'exploded' is not a verdict"}}) {
    auto bad = good;
    bad[c.field] = c.value;
    auto x = verdict_line_from_json(bad.dump());
    ASSERT_FALSE(x.ok()) << c.field;
    EXPECT_EQ(x.error().message, std::string("verdict line: ") + c.message);
  }
  auto not_object = verdict_line_from_json("[1, 2]");
  ASSERT_FALSE(not_object.ok());
  EXPECT_EQ(not_object.error().message, "verdict line: not a JSON object");
  EXPECT_FALSE(verdict_line_from_json("{\"index\": 1").ok());
}

}  // namespace
}  // namespace kforge::verify
