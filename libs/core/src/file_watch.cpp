#include "kforge/core/file_watch.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

namespace kforge {

struct FileWatch::Impl {
  int inotify = -1;
  int stop = -1;  // an eventfd: written once to end the thread
  std::vector<std::string> names;
  std::function<void()> on_change;
  std::atomic<std::uint64_t> wakes{0};
  std::thread thread;

  ~Impl() {
    if (thread.joinable()) {
      std::uint64_t one = 1;
      while (::write(stop, &one, sizeof one) < 0 && errno == EINTR) {
      }
      thread.join();
    }
    if (inotify >= 0) ::close(inotify);
    if (stop >= 0) ::close(stop);
  }

  // True when the batch in buf names one of the watched files.
  bool concerns_us(const char* buf, ssize_t len) const {
    for (ssize_t off = 0; off < len;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      if (ev->len > 0 &&
          std::find(names.begin(), names.end(), std::string(ev->name)) != names.end())
        return true;
      if ((ev->mask & IN_Q_OVERFLOW) != 0) return true;  // events were lost: assume a change
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
    return false;
  }

  void loop() {
    alignas(inotify_event) char buf[16 * 1024];
    pollfd fds[2] = {{inotify, POLLIN, 0}, {stop, POLLIN, 0}};
    while (true) {
      int n = ::poll(fds, 2, -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || (fds[1].revents & POLLIN) != 0) return;
      if ((fds[0].revents & POLLIN) == 0) continue;
      bool changed = false;
      while (true) {  // drain what is queued: one callback for the batch
        ssize_t len = ::read(inotify, buf, sizeof buf);
        if (len <= 0) break;
        changed = changed || concerns_us(buf, len);
      }
      if (changed) {
        ++wakes;
        on_change();
      }
    }
  }
};

FileWatch::FileWatch(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FileWatch::~FileWatch() = default;

std::uint64_t FileWatch::wakes() const {
  return impl_->wakes.load();
}

Result<std::unique_ptr<FileWatch>> FileWatch::start(const std::string& dir,
                                                    std::vector<std::string> names,
                                                    std::function<void()> on_change) {
  auto impl = std::make_unique<Impl>();
  impl->names = std::move(names);
  impl->on_change = std::move(on_change);
  impl->inotify = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (impl->inotify < 0)
    return Error("io", "watching " + dir + ": inotify: " + std::strerror(errno));
  impl->stop = ::eventfd(0, EFD_CLOEXEC);
  if (impl->stop < 0) return Error("io", "watching " + dir + ": eventfd: " + std::strerror(errno));
  // Written, created, moved in (an atomic replace), or closed after writing.
  const std::uint32_t mask = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE;
  if (::inotify_add_watch(impl->inotify, dir.c_str(), mask) < 0)
    return Error("io", "watching " + dir + ": " + std::strerror(errno));
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<FileWatch>(new FileWatch(std::move(impl)));
}

}  // namespace kforge
