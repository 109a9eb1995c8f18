// kforge export's training rows, read back the way their consumers read them, from databases the
// real pipeline wrote: kforged with the fake provider and its CPU verifier (the stand-in Triton).
//
// The chat site: a v2 run over the CPU kernels (tests/data/corpus_cpu.json) plus a planted
// near-duplicate group (vector_add.py and five copies of it that differ only in a comment: one
// kernel body) and twelve add kernels (every local name renamed and a constant of their own
// added: other kernel bodies, not similar as files, but the same kernel sketches up to renames
// and constants, so one near-duplicate group of their own), each record with a `license` field. The
// provider gives its add answers with a reasoning trace. The repair site: a v1 run whose first
// generations fail and whose repair rounds fix them (tests/pipeline/repair/), for the trajectories.

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <regex>

#include "daemon_util.hpp"
#include "kforge/report/dataset.hpp"

namespace kforge::pipeline::e2e {
namespace {

using ojson = nlohmann::ordered_json;

const char* kSecret = "sk-kforge-export-test-7f3a9c";

std::vector<ojson> read_jsonl(const fs::path& p) {
  std::vector<ojson> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) out.push_back(ojson::parse(line));
  return out;
}

std::vector<ojson> read_folder(const fs::path& dir, const std::string& split) {
  std::vector<ojson> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir / "data"))
    if (e.path().filename().string().starts_with(split + "-")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files)
    for (auto& r : read_jsonl(f)) out.push_back(std::move(r));
  return out;
}

// The corpus: the CPU kernels, the planted group and the unique add kernels.
fs::path write_corpus(const fs::path& dir) {
  json corpus = load_json(cpu_corpus());
  std::string add_code;
  for (auto& r : corpus) {
    r["license"] = "mit";
    if (r["file"] == "vector_add.py") add_code = r["output"];
  }
  json base = corpus[0];
  for (int i = 1; i <= 5; ++i) {
    json r = base;
    r["file"] = "dup_add_" + std::to_string(i) + ".py";
    r["output"] = "# vendored copy " + std::to_string(i) + "\n" + add_code;
    corpus.push_back(r);
  }
  for (int i = 1; i <= 12; ++i) {
    std::string code = add_code, n = std::to_string(i);
    for (const char* name : {"x_ptr", "y_ptr", "out_ptr", "n_elements", "pid", "offsets"})
      code = std::regex_replace(code, std::regex(std::string("\\b") + name + "\\b"),
                                std::string(name) + "_u" + n);
    code = std::regex_replace(code, std::regex("\\bx\\b"), "lhs_u" + n);
    code = std::regex_replace(code, std::regex("\\by\\b"), "rhs_u" + n);
    // A constant of its own: another kernel body (literals kept), the same kernel sketch.
    code = std::regex_replace(code, std::regex("tl\\.arange\\(0, BLOCK_SIZE\\)"),
                              "tl.arange(0, BLOCK_SIZE) + 0 * " + n);
    json r = base;
    r["file"] = "uniq_add_" + n + ".py";
    r["output"] = code;
    r["license"] = i == 12 ? "apache-2.0" : "mit";
    corpus.push_back(r);
  }
  fs::path p = dir / "corpus_export.json";
  test::write_text(p, corpus.dump(1));
  return p;
}

// The config's llm section names an environment variable holding the API key; the daemon gets
// kSecret there, so every request carried it in its Authorization header.
void use_secret_key(Site& site) {
  std::string cfg = test::read_text(site.config());
  auto at = cfg.find("api_key_env: \"\"");
  ASSERT_NE(at, std::string::npos) << cfg;
  cfg.replace(at, std::string("api_key_env: \"\"").size(), "api_key_env: KFORGE_EXPORT_TEST_KEY");
  test::write_text(site.config(), cfg);
}

