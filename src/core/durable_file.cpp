#include "core/durable_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace channel {

void require_usable_path(const std::string& path) {
  if (path.empty()) fail("the path is empty");
  if (path.find('\0') != std::string::npos) fail("the path contains a NUL byte");
}

void write_all(int fd, std::span<const uint8_t> bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write '{}': {}", path, std::strerror(errno));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void sync_file(int fd, const std::string& path) {
  if (::fsync(fd) != 0) fail("cannot sync '{}': {}", path, std::strerror(errno));
}

void sync_parent_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string directory = parent.empty() ? std::string(".") : parent.string();
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
    const int error = errno;
    if (dir_fd >= 0) ::close(dir_fd);
    fail("wrote '{}' but cannot sync its directory '{}': {}", path, directory, std::strerror(error));
  }
  ::close(dir_fd);
}

void replace_file(const std::string& path, const std::string& temp, const std::function<void(const ByteSink&)>& write) {
  require_usable_path(path);
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create '{}': {}", temp, std::strerror(errno));
  try {
    write([&](std::span<const uint8_t> bytes) { write_all(fd, bytes, temp); });
    sync_file(fd, temp);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail("cannot close '{}': {}", temp, std::strerror(errno));
    if (::rename(temp.c_str(), path.c_str()) != 0) fail("cannot rename '{}' to '{}': {}", temp, path, std::strerror(errno));
  } catch (const Error&) {
    if (fd >= 0) ::close(fd);
    ::unlink(temp.c_str());
    throw;
  }
  sync_parent_directory(path);
}

}  // namespace channel
