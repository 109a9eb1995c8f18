// A run's parameters (store/run_params.hpp): what `kforge run create` writes reads back equal,
// an absent key is its default, and a key of the wrong type or an unknown one is an error that
// names it.

#include <gtest/gtest.h>

#include "kforge/store/run_params.hpp"

namespace kforge::store {
namespace {

TEST(RunParams, EverythingRunCreateWritesReadsBackEqual) {
  RunParams p;
  p.limit = 40;
  p.samples_from = "keys.txt";
  p.samples = 37;
  p.repair_rounds = 2;
  p.dedup = RunDedup{"largest", 0.75, "minhash-v1", 3};
  p.require_targets = {"hip:gfx942", "hip:gfx90a"};
  auto text = to_json(p).dump();
  auto back = parse_run_params(text);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, p) << text;
  EXPECT_EQ(to_json(*back).dump(), text);
  // What an unset run writes: null limit and list, no dedup, no targets.
  RunParams plain;
  plain.samples = 5;
  EXPECT_EQ(to_json(plain).dump(),
            R"({"limit":null,"repair_rounds":0,"samples":5,"samples_from":null})");
  auto again = parse_run_params(to_json(plain).dump());
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(*again, plain);
}

TEST(RunParams, AbsentKeysAreDefaults) {
  auto p = parse_run_params("{}");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(*p, RunParams{});
  p = parse_run_params(R"({"repair_rounds": 3, "dedup": null})");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->repair_rounds, 3);
  EXPECT_FALSE(p->dedup);
}

TEST(RunParams, WrongTypesAndUnknownKeysAreErrorsNamingTheKey) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"[]", "runs.params_json is not a JSON object"},
           Case{"{", "runs.params_json is not valid JSON"},
           Case{R"({"repair_rounds": "2"})", "\"repair_rounds\" is not an integer"},
           Case{R"({"limit": 1.5})", "\"limit\" is not an integer or null"},
           Case{R"({"require_targets": ["hip:gfx942", 3]})", "\"require_targets\" is not a list"},
           Case{R"({"dedup": {"choice": "first", "treshold": 0.6}})",
                "unknown key \"dedup.treshold\""},
           Case{R"({"repair_round": 2})", "unknown key \"repair_round\""},
       }) {
    auto p = parse_run_params(c.text);
    ASSERT_FALSE(p.ok()) << c.text;
    EXPECT_EQ(p.error().kind, "parse");
    EXPECT_NE(p.error().message.find(c.message), std::string::npos)
        << c.text << ": " << p.error().message;
  }
}

}  // namespace
}  // namespace kforge::store