std::unique_ptr<Site> chat_site() {
  json s = script("fake_llm_cpu.json");
  for (auto& rule : s["rules"])
    if (rule["name"] == "add_passes") rule["reasoning"] = "The kernel adds x and y element-wise.";
  auto site = std::make_unique<Site>(s);
  Options o;
  o.verify = true;
  o.fake_triton = true;
  site->write_config(o);
  use_secret_key(*site);
  site->import_corpus(write_corpus(site->dir().path()));
  site->create_run("v2", "v2");
  auto d = site->start_daemon({std::string("KFORGE_EXPORT_TEST_KEY=") + kSecret});
  std::int64_t jobs = site->scalar("SELECT count(*) FROM jobs");
  if (site->wait_for(kEnded, jobs, 180s) != jobs) {
    ADD_FAILURE() << "the pipeline did not end its jobs\n" << d->log();
    return nullptr;
  }
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(30s), std::optional<int>(0)) << d->log();
  auto dedup = site->kforge({"corpus", "dedup"});
  if (dedup.exit_code != 0) {
    ADD_FAILURE() << "kforge corpus dedup: " << dedup.err;
    return nullptr;
  }
  return site;
}

class ExportFormats : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (fs::exists("/usr/bin/python3")) site_ = chat_site().release();
  }
  static void TearDownTestSuite() {
    delete site_;
    site_ = nullptr;
  }
  void SetUp() override {
    if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
    if (site_ == nullptr) GTEST_FAIL() << "no pipeline database";
  }
  static Site* site_;
};
Site* ExportFormats::site_ = nullptr;

// What TRL and axolotl's chat_template need of a conversation: roles they know, system only
// first, then user and assistant turns alternating from a user turn, ending with the assistant,
// and no empty turn.
void expect_chat(const ojson& messages, const std::string& where) {
  ASSERT_TRUE(messages.is_array()) << where;
  ASSERT_GE(messages.size(), 2u) << where;
  std::string expected = "user";
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const ojson& m = messages[i];
    ASSERT_TRUE(m.is_object()) << where;
    ASSERT_TRUE(m["role"].is_string()) << where;
    ASSERT_TRUE(m["content"].is_string()) << where << " turn " << i;
    EXPECT_FALSE(m["content"].get<std::string>().empty()) << where << " turn " << i;
    std::string role = m["role"];
    if (i == 0 && role == "system") continue;
    EXPECT_EQ(role, expected) << where << " turn " << i;
    expected = expected == "user" ? "assistant" : "user";
  }
  EXPECT_EQ(messages.back()["role"], "assistant") << where;
}

const std::vector<std::string> kMetadata = {"key",
                                            "run",
                                            "pipeline",
                                            "prompt_version",
                                            "prompts",
                                            "model",
                                            "stage",
                                            "repair_round",
                                            "verdict",
                                            "flags",
                                            "status",
                                            "mutation_score",
                                            "cost_usd",
                                            "prompt_tokens",
                                            "completion_tokens",
                                            "near_duplicate_of",
                                            "license",
                                            "group",
                                            "split"};

void expect_metadata(const ojson& m, const std::string& run, const std::string& where) {
  std::vector<std::string> keys;
  for (const auto& item : m.items()) keys.push_back(item.key());
  keys.resize(std::min(keys.size(), kMetadata.size()));
  EXPECT_EQ(keys, kMetadata) << where;
  EXPECT_EQ(m["run"], run) << where;
  EXPECT_TRUE(m["key"].is_string()) << where;
  EXPECT_TRUE(m["model"].is_string()) << where;
  EXPECT_EQ(m["verdict"], "passed") << where;
  EXPECT_EQ(m["flags"], ojson::array()) << where;
  EXPECT_EQ(m["status"], "verified") << where;
  EXPECT_TRUE(m["cost_usd"].is_number()) << where;
  EXPECT_GT(m["prompt_tokens"].get<std::int64_t>(), 0) << where;
  ASSERT_TRUE(m["prompts"].is_array()) << where;
  for (const auto& p : m["prompts"]) {
    EXPECT_TRUE(p["stage"].is_string()) << where;
    EXPECT_EQ(p["sha256"].get<std::string>().size(), 64u) << where;
  }
}

