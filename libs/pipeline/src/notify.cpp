#include "kforge/pipeline/notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kforge::pipeline {

Notifier::Notifier(const EnvLookup& env) {
  if (auto s = env("NOTIFY_SOCKET"); s && !s->empty()) socket_ = *s;
  auto usec = env("WATCHDOG_USEC");
  if (usec && !usec->empty()) {
    auto pid = env("WATCHDOG_PID");
    bool ours = !pid || pid->empty() || *pid == std::to_string(::getpid());
    char* end = nullptr;
    long long v = std::strtoll(usec->c_str(), &end, 10);
    if (ours && end != nullptr && *end == '\0' && v > 0)
      watchdog_ = std::chrono::microseconds(v / 2);
  }
}

Notifier::~Notifier() {
  if (fd_ >= 0) ::close(fd_);
}

Status Notifier::notify(std::string_view state) {
  if (socket_.empty()) return {};
  std::lock_guard lock(mu_);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof(addr.sun_path) || (socket_[0] != '/' && socket_[0] != '@'))
    return fail("io", "NOTIFY_SOCKET '" + socket_ + "' is not an absolute path or @name");
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  if (socket_[0] == '@') addr.sun_path[0] = '\0';
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_.size());
  if (fd_ < 0) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return fail("io", std::string("NOTIFY_SOCKET: socket: ") + std::strerror(errno));
  }
  // Never block the daemon on its supervisor: a full queue drops the message.
  ssize_t n = ::sendto(fd_, state.data(), state.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                       reinterpret_cast<const sockaddr*>(&addr), len);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
    return fail("io", "NOTIFY_SOCKET " + socket_ + ": the queue is full; message dropped",
                Transient::yes);
  if (n < 0) return fail("io", "NOTIFY_SOCKET " + socket_ + ": sendto: " + std::strerror(errno));
  return {};
}

}  // namespace kforge::pipeline
