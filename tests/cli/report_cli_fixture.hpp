#pragma once
// The kforge binary on report's fixture database (tests/report/fixture.hpp): the fixture of
// tests/cli's compare, export, debug and retry tests.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace kforge::test {

class ReportCli : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = fx.dir() / "kforge.yaml";
    write_text(config_, "store:\n  path: " + fx.db_path().string() + "\n");
  }
  ProcResult kforge(std::vector<std::string> args) {
    args.insert(args.begin(),
                {binary("apps/kforge/kforge").string(), "--config", config_.string()});
    return run_process(args, {}, 60);
  }
  ReportFixture fx;
  std::filesystem::path config_;
};

inline bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

}  // namespace kforge::test
