// Near-duplicates and decontamination through the real kforge binary and a real SQLite file:
// import --dedup, corpus dedup|dups, run create --dedup, compare's warning, export
// --exclude-near and near_duplicate_of.

#include <gtest/gtest.h>

#include <sstream>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "testutil.hpp"

namespace kforge {
namespace {

using nlohmann::json;
using test::ProcResult;
using test::TempDir;

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

class DedupCli : public ::testing::Test {
 protected:
  void SetUp() override {
    test::write_text(dir_ / "kforge.yaml", "pipeline:\n  prompts_dir: " +
                                               (test::source_dir() / "prompts").string() + "\n");
    // The tests' TritonBench-G records, plus near copies of three of them: a fork with a
    // licence header and another block size, a copy whose kernel is re-packaged with other host
    // code, and a longer copy with a helper appended.
    base_ = json::parse(test::read_text(test::small_corpus()));
    json corpus = base_;
    const std::string a = base_[3]["output"], b = base_[7]["output"], c = base_[11]["output"];
    key_a_ = base_[3]["file"];
    key_b_ = base_[7]["file"];
    key_c_ = base_[11]["file"];
    corpus.push_back({{"file", "fork/" + key_a_},
                      {"output", "# Copyright (c) a fork\n" + replace_all(a, "1024", "2048")},
                      {"simp_instru", "x"},
                      {"comp_instru", "y"}});
    corpus.push_back({{"file", "repackaged/" + key_b_},
                      {"output", b + "\n\nclass Wrapper:\n    pass\n"},
                      {"simp_instru", "x"},
                      {"comp_instru", "y"}});
    corpus.push_back({{"file", "zz_longer/" + key_c_},
                      {"output", c + "\n\ndef _helper(n):\n    return (n + 127) // 128 * 128\n"},
                      {"simp_instru", "x"},
                      {"comp_instru", "y"}});
    test::write_text(dir_ / "corpus.json", corpus.dump());
    total_ = static_cast<int>(corpus.size());
  }

