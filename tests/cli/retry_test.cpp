// kforge retry on report's fixture database (tests/report/fixture.hpp): exit codes (0
// success, 1 failure, 2 bad usage) and messages.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "report_cli_fixture.hpp"

namespace kforge::test {
namespace {

TEST_F(ReportCli, Retry) {
  auto r = kforge({"retry", "v1", "--verdict", "crashed,timeout", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "(dry run) 2 samples of v1 would be re-queued")) << r.out;
  // A dry run says what it would do, never what "was" done.
  EXPECT_TRUE(has(r.out,
                  "(dry run) run v1 is finished and would become active again; nothing "
                  "was changed"))
      << r.out;
  EXPECT_FALSE(has(r.out, "was finished and is active again")) << r.out;
  EXPECT_EQ(fx.text("run_state", {"v1"}), "finished");
  EXPECT_EQ(fx.text("job_of", {"v1", "llvm_abort.py"}), "done|done|1|");
  r = kforge({"retry", "v1", "--verdict", "crashed,timeout"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "2 samples of v1 re-queued: at verify 2; were crashed 1, timeout 1"))
      << r.out;
  EXPECT_TRUE(has(r.out, "run v1 was finished and is active again")) << r.out;
  EXPECT_EQ(fx.text("job_of", {"v1", "llvm_abort.py"}), "verify_queued|verify|0|crashed");
  r = kforge({"retry", "v2", "--failure", "rejected", "--stage", "generate", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["requeued"], 2);
  EXPECT_EQ(j["by_stage"]["generate"], 2);
  EXPECT_EQ(kforge({"retry", "v1"}).exit_code, 2);
  EXPECT_EQ(kforge({"retry", "v1", "--verdict", "bogus"}).exit_code, 2);
  // --stage takes the run's own stages, as it recorded them, and names them when it refuses.
  r = kforge({"retry", "v1", "--verdict", "crashed", "--stage", "later"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.err, "'later' is not a stage of run 'v1' (generate, or verify)")) << r.err;
  EXPECT_EQ(kforge({"retry", "nope", "--verdict", "crashed"}).exit_code, 1);
}

}  // namespace
}  // namespace kforge::test
