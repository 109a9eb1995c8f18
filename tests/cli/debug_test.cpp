// kforge debug on report's fixture database (tests/report/fixture.hpp): exit codes (0
// success, 1 failure, 2 bad usage) and messages.

#include <gtest/gtest.h>

#include "report_cli_fixture.hpp"

namespace kforge::test {
namespace {

TEST_F(ReportCli, Debug) {
  auto out = fx.dir() / "dbg";
  auto r = kforge({"debug", "v1", "copy_transpose.py", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, (out / "copy_transpose.py").string() + "\n");
  EXPECT_TRUE(std::filesystem::exists(out / "copy_transpose.py" / "run.sh"));
  r = kforge({"debug", "v2", "--failed", "--out", out.string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6);
  EXPECT_EQ(kforge({"debug", "v1", "--out", out.string()}).exit_code, 2);  // neither
  EXPECT_EQ(kforge({"debug", "v1", "softmax.py", "--failed", "--out", out.string()}).exit_code, 2);
  r = kforge({"debug", "v1", "missing.py", "--out", out.string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(has(r.err, "no sample with key 'missing.py'")) << r.err;
}

}  // namespace
}  // namespace kforge::test
