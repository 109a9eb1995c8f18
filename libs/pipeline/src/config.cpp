#include "kforge/pipeline/config.hpp"

#include <cctype>

namespace kforge::pipeline {

namespace {
// "a.b" or longer: identifiers joined by dots, at least two of them.
bool dotted_name(const std::string& s) {
  bool start = true;
  int parts = 1;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '.') {
      if (start) return false;
      start = true;
      ++parts;
    } else if (std::isalpha(u) != 0 || c == '_' || (!start && std::isdigit(u) != 0)) {
      start = false;
    } else {
      return false;
    }
  }
  return !start && parts >= 2;
}
}  // namespace

void read_config(ConfigNode n, PipelineConfig& out) {
  n.get("prompts_dir", out.prompts_dir);
  n.get("max_in_flight", out.max_in_flight);
  n.get("lease_ms", out.lease_ms);
  n.get("max_attempts", out.max_attempts);
  n.get("max_transient_failures", out.max_transient_failures);
  n.get("retry_backoff_ms", out.retry_backoff_ms);
  n.get("retry_backoff_max_ms", out.retry_backoff_max_ms);
  n.get("failure_streak_pause", out.failure_streak_pause);
  n.get("verify_backlog", out.verify_backlog);
  n.get("idle_poll_ms", out.idle_poll_ms);
  n.get("structured_output", out.structured_output);
  n.get("repair_rounds", out.repair_rounds);
  n.get("jit_decorators", out.jit_decorators);
  if (out.max_in_flight < 1) n.invalid("max_in_flight", "must be >= 1");
  if (out.lease_ms < 1000) n.invalid("lease_ms", "must be >= 1000");
  if (out.max_attempts < 1) n.invalid("max_attempts", "must be >= 1");
  if (out.max_transient_failures < 1) n.invalid("max_transient_failures", "must be >= 1");
  if (out.retry_backoff_ms < 0) n.invalid("retry_backoff_ms", "must be >= 0");
  if (out.retry_backoff_max_ms < out.retry_backoff_ms)
    n.invalid("retry_backoff_max_ms", "must be >= retry_backoff_ms");
  if (out.failure_streak_pause < 0) n.invalid("failure_streak_pause", "must be >= 0");
  if (out.verify_backlog < 0) n.invalid("verify_backlog", "must be >= 0");
  if (out.idle_poll_ms < 10) n.invalid("idle_poll_ms", "must be >= 10");
  if (out.repair_rounds < 0 || out.repair_rounds > 10)
    n.invalid("repair_rounds", "must be between 0 and 10");
  for (const auto& d : out.jit_decorators)
    if (!dotted_name(d))
      n.invalid("jit_decorators",
                "'" + d + "' is not a dotted name with a package, like triton_dist.jit");
}

namespace {
bool loopback_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host == "[::1]" || host.rfind("127.", 0) == 0;
}
}  // namespace

void read_config(ConfigNode n, DaemonConfig& out) {
  n.get("owner", out.owner);
  n.get("http_listen", out.http_listen);
  n.get("shutdown_grace_ms", out.shutdown_grace_ms);
  n.get("status_interval_ms", out.status_interval_ms);
  n.get("verify", out.verify);
  if (!out.http_listen.empty()) {
    auto colon = out.http_listen.rfind(':');
    std::string host = colon == std::string::npos ? "" : out.http_listen.substr(0, colon);
    std::string port = colon == std::string::npos ? "" : out.http_listen.substr(colon + 1);
    bool port_ok = !port.empty() && port.size() <= 5 &&
                   port.find_first_not_of("0123456789") == std::string::npos &&
                   std::stoi(port) <= 65535;
    if (!port_ok)
      n.invalid("http_listen", "'" + out.http_listen + "' is not HOST:PORT");
    else if (!loopback_host(host))
      n.invalid("http_listen", "'" + host +
                                   "' is not a loopback address (127.0.0.1, ::1 or localhost): "
                                   "/metrics is not meant for the network");
  }
  if (out.shutdown_grace_ms < 0) n.invalid("shutdown_grace_ms", "must be >= 0");
  if (out.status_interval_ms < 100) n.invalid("status_interval_ms", "must be >= 100");
}

}  // namespace kforge::pipeline
