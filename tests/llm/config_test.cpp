#include <gtest/gtest.h>

#include "kforge/app/config.hpp"
#include "kforge/llm/config.hpp"
#include "testutil.hpp"

namespace kforge::llm {
namespace {

Result<LlmConfig> read(
    const std::string& yaml,
    EnvLookup env = [](const std::string&) { return std::optional<std::string>(); }) {
  KF_TRY(auto reader, ConfigReader::load_string(yaml, "test.yaml", env));
  LlmConfig c;
  read_config(reader->root().child("llm"), c);
  KF_CHECK(reader->finish());
  return c;
}

TEST(LlmConfig, DefaultsWhenAbsent) {
  auto c = read("{}");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->base_url, "https://api.openai.com/v1");
  EXPECT_EQ(c->api_key_env, "OPENAI_API_KEY");
  EXPECT_EQ(c->temperature, 0.2);
  EXPECT_EQ(c->max_tokens, 4096);
  EXPECT_FALSE(c->top_p);
  EXPECT_EQ(c->response_format, ResponseFormat::json_object);
  EXPECT_EQ(c->retry_after_cap_ms, 900'000);
}

TEST(LlmConfig, ReadsEveryKindOfKey) {
  auto c = read(R"(
llm:
  provider: azure
  base_url: https://res.openai.azure.com
  model: gpt-4o
  azure_deployment: prod
  api_key_env: AZURE_KEY
  extra_headers: {X-Team: kforge}
  temperature: ""
  top_p: "0.9"
  seed: 7
  response_format: json_schema
  max_in_flight: 64
  requests_per_minute: 500
  tokens_per_minute: 200000
  retry_after_cap_ms: 120000
  prices:
    gpt-4o: {prompt_per_mtok: 2.5, completion_per_mtok: 10}
)");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->provider, Provider::azure);
  EXPECT_EQ(c->azure_deployment, "prod");
  EXPECT_EQ(c->extra_headers.at("X-Team"), "kforge");
  EXPECT_FALSE(c->temperature);
  EXPECT_EQ(c->top_p, 0.9);
  EXPECT_EQ(c->seed, 7);
  EXPECT_EQ(c->response_format, ResponseFormat::json_schema);
  EXPECT_EQ(c->max_in_flight, 64);
  EXPECT_EQ(c->requests_per_minute, 500);
  EXPECT_EQ(c->prices.at("gpt-4o").completion_per_mtok, 10);
}

TEST(LlmConfig, BadValuesNameFileLineAndKey) {
  auto c = read("llm:\n  max_in_flight: 0\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("test.yaml:2"), std::string::npos) << c.error().message;
  EXPECT_NE(c.error().message.find("llm.max_in_flight"), std::string::npos) << c.error().message;

  auto p = read("llm:\n  provider: anthropic\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("not one of openai, azure"), std::string::npos);

  auto t = read("llm:\n  temperature: warm\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("llm.temperature"), std::string::npos) << t.error().message;

  auto pr = read("llm:\n  prices:\n    m: {prompt: 1}\n");
  ASSERT_FALSE(pr.ok());
  EXPECT_NE(pr.error().message.find("model 'm'"), std::string::npos) << pr.error().message;

  auto u = read("llm:\n  max_inflight: 3\n");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.error().message.find("llm.max_inflight"), std::string::npos) << u.error().message;
}

TEST(LlmConfig, BatchModeKeys) {
  auto c = read(
      "llm:\n  mode: interactive\n  modes: {gpt-4o-mini: batch}\n  batch_fallback: interactive\n"
      "  batch: {completion_window: 2h, accepted_windows: [24h, 2h], deadline: 3h,\n"
      "          max_lines: 10, max_bytes: 4096, collect_ms: 5, poll_ms: 7, max_attempts: 2,\n"
      "          keep_files: true, lines_in_memory: 50}\n"
      "  prices:\n    gpt-4o-mini: {prompt_per_mtok: 1, completion_per_mtok: 2, "
      "batch_multiplier: 0.4}\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->mode_of("gpt-4o-mini"), Mode::batch);
  EXPECT_EQ(c->mode_of("other"), Mode::interactive);
  EXPECT_EQ(c->batch_fallback, BatchFallback::interactive);
  EXPECT_EQ(c->batch.completion_window, "2h");
  EXPECT_EQ(c->batch.deadline_ms, 3 * 3'600'000);
  EXPECT_TRUE(c->batch.keep_files);
  EXPECT_EQ(c->batch.lines_in_memory, 50);
  EXPECT_EQ(c->batch.max_lines, 10);
  EXPECT_EQ(c->batch.max_bytes, 4096);
  EXPECT_EQ(c->batch.collect_ms, 5);
  EXPECT_EQ(c->batch.poll_ms, 7);
  EXPECT_EQ(c->batch.max_attempts, 2);
  EXPECT_DOUBLE_EQ(c->prices["gpt-4o-mini"].batch_multiplier, 0.4);
  auto d = read("{}");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->batch.max_lines, 50'000);
  EXPECT_EQ(d->batch.max_bytes, 200'000'000);
  EXPECT_EQ(d->batch.completion_window, "24h");
  EXPECT_EQ(d->batch.accepted_windows, std::vector<std::string>{"24h"});
  EXPECT_EQ(d->batch.deadline_ms, 24 * 3'600'000);
  EXPECT_FALSE(d->batch.keep_files);

  auto m = read("llm:\n  mode: bulk\n");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("test.yaml:2"), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("not one of interactive, batch"), std::string::npos);
  auto w = read("llm:\n  batch:\n    deadline: a day\n");
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("test.yaml:3"), std::string::npos) << w.error().message;
  EXPECT_NE(w.error().message.find("llm.batch.deadline"), std::string::npos) << w.error().message;
  // Issue 43, 3: only a window the provider accepts (OpenAI: 24h), naming file and line.
  auto h = read("llm:\n  batch:\n    completion_window: 1h\n");
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("test.yaml:3"), std::string::npos) << h.error().message;
  EXPECT_NE(h.error().message.find("llm.batch.completion_window"), std::string::npos)
      << h.error().message;
  EXPECT_NE(h.error().message.find("'1h' is not a window the provider accepts (24h"),
            std::string::npos)
      << h.error().message;
  auto other = read("llm:\n  batch:\n    completion_window: 1h\n    accepted_windows: [1h]\n");
  ASSERT_TRUE(other.ok()) << other.error().message;
  EXPECT_EQ(other->batch.deadline_ms, 24 * 3'600'000) << "the deadline is a setting of its own";
  auto f = read("llm:\n  batch_fallback: never\n");
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("next_batch, interactive"), std::string::npos);
}

TEST(LlmConfig, EnvironmentOverrides) {
  auto c = read("llm:\n  model: a\n", [](const std::string& name) -> std::optional<std::string> {
    if (name == "KFORGE_LLM_MODEL") return "b";
    if (name == "KFORGE_LLM_REQUESTS_PER_MINUTE") return "30";
    return std::nullopt;
  });
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->model, "b");
  EXPECT_EQ(c->requests_per_minute, 30);
}

}  // namespace
}  // namespace kforge::llm