  ProcResult kforge(std::vector<std::string> args) {
    args.insert(args.begin(), test::binary("apps/kforge/kforge").string());
    return test::run_process(args, {"KFORGE_DB=" + (dir_ / "k.db").string(),
                                    "KFORGE_CONFIG=" + (dir_ / "kforge.yaml").string()});
  }
  json kforge_json(std::vector<std::string> args) {
    auto r = kforge(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }
  void import() {
    auto r = kforge({"import", (dir_ / "corpus.json").string(), "--map",
                     "code=output,description_1=simp_instru,description_2=comp_instru", "--key",
                     "file", "--dedup"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_NE(r.out.find("near-duplicates: " + std::to_string(total_) + " signatures computed"),
              std::string::npos)
        << r.out;
  }
  std::vector<json> read_jsonl(const std::string& name) {
    std::vector<json> out;
    std::string text = test::read_text(dir_ / name);
    for (std::size_t at = 0; at < text.size();) {
      std::size_t nl = text.find('\n', at);
      out.push_back(json::parse(text.substr(at, nl - at)));
      at = nl + 1;
    }
    return out;
  }
  // The group (as keys) holding `key` in kforge corpus dups --json.
  static std::set<std::string> group_of(const json& dups, const std::string& key) {
    for (const auto& g : dups["list"]) {
      std::set<std::string> keys;
      for (const auto& m : g["members"]) keys.insert(m["key"].get<std::string>());
      if (keys.count(key) != 0) return keys;
    }
    return {};
  }

  TempDir dir_;
  json base_;
  std::string key_a_, key_b_, key_c_;
  int total_ = 0;
};

TEST_F(DedupCli, ImportFindsTheCopiesAndDupsListsThem) {
  import();
  json d = kforge_json({"corpus", "dups", "--json"});
  EXPECT_DOUBLE_EQ(d["threshold"].get<double>(), 0.6);
  EXPECT_EQ(d["stale"], 0);
  // Each planted copy is in its original's group (which may hold other near copies of the
  // corpus too).
  for (const auto& [orig, copy] :
       {std::pair{key_a_, "fork/" + key_a_}, std::pair{key_b_, "repackaged/" + key_b_},
        std::pair{key_c_, "zz_longer/" + key_c_}}) {
    auto grp = group_of(d, orig);
    EXPECT_EQ(grp.count(copy), 1u) << orig;
  }
  // A member is linked by similarity at or above the threshold, by the same kernels, or through
  // kernels (its kernels within, aligned with or named like the other's, at any file
  // similarity).
  const std::set<std::string> kernel_links = {"kernels within", "holds the kernels of",
                                              "kernels aligned", "kernels named alike",
                                              "same small kernels"};
  for (const auto& g : d["list"])
    for (const auto& m : g["members"]) {
      if (kernel_links.count(m["via"]) == 0) {
        EXPECT_GE(m["similarity"].get<double>(), 0.6);
      }
      EXPECT_NE(m["to"], m["key"]);
    }
  // Each group names its size, its representative and its spread: every other member is linked
  // to the representative, at or above the threshold (or through kernels).
  for (const auto& g : d["list"]) {
    EXPECT_EQ(g["size"].get<std::size_t>(), g["members"].size());
    EXPECT_GE(g["spread"].get<double>(), 0.6);
    int is_rep = 0;
    for (const auto& m : g["members"]) {
      if (m["key"] == g["representative"]) {
        ++is_rep;
        continue;
      }
      EXPECT_EQ(m["to"], g["representative"]) << m["key"];
      if (kernel_links.count(m["via"]) == 0) {
        EXPECT_GE(m["similarity"].get<double>(), g["spread"].get<double>());
      }
    }
    EXPECT_EQ(is_rep, 1) << g.dump();
  }
  // The re-packaged kernel shares its exact body: linked to its original, it says so; linked to
  // another representative, its original is linked there too, at the same similarity.
  for (const auto& g : d["list"]) {
    std::map<std::string, json> by_key;
    for (const auto& m : g["members"]) by_key[m["key"]] = m;
    if (by_key.count("repackaged/" + key_b_) == 0) continue;
    const json& copy = by_key["repackaged/" + key_b_];
    if (copy["to"] == key_b_ || g["representative"] == key_b_) {
      EXPECT_TRUE(copy["exact"].get<bool>()) << g.dump();
    } else {
      EXPECT_EQ(by_key[key_b_]["to"], copy["to"]) << g.dump();
      EXPECT_EQ(by_key[key_b_]["similarity"], copy["similarity"]) << g.dump();
    }
  }

  // Text output names groups and members; a higher threshold gives fewer or equal groups.
  auto r = kforge({"corpus", "dups"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fork/" + key_a_), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("samples, each at least"), std::string::npos) << r.out;
  json strict = kforge_json({"corpus", "dups", "--json", "--threshold", "0.99"});
  EXPECT_LE(strict["grouped"].get<int>(), d["grouped"].get<int>());

  // Nothing new: nothing computed again.
  json again = kforge_json({"corpus", "dedup", "--json"});
  EXPECT_EQ(again["computed"], 0);
  EXPECT_EQ(again["samples"], total_);

  // Bad thresholds are usage errors.
  EXPECT_EQ(kforge({"corpus", "dups", "--threshold", "0.2"}).exit_code, 2);
  EXPECT_EQ(kforge({"corpus", "dedup", "--threshold", "1.5"}).exit_code, 2);
}

TEST_F(DedupCli, DupsBeforeAnyDedupSaysWhatToRun) {
  auto r =
      kforge({"import", (dir_ / "corpus.json").string(), "--map", "code=output", "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = kforge({"corpus", "dups"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("kforge corpus dedup"), std::string::npos) << r.err;
}

TEST_F(DedupCli, RunCreateDedupKeepsOnePerGroupRecordsItAndCompareWarns) {
  import();
  json all = kforge_json({"run", "create", "all", "--pipeline", "v1", "--json"});
  EXPECT_EQ(all["jobs"], total_);
  EXPECT_TRUE(all["dedup"].is_null());
  json first = kforge_json({"run", "create", "first", "--pipeline", "v1", "--dedup", "--json"});
  json groups = kforge_json({"corpus", "dups", "--json"});
  int extra = groups["grouped"].get<int>() - groups["groups"].get<int>();
  EXPECT_GE(extra, 3);
  EXPECT_EQ(first["jobs"].get<int>(), total_ - extra);
  EXPECT_EQ(first["dedup"]["choice"], "first");
  EXPECT_DOUBLE_EQ(first["dedup"]["threshold"].get<double>(), 0.6);
  EXPECT_EQ(first["dedup"]["left_out"], extra);
  json largest =
      kforge_json({"run", "create", "largest", "--pipeline", "v1", "--dedup=largest", "--json"});
  EXPECT_EQ(largest["jobs"], first["jobs"]);
  EXPECT_EQ(largest["dedup"]["choice"], "largest");
  // --limit counts the samples kept.
  json limited = kforge_json(
      {"run", "create", "lim", "--pipeline", "v1", "--dedup", "--limit", "5", "--json"});
  EXPECT_EQ(limited["jobs"], 5);

  // Which samples each run holds, through export.
  auto keys_of = [&](const std::string& tag) {
    auto r = kforge({"export", tag, "--out", (dir_ / (tag + ".jsonl")).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> keys;
    for (const auto& rec : read_jsonl(tag + ".jsonl")) keys.insert(rec["file"].get<std::string>());
    return keys;
  };
  auto kf = keys_of("first"), kl = keys_of("largest");
  EXPECT_EQ(static_cast<int>(kf.size()), total_ - extra);
  // In each group: "first" keeps the group's representative and "largest" the longest code
  // (ties: the representative); neither keeps another member.
  for (const auto& g : groups["list"]) {
    std::string want_first = g["representative"], want_largest = want_first;
    std::int64_t most = -1;
    for (const auto& m : g["members"])
      if (m["key"] == want_first) most = m["bytes"];
    for (const auto& m : g["members"])
      if (m["bytes"].get<std::int64_t>() > most) {
        most = m["bytes"];
        want_largest = m["key"];
      }
    for (const auto& m : g["members"]) {
      std::string k = m["key"];
      EXPECT_EQ(kf.count(k), k == want_first ? 1u : 0u) << k;
      EXPECT_EQ(kl.count(k), k == want_largest ? 1u : 0u) << k;
    }
  }
  EXPECT_EQ(kf.count(key_a_) + kf.count("fork/" + key_a_), 1u);  // one of the two copies

  // The dedup settings are part of the run: compare warns when they differ, not otherwise.
  auto r = kforge({"compare", "all", "first"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("warning: the runs differ in dedup (all: none, first: first at 0.60)"),
            std::string::npos)
      << r.out;
  json cj = kforge_json({"compare", "first", "largest", "--json"});
  ASSERT_EQ(cj["comparisons"][0]["warnings"].size(), 1u);
  kforge_json({"run", "create", "first2", "--pipeline", "v1", "--dedup", "--json"});
  cj = kforge_json({"compare", "first", "first2", "--json"});
  EXPECT_TRUE(cj["comparisons"][0]["warnings"].empty());

  EXPECT_EQ(kforge({"run", "create", "bad", "--pipeline", "v1", "--dedup=smallest"}).exit_code, 2);
  EXPECT_EQ(
      kforge({"run", "create", "bad", "--pipeline", "v1", "--dedup", "--dedup-threshold", "0.1"})
          .exit_code,
      2);
}

// Which member of a group `run create --dedup` keeps does not depend on import order: the same
// files imported in two orders, into two databases, give runs of the same samples, for both
// choices ("first" is the group's representative, not the first imported).
TEST_F(DedupCli, RunCreateDedupKeepsTheSameSamplesWhateverTheImportOrder) {
  json corpus = json::parse(test::read_text(dir_ / "corpus.json"));
  json reversed = json::array();
  for (auto it = corpus.rbegin(); it != corpus.rend(); ++it) reversed.push_back(*it);
  test::write_text(dir_ / "reversed.json", reversed.dump());
  auto in_db = [&](const std::string& db, std::vector<std::string> args) {
    args.insert(args.begin(), test::binary("apps/kforge/kforge").string());
    return test::run_process(args, {"KFORGE_DB=" + (dir_ / db).string(),
                                    "KFORGE_CONFIG=" + (dir_ / "kforge.yaml").string()});
  };
  // The keys a run of `choice` holds, after importing `file` into `db`.
  auto kept = [&](const std::string& db, const std::string& choice) {
    auto r = in_db(db, {"run", "create", choice, "--pipeline", "v1", "--dedup=" + choice});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::string out = db + "_" + choice + ".jsonl";
    r = in_db(db, {"export", choice, "--out", (dir_ / out).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> keys;
    for (const auto& rec : read_jsonl(out)) keys.insert(rec["file"].get<std::string>());
    return keys;
  };
  std::map<std::string, std::map<std::string, std::set<std::string>>> runs;  // db -> choice -> keys
  for (const auto& [db, file] :
       {std::pair{std::string("sorted.db"), std::string("corpus.json")},
        std::pair{std::string("reversed.db"), std::string("reversed.json")}}) {
    auto r = in_db(db, {"import", (dir_ / file).string(), "--map",
                        "code=output,description_1=simp_instru,description_2=comp_instru", "--key",
                        "file", "--dedup"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const std::string choice : {"first", "largest"}) runs[db][choice] = kept(db, choice);
  }
  for (const std::string choice : {"first", "largest"}) {
    const auto& a = runs["sorted.db"][choice];
    EXPECT_EQ(a, runs["reversed.db"][choice]) << choice;
    // Something was left out (the planted copies), so the choice mattered.
    EXPECT_LT(static_cast<int>(a.size()), total_) << choice;
    // Of the original and its fork (the same kernels), exactly one is kept.
    EXPECT_EQ(a.count(key_a_) + a.count("fork/" + key_a_), 1u) << choice;
  }
}

// A run's --dedup-threshold is the run's: the corpus keeps its own threshold, so later
// `corpus dups`, a later `run create --dedup` and export's near_duplicate_of are as before.
// Without --dedup it is bad usage, not ignored.
TEST_F(DedupCli, ARunsDedupThresholdLeavesTheCorpusThresholdAlone) {
  import();
  kforge_json({"run", "create", "all", "--pipeline", "v1", "--json"});
  auto near_of = [&](const std::string& name) {
    auto r = kforge({"export", "all", "--out", (dir_ / name).string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<std::string, json> out;
    for (const auto& rec : read_jsonl(name))
      if (rec.contains("near_duplicate_of")) out[rec["file"]] = rec["near_duplicate_of"];
    return out;
  };
  json dups_before = kforge_json({"corpus", "dups", "--json"});
  auto near_before = near_of("before.jsonl");
  ASSERT_FALSE(near_before.empty());

  json strict = kforge_json({"run", "create", "dd9", "--pipeline", "v1", "--dedup",
                             "--dedup-threshold", "0.9", "--json"});
  EXPECT_DOUBLE_EQ(strict["dedup"]["threshold"].get<double>(), 0.9);
  json at_90 = kforge_json({"corpus", "dups", "--json", "--threshold", "0.9"});
  EXPECT_EQ(strict["dedup"]["left_out"], at_90["grouped"].get<int>() - at_90["groups"].get<int>());

  json dups_after = kforge_json({"corpus", "dups", "--json"});
  EXPECT_DOUBLE_EQ(dups_after["threshold"].get<double>(), 0.6);
  EXPECT_EQ(dups_after["groups"], dups_before["groups"]);
  EXPECT_EQ(dups_after["list"], dups_before["list"]);
  json later = kforge_json({"run", "create", "later", "--pipeline", "v1", "--dedup", "--json"});
  EXPECT_DOUBLE_EQ(later["dedup"]["threshold"].get<double>(), 0.6);
  EXPECT_EQ(later["dedup"]["left_out"],
            dups_before["grouped"].get<int>() - dups_before["groups"].get<int>());
  EXPECT_EQ(near_of("after.jsonl"), near_before);

  auto r = kforge({"run", "create", "nodedup", "--pipeline", "v1", "--dedup-threshold", "0.9"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--dedup-threshold goes with --dedup"), std::string::npos) << r.err;
  EXPECT_EQ(kforge({"status", "nodedup"}).exit_code, 1);  // not created
}

TEST_F(DedupCli, ExportExcludesOrMarksSamplesNearAnEvalSetAndSaysWhy) {
  import();
  kforge_json({"run", "create", "all", "--pipeline", "v1", "--json"});
  // An eval set in its own format: one kernel of the corpus, recommented, with another constant
  // and its kernel renamed, and an unrelated one.
  std::string code20 = base_[20]["output"];
  std::size_t def = code20.find("def ", code20.find("@triton.jit"));
  ASSERT_NE(def, std::string::npos);
  std::string kernel20 = code20.substr(def + 4, code20.find('(', def) - def - 4);
  std::string near =
      "# eval copy\n" + replace_all(replace_all(code20, "1024", "512"), kernel20, "renamed_k");
  std::string jsonl = json{{"task_id", "E-1"}, {"solution", near}}.dump() + "\n" +
                      json{{"task_id", "E-2"}, {"solution", "def f():\n    return 1\n"}}.dump() +
                      "\n";
  test::write_text(dir_ / "eval.jsonl", jsonl);
  std::string key20 = base_[20]["file"];

  auto r = kforge({"export", "all", "--out", (dir_ / "clean.jsonl").string(), "--exclude-near",
                   (dir_ / "eval.jsonl").string(), "--map", "code=solution", "--key", "task_id",
                   "--exclusions", (dir_ / "excluded.jsonl").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decontamination: 1 sample near an eval-set kernel"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(key20 + ": "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("E-1 in "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kernel " + kernel20), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("renamed_k of E-1"), std::string::npos) << r.out;
  auto clean = read_jsonl("clean.jsonl");
  EXPECT_EQ(static_cast<int>(clean.size()), total_ - 1);
  // To standard output (--out -): the rows alone there, the decontamination report on stderr.
  auto piped =
      kforge({"export", "all", "--out", "-", "--format", "jsonl", "--exclude-near",
              (dir_ / "eval.jsonl").string(), "--map", "code=solution", "--key", "task_id"});
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_NE(piped.err.find("decontamination: 1 sample near an eval-set kernel"), std::string::npos)
      << piped.err;
  int piped_rows = 0;
  std::istringstream lines(piped.out);
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(json::accept(line)) << "not a row on stdout: " << line;
    ++piped_rows;
  }
  EXPECT_EQ(piped_rows, total_ - 1);
  int corpus_marked = 0;
  for (const auto& rec : clean) {
    EXPECT_NE(rec["file"], key20);
    if (rec.contains("near_duplicate_of")) {
      EXPECT_EQ(rec["near_duplicate_of"]["in"], "corpus");
      ++corpus_marked;
    }
  }
  EXPECT_GE(corpus_marked, 6);  // both members of each of the three planted groups
  for (const auto& rec : clean)
    if (rec["file"] == "fork/" + key_a_) {
      EXPECT_EQ(rec["near_duplicate_of"]["key"], key_a_);  // its copy, at similarity 1
    }
  auto ex = read_jsonl("excluded.jsonl");
  ASSERT_EQ(ex.size(), 1u);
  EXPECT_EQ(ex[0]["key"], key20);
  EXPECT_EQ(ex[0]["eval_key"], "E-1");
  EXPECT_EQ(ex[0]["kernel"], kernel20);
  EXPECT_EQ(ex[0]["eval_kernel"], "renamed_k");
  EXPECT_EQ(ex[0]["action"], "left out");

  // --mark keeps it, marked.
  r = kforge({"export", "all", "--out", (dir_ / "marked.jsonl").string(), "--exclude-near",
              (dir_ / "eval.jsonl").string(), "--map", "code=solution", "--key", "task_id",
              "--mark"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto marked = read_jsonl("marked.jsonl");
  EXPECT_EQ(static_cast<int>(marked.size()), total_);
  bool seen = false;
  for (const auto& rec : marked)
    if (rec["file"] == key20) {
      seen = true;
      EXPECT_EQ(rec["near_duplicate_of"]["in"], "eval");
      EXPECT_EQ(rec["near_duplicate_of"]["key"], "E-1");
      EXPECT_NE(rec["near_duplicate_of"]["file"].get<std::string>().find("eval.jsonl"),
                std::string::npos);
    }
  EXPECT_TRUE(seen);

  // The tests' corpus is cut from TritonBench-G: against itself as an eval set, every sample
  // is near one of its kernels (the planted copies included).
  r = kforge({"export", "all", "--out", (dir_ / "none.json").string(), "--exclude-near",
              test::small_corpus().string(), "--map", "code=output", "--key", "file"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decontamination: " + std::to_string(total_) + " samples"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(json::parse(test::read_text(dir_ / "none.json")).size(), 0u);

  // Bad input: a missing eval set, a record without the code field, options without
  // --exclude-near.
  r = kforge({"export", "all", "--out", (dir_ / "x.jsonl").string(), "--exclude-near",
              (dir_ / "missing.json").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("missing.json"), std::string::npos) << r.err;
  r = kforge({"export", "all", "--out", (dir_ / "x.jsonl").string(), "--exclude-near",
              (dir_ / "eval.jsonl").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("eval.jsonl: record 0 (line 1): field 'code'"), std::string::npos) << r.err;
  // Its path once, as given.
  EXPECT_EQ(r.err.find("eval.jsonl"), r.err.rfind("eval.jsonl")) << r.err;
  EXPECT_EQ(kforge({"export", "all", "--out", (dir_ / "x.jsonl").string(), "--mark"}).exit_code, 2);
  EXPECT_EQ(
      kforge({"export", "all", "--out", (dir_ / "x.jsonl").string(), "--min-kernel-tokens", "20"})
          .exit_code,
      2);
}

}  // namespace
}  // namespace kforge
