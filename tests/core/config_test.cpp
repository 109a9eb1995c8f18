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
  EXPECT_EQ(st.error().message, "t.yaml:3: sec.limitt: unknown key (did you mean sec.limit?)");
}

TEST(Config, EveryErrorIsListedWithItsLineAndAnUnknownKeyGetsTheNearest) {
  auto r = ConfigReader::load_string("sec:\n  limitt: 3\n  limit: many\nsce: 1\nzzzzzz: 2\n",
                                     "t.yaml", env_of({}));
  ASSERT_TRUE(r.ok());
  Section s;
  auto st = read(**r, s);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "4 errors in the configuration:\n"
            "  t.yaml:3: sec.limit: expected an integer, got 'many'\n"
            "  t.yaml:2: sec.limitt: unknown key (did you mean sec.limit?)\n"
            "  t.yaml:4: sce: unknown key (did you mean sec?)\n"
            "  t.yaml:5: zzzzzz: unknown key");
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

// Reads `sec.v` with a range check and returns finish()'s message ("" when it passed).
template <class T, class Read>
std::string ranged(const std::string& yaml, T& v, Read read,
                   std::map<std::string, std::string> env = {}) {
  auto r = ConfigReader::load_string(yaml, "t.yaml", env_of(std::move(env)));
  EXPECT_TRUE(r.ok());
  auto n = (*r)->root().child("sec");
  read(n, v);
  auto st = (*r)->finish();
  return st.ok() ? "" : st.error().message;
}

TEST(Config, RangeCheckedReadsNameTheBoundFileAndLine) {
  int i = 5;
  auto at_least = [](ConfigNode& n, int& v) { n.get_at_least("v", v, 1); };
  EXPECT_EQ(ranged("sec:\n  v: 3\n", i, at_least), "");
  EXPECT_EQ(i, 3);
  EXPECT_EQ(ranged("# c\nsec:\n  v: 0\n", i, at_least), "t.yaml:3: sec.v: must be >= 1");
  std::int64_t big = 0;
  EXPECT_EQ(ranged("sec:\n  v: -1\n", big,
                   [](ConfigNode& n, std::int64_t& v) { n.get_at_least("v", v, 0, "0: no cap"); }),
            "t.yaml:2: sec.v: must be >= 0 (0: no cap)");
  double d = 1;
  auto above = [](ConfigNode& n, double& v) { n.get_above("v", v, 0); };
  EXPECT_EQ(ranged("sec:\n  v: 0\n", d, above), "t.yaml:2: sec.v: must be > 0");
  EXPECT_EQ(ranged("sec:\n  v: 0.25\n", d, above), "");
  auto between = [](ConfigNode& n, double& v) { n.get_between("v", v, 0, 1); };
  EXPECT_EQ(ranged("sec:\n  v: 1.5\n", d, between), "t.yaml:2: sec.v: must be between 0 and 1");
  int q = 1;
  EXPECT_EQ(ranged("sec:\n  v: 200\n", q,
                   [](ConfigNode& n, int& v) { n.get_between("v", v, 0, 128, "0: default"); }),
            "t.yaml:2: sec.v: must be between 0 and 128 (0: default)");
  // The environment's value is checked too, and so is a default that is out of range.
  i = 5;
  auto env_msg = ranged("", i, at_least, {{"KFORGE_SEC_V", "0"}});
  EXPECT_NE(env_msg.find("sec.v: must be >= 1"), std::string::npos) << env_msg;
  i = 0;
  EXPECT_NE(ranged("", i, at_least).find("must be >= 1"), std::string::npos);
}

enum class Flavour { warm, fresh };
constexpr EnumName<Flavour> kFlavourNames[] = {{Flavour::warm, "warm"}, {Flavour::fresh, "fresh"}};

TEST(Config, EnumReadsANameOfItsTableOrNamesFileLineAndTheChoices) {
  auto get = [](ConfigNode& n, Flavour& v) { n.get_enum("v", v, kFlavourNames); };
  Flavour f = Flavour::warm;
  EXPECT_EQ(ranged("sec:\n  v: fresh\n", f, get), "");
  EXPECT_EQ(f, Flavour::fresh);
  // Absent: the default stays.
  f = Flavour::fresh;
  EXPECT_EQ(ranged("", f, get), "");
  EXPECT_EQ(f, Flavour::fresh);
  EXPECT_EQ(ranged("# c\nsec:\n  v: tepid\n", f, get),
            "t.yaml:3: sec.v: 'tepid' is not one of warm, fresh");
  EXPECT_EQ(f, Flavour::fresh);
  // The environment's value goes through the same table.
  f = Flavour::fresh;
  EXPECT_EQ(ranged("", f, get, {{"KFORGE_SEC_V", "warm"}}), "");
  EXPECT_EQ(f, Flavour::warm);
  auto env_msg = ranged("", f, get, {{"KFORGE_SEC_V", "hot"}});
  EXPECT_NE(env_msg.find("sec.v: 'hot' is not one of warm, fresh"), std::string::npos) << env_msg;
}

TEST(EnumNames, ReadBothWaysAndParseNamesTheChoices) {
  EXPECT_EQ(name_of(kFlavourNames, Flavour::fresh), "fresh");
  EXPECT_EQ(value_of(kFlavourNames, "warm"), Flavour::warm);
  EXPECT_EQ(value_of(kFlavourNames, "Warm"), std::nullopt);
  EXPECT_EQ(names_of(kFlavourNames), "warm, fresh");
  auto bad = parse_enum(kFlavourNames, "hot", "flavour");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, "data");
  EXPECT_EQ(bad.error().message, "'hot' is not a flavour (warm, fresh)");
  auto good = parse_enum(kFlavourNames, "fresh", "flavour");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, Flavour::fresh);
}

}  // namespace
}  // namespace kforge
