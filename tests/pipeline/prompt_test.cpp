// Prompt templates: loading, identities, rendering, and the rules the shipped prompts follow.

#include <gtest/gtest.h>

#include <filesystem>

#include "kforge/core/sha256.hpp"
#include "kforge/pipeline/prompt.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

namespace fs = std::filesystem;

fs::path shipped() {
  return test::source_dir() / "prompts";
}

// The text with every run of whitespace made one space (the checks ignore line wrapping).
std::string flat(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool space = c == ' ' || c == '\n' || c == '\t';
    if (space && !out.empty() && out.back() == ' ') continue;
    out.push_back(space ? ' ' : c);
  }
  return out;
}

bool uses(const Template& t, const std::string& name) {
  return std::find(t.placeholders.begin(), t.placeholders.end(), name) != t.placeholders.end();
}

TEST(Prompts, ShippedVersionsLoadWithTheirSchemasAndIdentities) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  EXPECT_EQ(lib->versions(), (std::vector<std::string>{"v1", "v2", "v3"}));
  auto v1 = lib->pipeline("v1");
  ASSERT_TRUE(v1.ok());
  ASSERT_EQ((*v1)->stages.size(), 1u);
  EXPECT_EQ((*v1)->first_stage(), "generate");
  auto v2 = lib->pipeline("v2");
  ASSERT_TRUE(v2.ok());
  ASSERT_EQ((*v2)->stages.size(), 2u);
  EXPECT_EQ((*v2)->first_stage(), "analyze");
  EXPECT_EQ((*v2)->next("analyze")->name, "generate");
  EXPECT_EQ((*v2)->next("generate"), nullptr);
  // Each stage's kind comes from the version's pipeline.yaml.
  EXPECT_EQ((*v1)->stages[0].kind, store::StageKind::code);
  EXPECT_EQ((*v2)->stages[0].kind, store::StageKind::analysis);
  EXPECT_EQ((*v2)->stages[1].kind, store::StageKind::code);
  ASSERT_TRUE((*v2)->repair.has_value());
  EXPECT_EQ((*v2)->repair->kind, store::StageKind::repair);
  EXPECT_EQ((*v2)->stage("repair"), &*(*v2)->repair);
  const Template* analyze = (*v2)->stage("analyze");
  EXPECT_EQ(analyze->sha256, sha256_hex(test::read_text(shipped() / "v2" / "analyze.md")));
  EXPECT_EQ(analyze->version, "v2");
  EXPECT_EQ(analyze->schema["required"][0], "analysis");
  auto ids = (*v2)->identities();
  EXPECT_EQ(ids["analyze"]["sha256"], analyze->sha256);
  EXPECT_EQ(ids["retry"]["version"], "common");
  EXPECT_EQ(ids["analyze"]["kind"], "analysis");
  EXPECT_EQ(ids["generate"]["kind"], "code");
  EXPECT_EQ((*v2)->identities(/*with_repair=*/true)["repair"]["kind"], "repair");
  EXPECT_EQ((*v2)->mismatch(ids), "");
  auto unknown = lib->pipeline("v9");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("define: v1, v2, v3"), std::string::npos);
}

// v3 is v2 with the speed label's reference: the analysis stage is the same text, generation
// asks for reference(), inputs() and KFORGE_SPEED, and repair keeps them.
TEST(Prompts, V3AsksForAReferenceAndRealisticInputs) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  auto v3 = lib->pipeline("v3");
  ASSERT_TRUE(v3.ok());
  EXPECT_EQ((*v3)->first_stage(), "analyze");
  EXPECT_EQ(test::read_text(shipped() / "v3" / "analyze.md"),
            test::read_text(shipped() / "v2" / "analyze.md"));
  for (const char* f : {"generate.md", "repair.md"}) {
    std::string t = test::read_text(shipped() / "v3" / f);
    for (const char* want : {"reference(", "inputs()", "KFORGE_SPEED", "current CUDA stream"})
      EXPECT_NE(t.find(want), std::string::npos) << f << " lacks " << want;
  }
  EXPECT_EQ(test::read_text(shipped() / "v2" / "generate.md").find("KFORGE_SPEED"),
            std::string::npos);
}

// The product's rules, as far as a program can see them in the texts.
TEST(Prompts, V2AnalysisSeesOnlyTheCodeAndGenerationIsBoundToIt) {
  auto lib = PromptLibrary::load(shipped());
  ASSERT_TRUE(lib.ok());
  const PipelineSpec* v2 = *lib->pipeline("v2");
  const Template* analyze = v2->stage("analyze");
  EXPECT_TRUE(uses(*analyze, "code"));
  EXPECT_TRUE(uses(*analyze, "kernel_signatures"));
  EXPECT_FALSE(uses(*analyze, "description_1"));
  EXPECT_FALSE(uses(*analyze, "description_2"));
  const Template* generate = v2->stage("generate");
  EXPECT_TRUE(uses(*generate, "analysis"));
  EXPECT_TRUE(uses(*generate, "code"));
  EXPECT_FALSE(uses(*generate, "description_1"));
  EXPECT_NE(generate->text.find("binding contract"), std::string::npos);
  const Template* v1 = (*lib->pipeline("v1"))->stage("generate");
  for (const char* p : {"code", "description_1", "description_2", "kernel_signatures"})
    EXPECT_TRUE(uses(*v1, p)) << p;
  for (const Template* t : {v1, generate}) {
    std::string text = flat(t->text);
    for (const char* rule :
         {"single source of truth", "plain PyTorch", "size 1", "not a multiple of the block size",
          "empty inputs", "special values", "never `atol=0`", "kernel_name[grid](...)",
          "an assertion on the values is mandatory"})
      EXPECT_NE(text.find(rule), std::string::npos) << t->path << ": " << rule;
    EXPECT_EQ(t->schema["required"], (nlohmann::json{"kernel_wrapper", "unitest_code"}));
  }
}

