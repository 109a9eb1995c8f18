// "Did you mean ...?" for a KFORGE_* variable that overrides no key: the mistakes a typist makes
// (two letters swapped, one left out, one doubled or added) in each of the configuration's own
// keys get that key as the suggestion.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kforge/app/config.hpp"
#include "kforge/core/names.hpp"
#include "testutil.hpp"

namespace kforge {
namespace {

// Every KFORGE_* name the configuration reads, as load_config looks them up.
std::vector<std::string> configuration_keys() {
  std::set<std::string> names;
  auto c = app::load_config(
      "",
      [&](const std::string& n) -> std::optional<std::string> {
        names.insert(n);
        return std::nullopt;
      },
      std::vector<std::string>{});
  EXPECT_TRUE(c.ok()) << c.error().message;
  return {names.begin(), names.end()};
}

// The warning load_config gives when only `name` is set in the environment ("" when none).
std::string warning_for(const std::string& name) {
  auto c = app::load_config(
      "", [](const std::string&) -> std::optional<std::string> { return std::nullopt; },
      std::vector<std::string>{name});
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() && !c->warnings.empty() ? c->warnings.front() : "";
}

std::string suggestion_in(const std::string& warning) {
  auto at = warning.find("(did you mean ");
  if (at == std::string::npos) return "";
  at += 14;
  return warning.substr(at, warning.find('?', at) - at);
}

TEST(Names, TheReadmesExampleGetsTheModelKey) {
  EXPECT_EQ(suggestion_in(warning_for("KFORGE_LLM_MODLE")), "KFORGE_LLM_MODEL");
  EXPECT_EQ(suggestion_in(warning_for("KFORGE_LLM_MODL")), "KFORGE_LLM_MODEL");
  EXPECT_EQ(suggestion_in(warning_for("KFORGE_LLM_MDOE")), "KFORGE_LLM_MODE");
  EXPECT_EQ(suggestion_in(warning_for("KFORGE_VERIFIER_PYTOHN")), "KFORGE_VERIFIER_PYTHON");
}

TEST(Names, ASwapIsOneEditAndTheLettersTypedBreakTies) {
  std::vector<std::string> known = {"KFORGE_LLM_MODE", "KFORGE_LLM_MODEL"};
  EXPECT_EQ(nearest_names("KFORGE_LLM_MODLE", known).front(), "KFORGE_LLM_MODEL");
  EXPECT_EQ(nearest_names("KFORGE_LLM_MOED", known).front(), "KFORGE_LLM_MODE");
  std::vector<std::string> commands = {"import", "status", "compare", "export", "debug",
                                       "retry",  "verify", "run",     "corpus", "batch"};
  EXPECT_EQ(nearest_names("stauts", commands).front(), "status");
  EXPECT_EQ(nearest_names("rnu", commands).front(), "run");
  EXPECT_EQ(nearest_names("ipmort", commands).front(), "import");
  EXPECT_EQ(nearest_names("verfiy", commands).front(), "verify");
  EXPECT_TRUE(nearest_names("frobnicate", commands).empty());
}

// Each key of the configuration, with two neighbouring letters swapped, one letter left out,
// one letter doubled and one letter added, is answered with that key; where the same mistake
// of another key gives the same name (a real tie), either key is right.
TEST(Names, EveryKeyMistypedGetsItselfSuggested) {
  auto keys = configuration_keys();
  ASSERT_GT(keys.size(), 60u);
  ASSERT_TRUE(std::find(keys.begin(), keys.end(), "KFORGE_LLM_MODEL") != keys.end());
  std::set<std::string> all(keys.begin(), keys.end());
  // typo -> the keys it is a mistake of, and which mistake.
  std::map<std::string, std::set<std::string>> meant;
  std::map<std::string, std::string> kind_of;
  for (const auto& key : keys) {
    const std::size_t from = 7;  // after "KFORGE_"
    auto add = [&](const std::string& kind, const std::string& typo) {
      if (all.count(typo) != 0) return;  // another key
      meant[typo].insert(key);
      kind_of.emplace(typo, kind);
    };
    for (std::size_t i = from; i + 1 < key.size(); ++i)
      if (key[i] != key[i + 1]) {
        std::string t = key;
        std::swap(t[i], t[i + 1]);
        add("swap", t);
      }
    for (std::size_t i = from; i < key.size(); ++i) {
      add("deletion", key.substr(0, i) + key.substr(i + 1));
      add("doubling", key.substr(0, i + 1) + key.substr(i));
      add("insertion", key.substr(0, i) + "X" + key.substr(i));
    }
  }
  std::map<std::string, int> tried;
  int ties = 0;
  std::string wrong;
  for (const auto& [typo, of] : meant) {
    ++tried[kind_of[typo]];
    if (of.size() > 1) ++ties;
    auto near = nearest_names(typo, keys);
    if (near.empty() || of.count(near.front()) == 0)
      wrong += kind_of[typo] + " " + typo + " -> " + (near.empty() ? "nothing" : near.front()) +
               " (meant " + *of.begin() + ")\n";
  }
  EXPECT_TRUE(wrong.empty()) << wrong;
  for (const char* kind : {"swap", "deletion", "doubling", "insertion"})
    EXPECT_GT(tried[kind], 300) << kind;
  EXPECT_LT(ties * 50, static_cast<int>(meant.size())) << ties << " ties";
}

}  // namespace
}  // namespace kforge
