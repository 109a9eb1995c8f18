// The test server itself: the binary as a subprocess, script checking, templates, per-request
// rules and the control endpoints.

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kforge/core/env.hpp"
#include "llm_fixture.hpp"

namespace kforge::llm::test {
namespace {

using kforge::test::binary;
using kforge::test::read_text;
using kforge::test::write_text;

TEST_F(LlmTest, BinaryServesOnAnAnnouncedPortAndStopsOnSigterm) {
  auto script = dir / "script.yaml";
  write_text(script, "defaults:\n  reply_json: {from: binary}\n");
  auto port_file = dir / "port";
  kforge::SpawnOptions so;
  so.argv = {binary("apps/kforge-fake-llm/kforge-fake-llm").string(),
             "--port",
             "0",
             "--script",
             script.string(),
             "--port-file",
             port_file.string()};
  so.fds = {{2, 2}};
  auto spawned = kforge::default_env().spawn(so);
  ASSERT_TRUE(spawned.ok()) << spawned.error().message;
  const pid_t pid = *spawned;
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(port_file); }));
  int port = std::stoi(read_text(port_file));
  cfg = test_config("http://127.0.0.1:" + std::to_string(port) + "/v1");
  {
    auto c = make_client(nullptr, false);
    auto res = c->call(request("hello"));
    ASSERT_TRUE(res.ok()) << res.error().message;
    EXPECT_EQ(res->parsed["from"], "binary");
  }
  ASSERT_TRUE(kforge::default_env().kill(pid, SIGTERM));
  auto end = kforge::default_env().wait(pid, kforge::WaitMode::block);
  ASSERT_TRUE(end);
  const int status = end->status;
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(FakeLlmScript, ErrorsNameTheRuleAndKey) {
  kforge::test::TempDir dir;
  auto bad = dir / "bad.yaml";
  write_text(bad, "rules:\n  - status: 200\n  - fault: explode\n");
  auto r = kforge::test::run_process({binary("apps/kforge-fake-llm/kforge-fake-llm").string(),
                                      "--script", bad.string(), "--check"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("rules[1].fault"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("bad.yaml"), std::string::npos) << r.err;

  EXPECT_FALSE(fake_llm::check_script({{"rules", {{{"stauts", 500}}}}}).ok());
  auto unknown = fake_llm::check_script({{"rules", {{{"stauts", 500}}}}});
  EXPECT_NE(unknown.error().message.find("rules[0].stauts: unknown key"), std::string::npos);
  EXPECT_FALSE(fake_llm::check_script({{"rules", {{{"match", {{"regex", "(["}}}}}}}).ok());
  EXPECT_TRUE(fake_llm::check_script(json::object()).ok());
  auto fault = fake_llm::check_script({{"batch", {{"fault", "boom"}}}});
  ASSERT_FALSE(fault.ok());
  EXPECT_NE(fault.error().message.find("batch.fault: 'boom' is not one of"), std::string::npos)
      << fault.error().message;
  auto step = fake_llm::check_script({{"batch", {{"hold_after", "nap"}}}});
  ASSERT_FALSE(step.ok());
  EXPECT_NE(step.error().message.find("batch.hold_after"), std::string::npos);
  auto key = fake_llm::check_script({{"batch", {{"latency", 5}}}});
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("batch.latency: unknown key"), std::string::npos);
  EXPECT_TRUE(fake_llm::check_script({{"batch", {{"fault", "expired"}, {"times", 1}}}}).ok());

  auto good = dir / "good.yaml";
  write_text(good, "rules:\n  - {match: {contains: analyze}, reply_json: {a: 1}, wrap: fenced}\n");
  auto ok = kforge::test::run_process({binary("apps/kforge-fake-llm/kforge-fake-llm").string(),
                                       "--script", good.string(), "--check"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

TEST_F(LlmTest, TemplatesFillAnswersFromTheRequest) {
  start_server(
      {{"rules",
        json::array({{{"match", {{"contains", "stage: analyze"}}},
                      {"reply_json",
                       {{"analysis",
                         {{"core_function", "copies {{re:def (\\w+)\\(}}"},
                          {"key_parameters", json::array({"BLOCK"})}}}}},
                      {"wrap", "prose"}},
                     {{"match", {{"contains", "stage: generate"}}},
                      {"reply_json",
                       {{"kernel_wrapper", "def run(x):\n    {{re:def (\\w+)\\(}}[(1,)](x)"},
                        {"unitest_code", "# for request {{n}} of {{model}}"}}},
                      {"wrap", "fenced"}}})}});
  auto c = make_client(nullptr, false);
  std::string kernel = "@triton.jit\ndef copy_kernel(X, Z, BLOCK: tl.constexpr):\n    pass\n";
  auto a = c->call(request("stage: analyze\n" + kernel));
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->parsed["analysis"]["core_function"], "copies copy_kernel");
  auto g = c->call(request("stage: generate\n" + kernel));
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->parsed["kernel_wrapper"], "def run(x):\n    copy_kernel[(1,)](x)");
  EXPECT_EQ(g->parsed["unitest_code"], "# for request 2 of fake-model");
  EXPECT_EQ(server->stats()["by_rule"]["rules[1]"], 1);
}

TEST_F(LlmTest, PerRequestRulesFailEachDistinctRequestOnce) {
  start_server({{"rules", json::array({{{"name", "first-try-fails"},
                                        {"per_request", true},
                                        {"times", 1},
                                        {"status", 500}}})}});
  auto c = make_client(nullptr, false);
  for (int i = 0; i < 5; ++i) {
    auto res = c->call(request("r" + std::to_string(i)));
    ASSERT_TRUE(res.ok());
    EXPECT_EQ(res->attempts, 2);
  }
  json s = server->stats();
  EXPECT_EQ(s["requests"], 10);
  EXPECT_EQ(s["by_rule"]["first-try-fails"], 5);
  EXPECT_EQ(s["max_per_hash"], 2);
  EXPECT_EQ(s["answered"], 5);
}

TEST_F(LlmTest, ControlEndpoints) {
  start_server(json::object());
  httplib::Client http("127.0.0.1", server->port());
  auto put = http.Put("/_script", R"({"defaults": {"reply": "{\"via\": \"control\"}"}})",
                      "application/json");
  ASSERT_TRUE(put);
  EXPECT_EQ(put->status, 200);
  auto bad = http.Put("/_script", R"({"rules": [{"fault": "nope"}]})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("rules[0].fault"), std::string::npos);
  auto c = make_client(nullptr, false);
  auto res = c->call(request("q"));
  ASSERT_TRUE(res.ok());
  EXPECT_EQ(res->parsed["via"], "control");
  auto stats = http.Get("/_stats");
  ASSERT_TRUE(stats);
  EXPECT_EQ(json::parse(stats->body)["requests"], 1);
  ASSERT_TRUE(http.Post("/_reset"));
  EXPECT_EQ(json::parse(http.Get("/_stats")->body)["requests"], 0);
  EXPECT_EQ(http.Get("/_health")->body, "ok\n");
}

TEST_F(LlmTest, MalformedRequestsAreRejectedLikeAProviderWould) {
  start_server(json::object());
  httplib::Client http("127.0.0.1", server->port());
  auto r = http.Post("/v1/chat/completions", "{not json", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  auto empty =
      http.Post("/v1/chat/completions", R"({"model": "m", "messages": []})", "application/json");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->status, 400);
  EXPECT_NE(empty->body.find("messages"), std::string::npos);
}

}  // namespace
}  // namespace kforge::llm::test
