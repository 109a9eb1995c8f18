#include "kforge/core/fs.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kforge {

Result<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("io", path.string() + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return fail("io", path.string() + ": read failed");
  return ss.str();
}

namespace {

// Opens `path` for writing, writes all of data and closes the file (no fsync: AtomicFile is the
// durable write). Returns 0 or the errno of the step that failed.
int write_whole(const std::string& path, std::string_view data) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return e;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return ::close(fd) != 0 ? errno : 0;
}

}  // namespace

Status write_file(const std::filesystem::path& path, std::string_view data) {
  if (int e = write_whole(path.string(), data))
    return fail("io", path.string() + ": " + std::strerror(e));
  return {};
}

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
  // Errors name the file asked for: the temporary one beside it is ours, not the user's.
  if (f == nullptr)
    return fail("io", path.string() + ": cannot be written: " + std::strerror(errno));
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
    return fail("io", (f_ == stdout ? std::string("stdout") : path_.string()) +
                          ": cannot be written: " + std::strerror(errno));
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
  if (!ok) return fail("io", path_.string() + ": cannot be written: " + std::strerror(err));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    return fail("io", path_.string() + ": " + std::strerror(errno));
  tmp_.clear();
  return {};
}

Status write_file_atomic(const std::filesystem::path& path, std::string_view data) {
  KF_TRY(AtomicFile file, AtomicFile::create(path));
  KF_CHECK(file.write(data));
  return file.commit();
}

std::string safe_file_name(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

}  // namespace kforge
