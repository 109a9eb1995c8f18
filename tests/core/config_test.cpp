#include <gtest/gtest.h>

#include <map>

#include "kforge/core/config.hpp"

namespace kforge {
namespace {

EnvLookup env_of(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

struct Section {
  std::string url = "http://default";
  int limit = 4;
  double ratio = 0.5;
  bool on = false;
  std::vector<std::string> list;
  std::map<std::string, std::string> headers;
};

Status read(ConfigReader& r, Section& s) {
  auto n = r.root().child("sec");
  n.get("url", s.url);
  n.get("limit", s.limit);
  n.get("ratio", s.ratio);
  n.get("on", s.on);
  n.get("list", s.list);
  n.get("headers", s.headers);
  return r.finish();
}

TEST(Config, ReadsTypedValuesAndKeepsDefaults) {
  auto r = ConfigReader::load_string(
      "sec:\n  limit: 9\n  on: yes\n  list: [a, b]\n  headers:\n    X-A: 1\n", "t.yaml",
      env_of({}));
  ASSERT_TRUE(r.ok());
  Section s;
  ASSERT_TRUE(read(**r, s).ok());
  EXPECT_EQ(s.limit, 9);
  EXPECT_TRUE(s.on);
  EXPECT_EQ(s.url, "http://default");
  EXPECT_EQ(s.list, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.headers.at("X-A"), "1");
}

TEST(Config, UnknownKeyNamesFileAndLine) {
  auto r = ConfigReader::load_string("sec:\n  limit: 9\n  limitt: 3\n", "t.yaml", env_of({}));
  ASSERT_TRUE(r.ok());
  Section s;
  auto st = read(**r, s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "t.yaml:3: sec.limitt: unknown key");
}

TEST(Config, WrongTypeNamesFileAndLine) {
  auto r = ConfigReader::load_string("# c\nsec:\n  limit: many\n", "t.yaml", env_of({}));
  ASSERT_TRUE(r.ok());
  Section s;
  auto st = read(**r, s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "t.yaml:3: sec.limit: expected an integer, got 'many'");
}

TEST(Config, EnvironmentOverridesFile) {
  auto r = ConfigReader::load_string("sec:\n  limit: 9\n", "t.yaml",
                                     env_of({{"KFORGE_SEC_LIMIT", "12"},
                                             {"KFORGE_SEC_URL", "http://x"},
                                             {"KFORGE_SEC_LIST", "p,q"}}));
  ASSERT_TRUE(r.ok());
  Section s;
  ASSERT_TRUE(read(**r, s).ok());
  EXPECT_EQ(s.limit, 12);
  EXPECT_EQ(s.url, "http://x");
  EXPECT_EQ(s.list, (std::vector<std::string>{"p", "q"}));
}

TEST(Config, EnvironmentSetsAMappingAsAJsonObject) {
  auto r = ConfigReader::load_string("sec:\n  headers:\n    X-A: 1\n", "t.yaml",
                                     env_of({{"KFORGE_SEC_HEADERS", R"({"X-B": "2"})"}}));
  ASSERT_TRUE(r.ok());
  Section s;
  ASSERT_TRUE(read(**r, s).ok());
  EXPECT_EQ(s.headers, (std::map<std::string, std::string>{{"X-B", "2"}}));
  auto bad = ConfigReader::load_string("", "t.yaml", env_of({{"KFORGE_SEC_HEADERS", "[1]"}}));
  ASSERT_TRUE(bad.ok());
  auto st = read(**bad, s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("KFORGE_SEC_HEADERS: expected a JSON object of strings"),
            std::string::npos)
      << st.error().message;
}

TEST(Config, BadEnvironmentValueIsAnError) {
  auto r = ConfigReader::load_string("", "t.yaml", env_of({{"KFORGE_SEC_RATIO", "half"}}));
  ASSERT_TRUE(r.ok());
  Section s;
  auto st = read(**r, s);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("KFORGE_SEC_RATIO"), std::string::npos);
}

TEST(Config, SyntaxErrorNamesLine) {
  auto r = ConfigReader::load_string("sec:\n  a: [1, 2\n", "t.yaml", env_of({}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message.rfind("t.yaml:", 0), 0u);
}

TEST(Config, SectionThatIsNotAMappingIsAnError) {
  auto r = ConfigReader::load_string("sec: 3\n", "t.yaml", env_of({}));
  ASSERT_TRUE(r.ok());
  Section s;
  auto st = read(**r, s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "t.yaml:1: sec: expected a mapping, got '3'");
}

}  // namespace
}  // namespace kforge
