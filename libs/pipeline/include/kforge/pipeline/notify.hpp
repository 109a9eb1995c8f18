#pragma once
// The systemd notification protocol (sd_notify), written by hand: datagrams of "KEY=VALUE"
// lines to the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or '@' for the abstract
// namespace). Without NOTIFY_SOCKET every call is a no-op, so the daemon runs the same way
// outside systemd.
//
// Threads: notify() may be called from any thread.

#include <chrono>
#include <mutex>
#include <string>
#include <string_view>

#include "kforge/core/config.hpp"
#include "kforge/core/result.hpp"

namespace kforge::pipeline {

class Notifier {
 public:
  // Reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID from env.
  explicit Notifier(const EnvLookup& env = process_env());
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  bool enabled() const { return !socket_.empty(); }
  // Sends one datagram, e.g. "READY=1\nSTATUS=working", without blocking. Errors: kind "io",
  // naming the socket; transient when the receiver's queue is full (the message is dropped).
  Status notify(std::string_view state);
  // How often to send WATCHDOG=1: half of WATCHDOG_USEC, when the watchdog is on and meant for
  // this process (WATCHDOG_PID absent or equal to our pid); zero otherwise.
  std::chrono::microseconds watchdog_interval() const { return watchdog_; }

 private:
  std::string socket_;
  std::chrono::microseconds watchdog_{0};
  std::mutex mu_;
  int fd_ = -1;
};

}  // namespace kforge::pipeline
