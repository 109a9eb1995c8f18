#include "viewer_util.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <stdexcept>

#include "kforge/core/env.hpp"
#include "kforge/core/fs.hpp"

namespace kforge::test {

ViewerFixture::ViewerFixture(const std::string& config_extra) {
  auto sql = read_file(fixture_file("viewer.sql"));
  if (!sql.ok()) throw std::runtime_error(sql.error().message);
  auto st = fx_.db().exec(*sql);
  if (!st.ok()) throw std::runtime_error("viewer.sql: " + st.error().message);
  config_ = fx_.dir() / "kforge.yaml";
  write_text(config_, "store:\n  path: " + fx_.db_path().string() + "\n" + config_extra);
}

ServeProcess::ServeProcess(const std::filesystem::path& config, const std::string& listen,
                           const std::vector<std::string>& env) {
  int out_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
  std::vector<std::string> argv = {binary("apps/kforge/kforge").string(),
                                   "--config",
                                   config.string(),
                                   "serve",
                                   "--listen",
                                   listen};
  // Started through the one door to processes (core's Env): stdin /dev/null, stdout and stderr
  // into the pipe.
  SpawnOptions o;
  o.argv = argv;
  o.env = environment_with(env);
  o.fds = {{out_pipe[1], 1}, {out_pipe[1], 2}};
  o.new_session = false;
  auto pid = default_env().spawn(o);
  close(out_pipe[1]);
  if (!pid.ok()) {
    close(out_pipe[0]);
    throw std::runtime_error("kforge serve: " + pid.error().message);
  }
  pid_ = *pid;
  out_fd_ = out_pipe[0];
  static const std::regex addr(R"(kforge serve: http://[^ ]*:([0-9]+)/)");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{out_fd_, POLLIN, 0};
    if (poll(&p, 1, 200) <= 0) continue;
    ssize_t got = read(out_fd_, buf, sizeof buf);
    if (got <= 0) break;
    output_.append(buf, static_cast<std::size_t>(got));
    std::smatch m;
    if (std::regex_search(output_, m, addr)) {
      port_ = std::stoi(m[1]);
      return;
    }
  }
  std::string out = stop();
  throw std::runtime_error("kforge serve did not start: " + out);
}

std::string ServeProcess::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::string ServeProcess::stop() {
  if (pid_ > 0) {
    default_env().kill(pid_, SIGTERM);
    default_env().wait(pid_, WaitMode::block);
    pid_ = -1;
  }
  if (out_fd_ >= 0) {
    char buf[4096];
    ssize_t got = 0;
    while ((got = read(out_fd_, buf, sizeof buf)) > 0)
      output_.append(buf, static_cast<std::size_t>(got));
    close(out_fd_);
    out_fd_ = -1;
  }
  return output_;
}

ServeProcess::~ServeProcess() {
  stop();
}

}  // namespace kforge::test
