// The pipeline and daemon configuration sections, and the shipped systemd unit.

#include <gtest/gtest.h>

#include "kforge/app/config.hpp"
#include "testutil.hpp"

namespace kforge::pipeline {
namespace {

EnvLookup no_env() {
  return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

TEST(PipelineConfig, TheShippedFileDocumentsTheDefaults) {
  auto c = app::load_config((test::source_dir() / "config" / "kforge.yaml").string(), no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  PipelineConfig p;
  DaemonConfig d;
  EXPECT_EQ(c->pipeline.prompts_dir, p.prompts_dir);
  EXPECT_EQ(c->pipeline.max_in_flight, p.max_in_flight);
  EXPECT_EQ(c->pipeline.lease_ms, p.lease_ms);
  EXPECT_EQ(c->pipeline.max_attempts, p.max_attempts);
  EXPECT_EQ(c->pipeline.max_transient_failures, p.max_transient_failures);
  EXPECT_EQ(c->pipeline.retry_backoff_ms, p.retry_backoff_ms);
  EXPECT_EQ(c->pipeline.retry_backoff_max_ms, p.retry_backoff_max_ms);
  EXPECT_EQ(c->pipeline.failure_streak_pause, p.failure_streak_pause);
  EXPECT_EQ(c->pipeline.verify_backlog, p.verify_backlog);
  EXPECT_EQ(c->pipeline.idle_poll_ms, p.idle_poll_ms);
  EXPECT_EQ(c->pipeline.structured_output, p.structured_output);
  EXPECT_EQ(c->pipeline.jit_decorators, p.jit_decorators);
  EXPECT_EQ(c->daemon.owner, d.owner);
  EXPECT_EQ(c->daemon.http_listen, d.http_listen);
  EXPECT_EQ(c->daemon.shutdown_grace_ms, d.shutdown_grace_ms);
  EXPECT_EQ(c->daemon.status_interval_ms, d.status_interval_ms);
  score::ScoreConfig sc;
  EXPECT_EQ(c->score.listen, sc.listen);
  EXPECT_EQ(c->score.max_queue, sc.max_queue);
  EXPECT_EQ(c->score.max_items, sc.max_items);
  EXPECT_EQ(c->score.max_requests, sc.max_requests);
  EXPECT_EQ(c->score.share, sc.share);
  EXPECT_EQ(c->score.default_deadline_s, sc.default_deadline_s);
  EXPECT_EQ(c->score.max_deadline_s, sc.max_deadline_s);
  EXPECT_EQ(c->score.default_tag, sc.default_tag);
  EXPECT_EQ(c->score.keep_batches_h, sc.keep_batches_h);
}

TEST(PipelineConfig, BadValuesAreErrorsNamingFileAndLine) {
  test::TempDir dir;
  test::write_text(dir / "k.yaml", "pipeline:\n  max_in_flight: 0\n");
  auto c = app::load_config((dir / "k.yaml").string(), no_env());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("k.yaml:2: pipeline.max_in_flight: must be >= 1"),
            std::string::npos)
      << c.error().message;
  test::write_text(dir / "k.yaml", "daemon:\n  http_listen: 0.0.0.0:9464\n");
  c = app::load_config((dir / "k.yaml").string(), no_env());
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("k.yaml:2: daemon.http_listen: '0.0.0.0' is not a loopback"),
            std::string::npos)
      << c.error().message;
  auto env = [](const std::string& k) -> std::optional<std::string> {
    if (k == "KFORGE_PIPELINE_MAX_IN_FLIGHT") return "7";
    return std::nullopt;
  };
  test::write_text(dir / "k.yaml", "{}\n");
  c = app::load_config((dir / "k.yaml").string(), env);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->pipeline.max_in_flight, 7);
}

TEST(PipelineConfig, JitDecoratorsAreDottedNames) {
  test::TempDir dir;
  test::write_text(dir / "k.yaml", "pipeline:\n  jit_decorators: [triton_dist.jit, a.b.jit]\n");
  auto c = app::load_config((dir / "k.yaml").string(), no_env());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->pipeline.jit_decorators, (std::vector<std::string>{"triton_dist.jit", "a.b.jit"}));
  for (const char* bad : {"jit", "triton_dist.", ".jit", "a..jit", "a.b-c", "a.1b"}) {
    SCOPED_TRACE(bad);
    test::write_text(dir / "k.yaml",
                     std::string("pipeline:\n  jit_decorators: [\"") + bad + "\"]\n");
    c = app::load_config((dir / "k.yaml").string(), no_env());
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message.find("pipeline.jit_decorators: '" + std::string(bad) +
                                     "' is not a dotted name with a package"),
              std::string::npos)
        << c.error().message;
  }
}

TEST(SystemdUnit, HasTheDirectivesAndPassesSystemdAnalyzeVerify) {
  std::string unit = test::read_text(test::source_dir() / "config" / "kforged.service");
  for (const char* line :
       {"Type=notify", "WatchdogSec=", "Restart=on-failure", "StateDirectory=kforge",
        "NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
        "ReadWritePaths=/var/lib/kforge", "DeviceAllow=char-nvidia-frontend rw",
        "DeviceAllow=char-kfd rw", "DeviceAllow=char-drm rw", "ExecReload=/bin/kill -HUP"})
    EXPECT_NE(unit.find(line), std::string::npos) << line;
  EXPECT_EQ(unit.find("\nPrivateDevices=yes"), std::string::npos) << "would hide the GPUs";
  if (!std::filesystem::exists("/usr/bin/systemd-analyze"))
    GTEST_SKIP() << "systemd-analyze is not installed";
  test::TempDir dir;
  std::string local = unit;
  auto at = local.find("/usr/local/bin/kforged");
  ASSERT_NE(at, std::string::npos);
  local.replace(at, std::string("/usr/local/bin/kforged").size(),
                test::binary("apps/kforged/kforged").string());
  test::write_text(dir / "kforged.service", local);
  auto r =
      test::run_process({"/usr/bin/systemd-analyze", "verify", (dir / "kforged.service").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Unknown or misspelt keys are only warnings: any line about the unit is a failure.
  EXPECT_EQ((r.out + r.err).find("kforged.service"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace kforge::pipeline