class PromptDir : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::copy(shipped(), dir_.path() / "prompts", fs::copy_options::recursive);
  }
  fs::path p(const std::string& rel) { return dir_.path() / "prompts" / rel; }
  test::TempDir dir_;
};

TEST_F(PromptDir, AnUnknownPlaceholderIsAnErrorWithFileAndLine) {
  test::write_text(p("v2/analyze.md"), "line one\nline two {{codez}}\n");
  auto lib = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("v2/analyze.md:2: unknown placeholder {{codez}}"),
            std::string::npos)
      << lib.error().message;
}

TEST_F(PromptDir, AnalysisIsOnlyAvailableAfterTheAnalyzeStage) {
  test::write_text(p("v1/generate.md"), "{{code}} {{analysis}}\n");
  auto lib = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("v1/generate.md:1: unknown placeholder {{analysis}}"),
            std::string::npos)
      << lib.error().message;
}

// pipeline.yaml: the stages and their kinds; every mistake names the file and, where it has
// one, the line.
TEST_F(PromptDir, ABadPipelineSpecIsAnErrorNamingFileAndLine) {
  auto error_of = [&](const std::string& spec) {
    test::write_text(p("v2/pipeline.yaml"), spec);
    auto lib = PromptLibrary::load(dir_.path() / "prompts");
    return lib.ok() ? std::string() : lib.error().message;
  };
  const std::string file = p("v2/pipeline.yaml").string();
  EXPECT_EQ(error_of("stages:\n  - {name: analyze, kind: analysis}\n"
                     "  - {name: generate, kind: coder}\n"),
            file + ":3: 'coder' is not a stage kind (analysis, code, repair)");
  EXPECT_EQ(error_of("stages:\n  - {name: generate, kind: code}\n"
                     "  - {name: analyze, kind: analysis}\n"),
            file +
                ":3: analysis stage 'analyze' comes after the code stage (analysis stages "
                "come first)");
  EXPECT_EQ(error_of("stages:\n  - {name: analyze, kind: analysis}\n"),
            file + ": no stage of kind code");
  EXPECT_EQ(error_of("stages:\n  - {name: analyze, kind: analysis}\n"
                     "  - {name: generate, kind: code}\n  - {name: fix, kind: repair}\n"),
            file +
                ":4: the repair stage is named 'repair', not 'fix' (the verifier sends jobs "
                "back to it by that name)");
  EXPECT_EQ(
      error_of("stages:\n  - {name: generate, kind: code}\n  - {name: generate, kind: code}\n"),
      file + ":3: stage 'generate' is listed twice");
  EXPECT_EQ(
      error_of("stages:\n  - {name: verify, kind: analysis}\n  - {name: generate, kind: code}\n"),
      file +
          ":2: 'verify' is not a stage name (letters, digits and _; not retry, evidence, "
          "verify or done)");
  EXPECT_EQ(error_of("stage:\n  - {name: generate, kind: code}\n"),
            file + ": expected stages: a list of {name: STAGE, kind: analysis, code, repair}");
  // A template the spec does not name is not silently ignored.
  std::string no_analyze =
      error_of("stages:\n  - {name: generate, kind: code}\n  - {name: repair, kind: repair}\n");
  EXPECT_NE(no_analyze.find("v2/analyze.md: not a stage of " + file), std::string::npos)
      << no_analyze;
  fs::remove(p("v2/pipeline.yaml"));
  auto missing = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find(file + ": cannot be read"), std::string::npos)
      << missing.error().message;
}

TEST_F(PromptDir, AMissingSchemaIsAnError) {
  fs::remove(p("v2/generate.schema.json"));
  auto lib = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.error().message.find("generate.schema.json cannot be read"), std::string::npos)
      << lib.error().message;
}

TEST_F(PromptDir, AChangedTemplateOrSchemaIsNamedInTheMismatch) {
  auto before = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_TRUE(before.ok());
  auto recorded = (*before->pipeline("v2"))->identities();
  test::write_text(p("v2/analyze.md"), test::read_text(p("v2/analyze.md")) + "\nBe brief.\n");
  auto after = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_TRUE(after.ok());
  std::string why = (*after->pipeline("v2"))->mismatch(recorded);
  EXPECT_NE(why.find("prompts/v2/analyze.md changed since the run was created"), std::string::npos)
      << why;
  // v1 shares only retry.md with v2: unaffected.
  auto v1_recorded = (*before->pipeline("v1"))->identities();
  EXPECT_EQ((*after->pipeline("v1"))->mismatch(v1_recorded), "");
  test::write_text(p("v1/generate.schema.json"), R"({"type": "object"})");
  auto schema_changed = PromptLibrary::load(dir_.path() / "prompts");
  ASSERT_TRUE(schema_changed.ok());
  EXPECT_NE((*schema_changed->pipeline("v1"))->mismatch(v1_recorded).find("generate.schema.json"),
            std::string::npos);
}

TEST(Render, FillsPlaceholdersVerbatimAndOnlyOnce) {
  auto r = render("A {{code}} B {{ key }} C {{code}} {not} {{ {{",
                  {{"code", "x {{key}} y"}, {"key", "K"}}, "t.md");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "A x {{key}} y B K C x {{key}} y {not} {{ {{");
  auto missing = render("one\n{{code}}\n{{analysis}}", {{"code", ""}}, "t.md");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "t.md:3: no value for {{analysis}}");
  EXPECT_EQ(placeholders_of("{{a}} {{b}} {{a}}"), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace kforge::pipeline