namespace kforge::llm {
namespace {

// config/kforge.yaml documents every key with its default: reading it must give the defaults.
TEST(LlmConfig, ShippedConfigFileShowsTheDefaults) {
  auto c = app::load_config((kforge::test::source_dir() / "config" / "kforge.yaml").string(),
                            [](const std::string&) { return std::optional<std::string>(); });
  ASSERT_TRUE(c.ok()) << c.error().message;
  const LlmConfig& got = c->llm;
  const LlmConfig want;
  EXPECT_EQ(got.provider, want.provider);
  EXPECT_EQ(got.base_url, want.base_url);
  EXPECT_EQ(got.model, want.model);
  EXPECT_EQ(got.azure_deployment, want.azure_deployment);
  EXPECT_EQ(got.azure_api_version, want.azure_api_version);
  EXPECT_EQ(got.api_key_env, want.api_key_env);
  EXPECT_EQ(got.extra_headers, want.extra_headers);
  EXPECT_EQ(got.temperature, want.temperature);
  EXPECT_EQ(got.top_p, want.top_p);
  EXPECT_EQ(got.max_tokens, want.max_tokens);
  EXPECT_EQ(got.seed, want.seed);
  EXPECT_EQ(got.response_format, want.response_format);
  EXPECT_EQ(got.max_in_flight, want.max_in_flight);
  EXPECT_EQ(got.min_in_flight, want.min_in_flight);
  EXPECT_EQ(got.initial_in_flight, want.initial_in_flight);
  EXPECT_EQ(got.pace, want.pace);
  EXPECT_EQ(got.pace_decrease, want.pace_decrease);
  EXPECT_EQ(got.retry_after_pause_ms, want.retry_after_pause_ms);
  EXPECT_EQ(got.max_prompt_tokens, want.max_prompt_tokens);
  EXPECT_EQ(got.requests_per_minute, want.requests_per_minute);
  EXPECT_EQ(got.tokens_per_minute, want.tokens_per_minute);
  EXPECT_EQ(got.adaptive, want.adaptive);
  EXPECT_EQ(got.latency_factor, want.latency_factor);
  EXPECT_EQ(got.decrease_factor, want.decrease_factor);
  EXPECT_EQ(got.adaptive_cooldown_ms, want.adaptive_cooldown_ms);
  EXPECT_EQ(got.max_attempts, want.max_attempts);
  EXPECT_EQ(got.total_deadline_ms, want.total_deadline_ms);
  EXPECT_EQ(got.backoff_base_ms, want.backoff_base_ms);
  EXPECT_EQ(got.backoff_max_ms, want.backoff_max_ms);
  EXPECT_EQ(got.retry_after_cap_ms, want.retry_after_cap_ms);
  EXPECT_EQ(got.connect_timeout_ms, want.connect_timeout_ms);
  EXPECT_EQ(got.request_timeout_ms, want.request_timeout_ms);
  EXPECT_EQ(got.replay, want.replay);
  EXPECT_TRUE(got.prices.empty());
}

}  // namespace
}  // namespace kforge::llm
