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
  n.get_at_least("max_in_flight", out.max_in_flight, 1);
  n.get_at_least("lease_ms", out.lease_ms, 1000);
  n.get_at_least("max_attempts", out.max_attempts, 1);
  n.get_at_least("max_transient_failures", out.max_transient_failures, 1);
  n.get_at_least("retry_backoff_ms", out.retry_backoff_ms, 0);
  n.get("retry_backoff_max_ms", out.retry_backoff_max_ms);
  n.get_at_least("failure_streak_pause", out.failure_streak_pause, 0);
  n.get_at_least("verify_backlog", out.verify_backlog, 0);
  n.get_at_least("idle_poll_ms", out.idle_poll_ms, 10);
  n.get("structured_output", out.structured_output);
  n.get_between("repair_rounds", out.repair_rounds, 0, 10);
  n.get("jit_decorators", out.jit_decorators);
  if (out.retry_backoff_max_ms < out.retry_backoff_ms)
    n.invalid("retry_backoff_max_ms", "must be >= retry_backoff_ms");
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
  n.get_at_least("shutdown_grace_ms", out.shutdown_grace_ms, 0);
  n.get_at_least("status_interval_ms", out.status_interval_ms, 100);
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
}

}  // namespace kforge::pipeline
