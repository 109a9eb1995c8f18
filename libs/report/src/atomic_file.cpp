#include "atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kforge::report::detail {

Result<AtomicFile> AtomicFile::create(const std::filesystem::path& path) {
  // "-": standard output, written as it comes (nothing to rename; a failure mid-way leaves a
  // partial stream, which the reader sees as a truncated document).
  if (path == "-") return AtomicFile(stdout, path, {});
  std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wbxe");
  if (f == nullptr && errno == EEXIST) {
    // A leftover of a killed export by a process with our pid: ours to replace.
    ::unlink(tmp.c_str());
    f = std::fopen(tmp.c_str(), "wbxe");
  }
  if (f == nullptr) return fail("io", tmp.string() + ": " + std::strerror(errno));
  return AtomicFile(f, path, std::move(tmp));
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : f_(o.f_), path_(std::move(o.path_)), tmp_(std::move(o.tmp_)) {
  o.f_ = nullptr;
  o.tmp_.clear();
}

AtomicFile::~AtomicFile() {
  if (f_ == stdout) return;
  if (f_ != nullptr) std::fclose(f_);
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

Status AtomicFile::write(std::string_view data) {
  if (f_ == nullptr) return fail("io", path_.string() + ": write after close");
  if (std::fwrite(data.data(), 1, data.size(), f_) != data.size())
    return fail(
        "io", (f_ == stdout ? std::string("stdout") : tmp_.string()) + ": " + std::strerror(errno));
  return {};
}

Status AtomicFile::commit() {
  if (f_ == nullptr) return fail("io", path_.string() + ": commit after close");
  std::FILE* f = f_;
  f_ = nullptr;
  if (f == stdout) {
    if (std::fflush(f) != 0) return fail("io", std::string("stdout: ") + std::strerror(errno));
    return {};
  }
  bool ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) return fail("io", tmp_.string() + ": " + std::strerror(err));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    return fail("io", path_.string() + ": " + std::strerror(errno));
  tmp_.clear();
  return {};
}

}  // namespace kforge::report::detail
