#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace channel {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open '{}': {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail("cannot stat '{}': {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("'{}' is not a regular file", path);
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      fail("cannot map '{}': {}", path, std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(mapping);
  }
  ::close(fd);
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::prefetch(const std::function<void(size_t done, size_t total)>& progress) const {
  constexpr size_t kPiece = size_t{64} << 20;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (size_t start = 0; start < size_; start += kPiece) {
    const size_t n = std::min(kPiece, size_ - start);
    // Ask the kernel to read ahead, then touch each page so the read has happened when we return
    // (the mapping and every piece start on a page boundary).
    ::madvise(const_cast<uint8_t*>(data_ + start), n, MADV_WILLNEED);
    uint8_t sink = 0;
    for (size_t offset = 0; offset < n; offset += page) sink ^= *static_cast<const volatile uint8_t*>(data_ + start + offset);
    static_cast<void>(sink);
    if (progress) progress(start + n, size_);
  }
}

bool MappedFile::contains(const void* begin, size_t n) const {
  const auto* first = static_cast<const uint8_t*>(begin);
  return data_ != nullptr && first >= data_ && n <= size_ && static_cast<size_t>(first - data_) <= size_ - n;
}

void MappedFile::release_pages(const void* begin, size_t n) const {
  if (!contains(begin, n)) fail("'{}': release_pages outside the mapping", path_);
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;
  const uintptr_t last = (reinterpret_cast<uintptr_t>(begin) + n) / page * page;
  // Advice only: where the kernel declines, the pages stay resident and everything still works.
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace channel
