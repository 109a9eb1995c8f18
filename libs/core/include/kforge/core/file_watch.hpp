#pragma once
// FileWatch: calls back when named files of one directory are written, created or replaced
// (Linux inotify), so a process can sleep until another one changes them instead of polling.
// kforged watches its database and the database's -wal file: every commit of a `kforge` command
// (run create, resume, retry, batch import), of the daemon's own threads or of anything else
// writes one of them, and wakes the daemon's loops.
//
// The callback runs on the watch's own thread, once per batch of events (several writes in a
// row wake once); it must be quick and thread-safe (set a flag, notify a condition variable).
// Creating a watch fails where inotify is not available (a filesystem without it, no
// descriptors left): the caller then keeps polling. Destruction stops and joins the thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kforge/core/result.hpp"

namespace kforge {

class FileWatch {
 public:
  // Watches `dir` for changes of the files whose names (not paths) are in `names`.
  static Result<std::unique_ptr<FileWatch>> start(const std::string& dir,
                                                  std::vector<std::string> names,
                                                  std::function<void()> on_change);
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // Batches of events delivered so far (for tests and the log).
  std::uint64_t wakes() const;

 private:
  struct Impl;
  explicit FileWatch(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kforge
