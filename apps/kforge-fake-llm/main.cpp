// kforge-fake-llm: an OpenAI-compatible test server that misbehaves on request (see
// docs/FAKE_LLM.md). Prints "listening on http://HOST:PORT/v1" once it accepts connections and
// serves until SIGTERM or SIGINT.

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>

#include "kforge/core/fs.hpp"
#include "kforge/fake_llm/server.hpp"

int main(int argc, char** argv) {
  CLI::App app{"kforge-fake-llm: a scriptable OpenAI-compatible test server.", "kforge-fake-llm"};
  std::string script_path;
  std::string port_file;
  std::string stats_file;
  kforge::fake_llm::ServerOptions opts;
  app.add_option("--host", opts.host, "Address to listen on")->capture_default_str();
  app.add_option("-p,--port", opts.port, "Port (0: any free port, printed)")->capture_default_str();
  app.add_option("-s,--script", script_path, "Script file (YAML or JSON); none: default answers");
  app.add_option("--port-file", port_file, "Write the port number to this file once listening");
  app.add_option("--threads", opts.threads, "Request threads")->capture_default_str();
  app.add_option("--stats-file", stats_file,
                 "Write the counters (GET /_stats) to this file, as JSON, when stopped");
  app.add_flag_callback(
      "--check", [] {}, "Only validate the script (with --script) and exit");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  nlohmann::json script = nlohmann::json::object();
  if (!script_path.empty()) {
    auto s = kforge::fake_llm::load_script(script_path);
    if (!s.ok()) {
      std::fprintf(stderr, "kforge-fake-llm: error: %s\n", s.error().message.c_str());
      return 1;
    }
    script = std::move(s).value();
  }
  if (app.count("--check") > 0) {
    std::printf("%s: ok\n", script_path.c_str());
    return 0;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the server's threads start
  auto server = kforge::fake_llm::FakeLlmServer::start(script, opts);
  if (!server.ok()) {
    std::fprintf(stderr, "kforge-fake-llm: error: %s\n", server.error().message.c_str());
    return 1;
  }
  if (!port_file.empty()) {
    auto w = kforge::write_file_atomic(port_file, std::to_string((*server)->port()) + "\n");
    if (!w.ok()) {
      std::fprintf(stderr, "kforge-fake-llm: error: %s\n", w.error().message.c_str());
      return 1;
    }
  }
  std::printf("listening on %s\n", (*server)->base_url().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->stop();
  if (!stats_file.empty()) {
    auto w = kforge::write_file_atomic(stats_file, (*server)->stats().dump() + "\n");
    if (!w.ok()) {
      std::fprintf(stderr, "kforge-fake-llm: error: %s\n", w.error().message.c_str());
      return 1;
    }
  }
  return 0;
}