// Each value's path in a row ("metadata.flags[]"), the kind of value there, and the paths that
// hold null.
void walk(const ojson& j, const std::string& at, std::map<std::string, char>& kinds,
          std::set<std::string>& nulls) {
  if (j.is_null()) {
    nulls.insert(at);
  } else if (j.is_object()) {
    kinds[at] = 'o';
    for (const auto& item : j.items()) walk(item.value(), at + "." + item.key(), kinds, nulls);
  } else if (j.is_array()) {
    kinds[at] = 'a';
    for (const auto& e : j) walk(e, at + "[]", kinds, nulls);
  } else {
    kinds[at] = j.is_string() ? 's' : j.is_boolean() ? 'b' : 'n';
  }
}

// What Arrow needs to read the rows as one schema: at every path the same kind of value in every
// row, and a row lacks a path only where it holds null above it (an absent mutation score) or an
// empty list.
void expect_one_schema(const std::vector<ojson>& rows) {
  ASSERT_FALSE(rows.empty());
  std::map<std::string, char> all;
  std::vector<std::pair<std::map<std::string, char>, std::set<std::string>>> each;
  for (const auto& row : rows) {
    std::map<std::string, char> kinds;
    std::set<std::string> nulls;
    walk(row, "", kinds, nulls);
    for (const auto& [path, kind] : kinds) {
      auto [it, added] = all.emplace(path, kind);
      EXPECT_EQ(it->second, kind) << path << " holds different kinds of value";
    }
    each.emplace_back(std::move(kinds), std::move(nulls));
  }
  for (std::size_t i = 0; i < each.size(); ++i) {
    const auto& [kinds, nulls] = each[i];
    for (const auto& [path, kind] : all) {
      if (kinds.count(path) || nulls.count(path)) continue;
      bool explained = false;
      for (std::string up = path; !explained && !up.empty();) {
        up = up.ends_with("[]") ? up.substr(0, up.size() - 2) : up.substr(0, up.rfind('.'));
        explained = nulls.count(up) > 0 || (kinds.count(up) && kinds.at(up) == 'a');
      }
      EXPECT_TRUE(explained) << "row " << i << " lacks " << path;
    }
  }
}

// The request the model was sent for a call, as the LLM client stored it.
ojson stored_messages(Site& site, const std::string& run, const std::string& key,
                      const std::string& stage) {
  auto rows = site.rows("SELECT kf_text(request_text) FROM llm_calls WHERE tag LIKE 'run=" + run +
                            " sample=" + key + " stage=" + stage +
                            " %' AND request_text IS NOT NULL ORDER BY id DESC LIMIT 1",
                        1);
  if (rows.empty()) return ojson();
  return ojson::parse(rows[0])["messages"];
}

