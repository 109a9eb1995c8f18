#pragma once
// The viewer tests' setup: the report fixture plus fixtures/viewer.sql (a hostile sample and a
// repaired one), a configuration file, and `kforge serve` running as a real child process on a
// free loopback port (or the address given), stopped when the object dies.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "fixture.hpp"

namespace kforge::test {

class ViewerFixture {
 public:
  // `config_extra` is appended to the configuration file (e.g. a report: section).
  explicit ViewerFixture(const std::string& config_extra = "");
  ReportFixture& fx() { return fx_; }
  const std::filesystem::path& config() const { return config_; }

 private:
  ReportFixture fx_;
  std::filesystem::path config_;
};

class ServeProcess {
 public:
  // Starts `kforge --config CONFIG serve --listen LISTEN` with extra environment entries and
  // waits (up to 30 s) for the line naming its address. Throws when it exits first.
  ServeProcess(const std::filesystem::path& config, const std::string& listen = "127.0.0.1:0",
               const std::vector<std::string>& env = {});
  ~ServeProcess();
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;
  int port() const { return port_; }
  std::string url(const std::string& path) const;
  // Stops the process (SIGTERM) and returns all it wrote to stdout and stderr.
  std::string stop();

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int port_ = 0;
  std::string output_;
};

}  // namespace kforge::test
