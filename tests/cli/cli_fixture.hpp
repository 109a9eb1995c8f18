#pragma once
// The kforge binary as a user runs it, on a temporary database and an empty configuration: the
// fixture of tests/cli's import, status and program-wide tests.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testutil.hpp"

namespace kforge::test {

class Cli : public ::testing::Test {
 protected:
  ProcResult kforge(std::vector<std::string> args, std::vector<std::string> env = {}) {
    args.insert(args.begin(), binary("apps/kforge/kforge").string());
    env.push_back("KFORGE_DB=" + (dir_ / "k.db").string());
    env.push_back("KFORGE_CONFIG=" + (dir_ / "none.yaml").string());
    if (!std::filesystem::exists(dir_ / "none.yaml")) write_text(dir_ / "none.yaml", "{}\n");
    return run_process(args, env);
  }
  std::int64_t samples() {
    auto r = kforge({"status", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["samples"].get<std::int64_t>();
  }
  TempDir dir_;
};

// The --map of the tests' TritonBench-G records.
inline constexpr const char* kMap =
    "code=output,description_1=simp_instru,description_2=comp_instru";

}  // namespace kforge::test