TEST_F(ExportFormats, SftRowsAreTheRequestsTheModelWasSentAndItsVerifiedAnswers) {
  auto out = site_->dir() / "sft.jsonl";
  auto r = site_->kforge({"export", "v2", "--format", "sft", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = read_jsonl(out);
  // Verified only by default: the add kernels (1 + 5 copies + 12) and vector_sub.py.
  ASSERT_EQ(rows.size(), 19u) << r.out;
  EXPECT_NE(r.out.find("exported 19 samples of v2"), std::string::npos) << r.out;
  for (const auto& row : rows) {
    std::string key = row["metadata"]["key"];
    SCOPED_TRACE(key);
    std::vector<std::string> top;
    for (const auto& item : row.items()) top.push_back(item.key());
    EXPECT_EQ(top, (std::vector<std::string>{"messages", "metadata"}));
    expect_chat(row["messages"], key);
    expect_metadata(row["metadata"], "v2", key);
    // The user turn is exactly what the generation call sent: the kernel and the analysis.
    ojson sent = stored_messages(*site_, "v2", key, "generate");
    ASSERT_TRUE(sent.is_array());
    ASSERT_EQ(row["messages"].size(), sent.size() + 1);
    for (std::size_t i = 0; i < sent.size(); ++i)
      EXPECT_EQ(row["messages"][i]["content"], sent[i]["content"]);
    std::string user = row["messages"][0]["content"];
    EXPECT_NE(user.find("@triton.jit"), std::string::npos);
    EXPECT_NE(user.find("functional_contract"), std::string::npos) << "no analysis contract";
    // The answer in the prompt's output format: the JSON object the verifier ran.
    auto answer = ojson::parse(row["messages"].back()["content"].get<std::string>());
    EXPECT_TRUE(answer["kernel_wrapper"].is_string());
    EXPECT_TRUE(answer["unitest_code"].is_string());
    EXPECT_EQ(row["metadata"]["prompt_version"], "v2");
    EXPECT_EQ(row["metadata"]["stage"], "generate");
    EXPECT_EQ(row["metadata"]["repair_round"], 0);
    EXPECT_EQ(row["metadata"]["license"], key == "uniq_add_12.py" ? "apache-2.0" : "mit");
  }
  expect_one_schema(rows);
  // The secret key of the requests' headers is nowhere in an export.
  EXPECT_EQ(test::read_text(out).find(kSecret), std::string::npos);
}

TEST_F(ExportFormats, ReasoningGoesInAThinkBlockOrTheReasoningContentField) {
  auto think = site_->dir() / "think.jsonl";
  ASSERT_EQ(
      site_
          ->kforge({"export", "v2", "--format", "sft", "--out", think.string(), "--with-reasoning"})
          .exit_code,
      0);
  auto field = site_->dir() / "field.jsonl";
  auto r = site_->kforge({"export", "v2", "--format", "prompt-completion", "--out", field.string(),
                          "--with-reasoning=reasoning_content"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& row : read_jsonl(think)) {
    std::string key = row["metadata"]["key"];
    std::string content = row["messages"].back()["content"];
    if (key.find("add") != std::string::npos) {
      EXPECT_TRUE(
          content.starts_with("<think>\nThe kernel adds x and y element-wise.\n</think>\n\n"))
          << key << ": " << content.substr(0, 80);
      // The answer after it.
      EXPECT_TRUE(ojson::parse(content.substr(content.find("</think>\n\n") + 10)).is_object());
    } else {
      EXPECT_EQ(content.find("<think>"), std::string::npos) << key;
    }
  }
  for (const auto& row : read_jsonl(field)) {
    std::string key = row["metadata"]["key"];
    SCOPED_TRACE(key);
    // TRL's conversational prompt-completion: a prompt ending with the user, one completion.
    ASSERT_TRUE(row["prompt"].is_array());
    EXPECT_EQ(row["prompt"].back()["role"], "user");
    ASSERT_EQ(row["completion"].size(), 1u);
    const ojson& turn = row["completion"][0];
    EXPECT_EQ(turn["role"], "assistant");
    EXPECT_TRUE(ojson::parse(turn["content"].get<std::string>()).is_object());
    if (key.find("add") != std::string::npos)
      EXPECT_EQ(turn["reasoning_content"], "The kernel adds x and y element-wise.");
    else
      EXPECT_TRUE(turn["reasoning_content"].is_null());
    for (const auto& m : row["prompt"]) EXPECT_TRUE(m.contains("reasoning_content"));
  }
}

TEST_F(ExportFormats, RlRowsHaveVerlsFieldsWithTheVerifiedTestAndEntryPoints) {
  auto out = site_->dir() / "rl.jsonl";
  auto r = site_->kforge({"export", "v2", "--format", "rl", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 19u);
  std::int64_t index = 0;
  for (const auto& row : rows) {
    std::string key = row["metadata"]["key"];
    SCOPED_TRACE(key);
    for (const char* f : {"data_source", "prompt", "ability", "reward_model", "extra_info"})
      EXPECT_TRUE(row.contains(f)) << f;
    EXPECT_EQ(row["data_source"], "kforge/v2");
    EXPECT_TRUE(row["ability"].is_string());
    ASSERT_EQ(row["prompt"].size(), 1u);
    EXPECT_EQ(row["prompt"][0]["role"], "user");
    EXPECT_EQ(row["prompt"][0]["content"],
              stored_messages(*site_, "v2", key, "generate")[0]["content"]);
    EXPECT_EQ(row["reward_model"]["style"], "rule");
    const ojson& gt = row["reward_model"]["ground_truth"];
    EXPECT_NE(gt["unitest_code"].get<std::string>().find("def test_"), std::string::npos);
    std::string kernel = key == "vector_sub.py" ? "sub_kernel" : "add_kernel";
    std::string wrapper = key == "vector_sub.py" ? "sub" : "add";
    EXPECT_EQ(gt["entry_points"]["kernels"], ojson::array({kernel}));
    EXPECT_EQ(gt["entry_points"]["tests"], ojson::array({"test_" + wrapper}));
    EXPECT_EQ(gt["entry_points"]["wrapper"], ojson::array({wrapper}));
    EXPECT_TRUE(gt["speed"].is_null());  // the verifier measured no speed here
    EXPECT_EQ(row["extra_info"]["split"], "train");
    EXPECT_EQ(row["extra_info"]["index"], index++);
    EXPECT_EQ(row["extra_info"]["key"], key);
    EXPECT_NE(row["extra_info"]["code"].get<std::string>().find("@triton.jit"), std::string::npos);
    expect_metadata(row["metadata"], "v2", key);
  }
  expect_one_schema(rows);
}

// Splits the folder's README.md into its YAML front matter and the text after it.
std::pair<YAML::Node, std::string> read_card(const fs::path& dir) {
  std::string text = test::read_text(dir / "README.md");
  EXPECT_TRUE(text.starts_with("---\n"));
  auto end = text.find("\n---\n", 4);
  EXPECT_NE(end, std::string::npos);
  return {YAML::Load(text.substr(4, end - 4)), text.substr(end + 5)};
}

TEST_F(ExportFormats, AFolderWithSplitsThatNoNearDuplicateGroupCrossesAndItsCard) {
  // The groups kforge corpus dedup found: the planted one holds vector_add.py and its copies.
  auto dups = site_->kforge({"corpus", "dups", "--json"});
  ASSERT_EQ(dups.exit_code, 0) << dups.err;
  std::map<std::string, std::string> group_of;  // key -> the group's smallest key
  std::vector<std::vector<std::string>> groups;
  json listed = json::parse(dups.out);
  for (const auto& g : listed["list"]) {
    std::vector<std::string> keys;
    for (const auto& m : g["members"]) keys.push_back(m["key"]);
    std::sort(keys.begin(), keys.end());
    for (const auto& k : keys) group_of[k] = keys.front();
    groups.push_back(keys);
  }
  ASSERT_TRUE(group_of.count("dup_add_3.py")) << dups.out;
  EXPECT_EQ(group_of["dup_add_3.py"], group_of["vector_add.py"]);
  // The twelve renamed add kernels with a constant of their own are the same kernel up to
  // renames and constants, and keep its name and parameters (kernels named alike,
  // docs/DEDUP.md): copies of vector_add.py, in its group.
  for (int i = 1; i <= 12; ++i)
    EXPECT_EQ(group_of["uniq_add_" + std::to_string(i) + ".py"], group_of["vector_add.py"])
        << dups.out;

  auto dir = site_->dir() / "dataset";
  // Two units (and nothing else): the add group, split by its smallest key dup_add_1.py (hash at
  // 0.373), and vector_sub.py alone (0.365; vector_neg.py negates, a value operation of its
  // own): at 0.37 and 0.63 one goes to each split.
  auto r = site_->kforge({"export", "v2", "--format", "sft", "--out-dir", dir.string(), "--split",
                          "train=0.37,test=0.63", "--shard-rows", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto train = read_folder(dir, "train"), test = read_folder(dir, "test");
  EXPECT_EQ(train.size() + test.size(), 19u);
  EXPECT_FALSE(train.empty()) << dups.out;
  EXPECT_FALSE(test.empty());
  std::map<std::string, std::set<std::string>> splits_of_group;
  for (const auto* part : {&train, &test})
    for (const auto& row : *part) {
      std::string key = row["metadata"]["key"], split = row["metadata"]["split"];
      EXPECT_EQ(split, part == &train ? "train" : "test");
      expect_chat(row["messages"], key);
      if (group_of.count(key)) {
        EXPECT_EQ(row["metadata"]["group"], group_of[key]) << key;
        splits_of_group[group_of[key]].insert(split);
      } else {
        EXPECT_TRUE(row["metadata"]["group"].is_null()) << key;
      }
    }
  ASSERT_FALSE(splits_of_group.empty());
  for (const auto& [g, splits] : splits_of_group)
    EXPECT_EQ(splits.size(), 1u) << "the group of " << g << " crosses splits";
  // By their own keys the planted group's members would go to both splits: the group, not luck,
  // keeps them together.
  std::vector<report::Split> halves = {{"train", 0.5}, {"test", 0.5}};
  std::set<std::size_t> by_key;
  for (const auto& [key, group] : group_of)
    if (group == group_of["vector_add.py"]) by_key.insert(report::split_index(halves, key));
  EXPECT_EQ(by_key.size(), 2u);
  // Shards of at most 4 rows, named as the Hub expects.
  std::int64_t shards = 0;
  for (const auto& e : fs::directory_iterator(dir / "data")) {
    ++shards;
    std::string name = e.path().filename();
    EXPECT_TRUE(std::regex_match(name, std::regex("(train|test)-\\d{5}-of-\\d{5}\\.jsonl")))
        << name;
    EXPECT_LE(read_jsonl(e.path()).size(), 4u) << name;
  }
  EXPECT_GE(shards, 5);

  // The card: YAML front matter as the Hub reads it, and the run in words.
  auto [yaml, body] = read_card(dir);
  EXPECT_EQ(yaml["license"].as<std::string>(), "other");  // mit and apache-2.0 sources
  EXPECT_EQ(yaml["task_categories"][0].as<std::string>(), "text-generation");
  EXPECT_EQ(yaml["size_categories"][0].as<std::string>(), "n<1K");
  const auto& files = yaml["configs"][0]["data_files"];
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0]["split"].as<std::string>(), "train");
  EXPECT_EQ(files[0]["path"].as<std::string>(), "data/train-*.jsonl");
  EXPECT_EQ(files[1]["path"].as<std::string>(), "data/test-*.jsonl");
  const auto& info = yaml["dataset_info"];
  std::vector<std::string> features;
  for (const auto& f : info["features"]) features.push_back(f["name"].as<std::string>());
  EXPECT_EQ(features, (std::vector<std::string>{"messages", "metadata"}));
  std::vector<std::string> meta_fields;
  for (const auto& f : info["features"][1]["struct"])
    meta_fields.push_back(f["name"].as<std::string>());
  EXPECT_EQ(meta_fields, kMetadata);
  EXPECT_EQ(info["splits"][0]["name"].as<std::string>(), "train");
  EXPECT_EQ(info["splits"][0]["num_examples"].as<std::size_t>(), train.size());
  EXPECT_EQ(info["splits"][1]["num_examples"].as<std::size_t>(), test.size());
  for (const char* words :
       {"mutant_survived", "no_kernel_launch", "weak_test", "corpus dedup` at similarity 0.6",
        "wholly in one split", "| generate | v2 |", "| analyze | v2 |", "`mit`: 18 samples",
        "`apache-2.0`: 1 sample\n", "No eval set was checked", "load_dataset(", "## Fields",
        "- `messages`: the request's messages as the model was sent them"})
    EXPECT_NE(body.find(words), std::string::npos) << words << "\n" << body;
  // The prompts' hashes are the run's.
  for (const auto& sha : site_->rows(
           "SELECT json_extract(prompts_json, '$.generate.sha256') FROM runs WHERE tag = 'v2'", 1))
    EXPECT_NE(body.find(sha), std::string::npos);
  EXPECT_EQ(test::read_text(dir / "README.md").find(kSecret), std::string::npos);

  // The same export again gives the same split of every sample, and replaces the folder.
  auto again = site_->kforge({"export", "v2", "--format", "sft", "--out-dir", dir.string(),
                              "--split", "train=0.37,test=0.63"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  std::set<std::string> train_keys, again_keys;
  for (const auto& row : train) train_keys.insert(row["metadata"]["key"]);
  for (const auto& row : read_folder(dir, "train")) again_keys.insert(row["metadata"]["key"]);
  EXPECT_EQ(train_keys, again_keys);
  std::int64_t files_now = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir / "data")) ++files_now;
  EXPECT_EQ(files_now, 2);  // one shard per split now: nothing of the old export is left
}

TEST_F(ExportFormats, DecontaminationAndTheSourcesLicenseAreInTheCard) {
  // An eval set holding the add kernel, a kernel of 10 code lines or fewer: only its exact
  // copies up to renames, formatting and literals identify it (docs/DEDUP.md, "Decontamination"),
  // so the five vendored dup_add_* and vector_add.py itself are left out, and uniq_add_* (a
  // constant added), the sub and scale kernels (one operator apart) stay: 13 rows. The card
  // names each pair.
  json corpus = load_json(site_->dir() / "corpus_export.json");
  json eval = json::array();
  for (const auto& r : corpus)
    if (r["file"] == "vector_add.py") eval.push_back({{"id", "bench/add"}, {"code", r["output"]}});
  auto eval_file = site_->dir() / "eval.json";
  test::write_text(eval_file, eval.dump());
  auto dir = site_->dir() / "rl-dataset";
  auto r =
      site_->kforge({"export", "v2", "--format", "rl", "--out-dir", dir.string(), "--exclude-near",
                     eval_file.string(), "--map", "code=code", "--key", "id", "--license", "mit"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = read_folder(dir, "train");
  EXPECT_EQ(rows.size(), 13u);
  for (const auto& row : rows)
    EXPECT_EQ(row["metadata"]["key"].get<std::string>().rfind("dup_add_", 0), std::string::npos);
  auto [yaml, body] = read_card(dir);
  EXPECT_EQ(yaml["license"].as<std::string>(), "mit");
  std::vector<std::string> features;
  for (const auto& f : yaml["dataset_info"]["features"])
    features.push_back(f["name"].as<std::string>());
  EXPECT_EQ(features, (std::vector<std::string>{"data_source", "prompt", "ability", "reward_model",
                                                "extra_info", "metadata"}));
  EXPECT_NE(body.find("6 samples removed"), std::string::npos) << body;
  EXPECT_NE(body.find("`dup_add_3.py`: kernel `add_kernel` is the same as `add_kernel` of "
                      "`bench/add` in `"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find("kernels of fewer than 60 tokens"), std::string::npos) << body;
  EXPECT_NE(body.find("eval.json`: 1 kernel\n"), std::string::npos) << body;
}

TEST_F(ExportFormats, BadInputIsAClearErrorAndAFailedExportLeavesTheFolderAsItWas) {
  auto dir = site_->dir() / "kept";
  ASSERT_EQ(site_->kforge({"export", "v2", "--format", "sft", "--out-dir", dir.string()}).exit_code,
            0);
  std::string card = test::read_text(dir / "README.md");
  auto r = site_->kforge({"export", "v2", "--format", "chatml", "--out-dir", dir.string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--format: 'chatml' is not one of"), std::string::npos) << r.err;
  r = site_->kforge({"export", "v2", "--format", "sft", "--out-dir", dir.string(), "--split",
                     "train=0.9,test=0.2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--split: the fractions sum to 1.1 (0.9 + 0.2), not 1"), std::string::npos)
      << r.err;
  r = site_->kforge({"export", "v2", "--format", "sft", "--out", (dir / "x.jsonl").string(),
                     "--split", "train=1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--split goes with --out-dir"), std::string::npos) << r.err;
  // A folder that is not a kforge export is never replaced.
  auto mine = site_->dir() / "mine";
  fs::create_directories(mine);
  test::write_text(mine / "notes.txt", "mine");
  r = site_->kforge({"export", "v2", "--format", "sft", "--out-dir", mine.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("is not a kforge export folder"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_text(mine / "notes.txt"), "mine");
  // A folder that cannot be made: the error names it, and nothing is left behind.
  auto blocked = site_->dir() / "a-file";
  test::write_text(blocked, "x");
  r = site_->kforge({"export", "v2", "--format", "sft", "--out-dir", (blocked / "ds").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find((blocked / "ds").string()), std::string::npos) << r.err;
  EXPECT_EQ(test::read_text(dir / "README.md"), card);
  for (const auto& e : fs::directory_iterator(site_->dir().path()))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

// The repair site: each first generation fails and one repair round fixes it.
TEST(ExportTrajectories, EveryRoundWithTheVerifiersEvidenceEndingInTheVerifiedAnswer) {
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 not found";
  auto site = std::make_unique<Site>(script("repair/fake_llm.json"));
  Options o;
  o.verify = true;
  site->write_config(o);
  std::string cfg = test::read_text(site->config());
  cfg += "  python_path: [\"" + fake_triton_dir().string() + "\"]\n";
  test::write_text(site->config(), cfg);
  auto imp = site->kforge(
      {"import", (test::source_dir() / "tests/pipeline/repair/corpus.json").string(), "--map",
       "code=code,description_1=description,description_2=description", "--key", "key"});
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  fs::path keys = site->dir().path() / "fix.keys";
  test::write_text(keys, "double\nadd\n");
  site->create_run("fix", "v1", {"--samples-from", keys.string(), "--repair-rounds", "2"});
  auto d = site->start_daemon();
  ASSERT_EQ(site->wait_for(kEnded, 2, 120s), 2) << d->log();
  d->signal(SIGTERM);
  EXPECT_EQ(d->wait(60s), std::optional<int>(0)) << d->log();

  auto out = site->dir() / "trajectories.jsonl";
  auto r = site->kforge({"export", "fix", "--format", "trajectory", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto rows = read_jsonl(out);
  ASSERT_EQ(rows.size(), 2u);
  auto record = site->dir() / "records.jsonl";
  ASSERT_EQ(site->kforge({"export", "fix", "--out", record.string()}).exit_code, 0);
  auto records = read_jsonl(record);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ojson& row = rows[i];
    std::string key = row["metadata"]["key"];
    SCOPED_TRACE(key);
    expect_chat(row["messages"], key);
    // The generation, its answer, the repair request with the evidence, the corrected answer.
    ASSERT_EQ(row["messages"].size(), 4u);
    EXPECT_EQ(row["messages"][0]["content"],
              stored_messages(*site, "fix", key, "generate")[0]["content"]);
    EXPECT_EQ(row["messages"][2]["content"],
              stored_messages(*site, "fix", key, "repair")[0]["content"]);
    std::string evidence = row["messages"][2]["content"];
    EXPECT_NE(evidence.find("What the verifier saw"), std::string::npos);
    EXPECT_NE(evidence.find(key == "double" ? "Verdict: `failed`"
                                            : "the test checks nothing that the kernel computes"),
              std::string::npos)
        << evidence;
    // It ends in the answer the export's record holds, the verified one.
    auto last = ojson::parse(row["messages"][3]["content"].get<std::string>());
    EXPECT_EQ(last["unitest_code"], records[i]["unitest_code"]);
    EXPECT_EQ(last["kernel_wrapper"], records[i]["kernel_wrapper"]);
    if (key == "double") {
      EXPECT_NE(last["unitest_code"].get<std::string>().find("2.0 * v"), std::string::npos);
    }
    const ojson& rounds = row["metadata"]["rounds"];
    ASSERT_EQ(rounds.size(), 2u);
    EXPECT_EQ(rounds[0]["round"], 0);
    EXPECT_EQ(rounds[0]["stage"], "generate");
    EXPECT_EQ(rounds[0]["verdict"], key == "double" ? "failed" : "passed");
    EXPECT_EQ(rounds[1]["round"], 1);
    EXPECT_EQ(rounds[1]["stage"], "repair");
    EXPECT_EQ(rounds[1]["verdict"], "passed");
    EXPECT_EQ(rounds[1]["flags"], ojson::array());
    EXPECT_EQ(row["metadata"]["repair_round"], 1);
    EXPECT_EQ(row["metadata"]["stage"], "repair");
    expect_metadata(row["metadata"], "fix", key);
  }
  expect_one_schema(rows);
  // sft of a repaired sample: the repair call, as it was asked and answered.
  auto sft = site->dir() / "sft.jsonl";
  ASSERT_EQ(site->kforge({"export", "fix", "--format", "sft", "--out", sft.string()}).exit_code, 0);
  for (const auto& row : read_jsonl(sft)) {
    ASSERT_EQ(row["messages"].size(), 2u);
    EXPECT_NE(row["messages"][0]["content"].get<std::string>().find("What the verifier saw"),
              std::string::npos);
    EXPECT_EQ(row["metadata"]["prompts"].back()["stage"], "repair");
  }
}

}  // namespace
}  // namespace kforge::pipeline::e2e
