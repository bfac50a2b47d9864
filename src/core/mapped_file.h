// A read-only memory mapping of a whole file. Model weights are used in place from the mapping,
// so loading a model costs page faults, not copies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

namespace channel {

class MappedFile {
 public:
  // Maps `path` read-only; throws channel::Error naming the path and the OS reason on failure.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }

  // Reads every page once, so the first forward pass does not stall on page faults; calls
  // `progress(done, total)` after each piece (bytes). A user sees the load advance, as in
  // llama.cpp, instead of a long first turn.
  void prefetch(const std::function<void(size_t done, size_t total)>& progress) const;
  const std::string& path() const { return path_; }

  // Whether [begin, begin + n) lies within the mapping.
  bool contains(const void* begin, size_t n) const;
  // Drops the whole pages within [begin, begin + n) (which must lie within the mapping) from
  // this process, for bytes it keeps a copy of: the mapping stays valid, and a later read faults
  // a page back in from the page cache or the file. Without it the copied pages would stay
  // resident as the process's memory until the system reclaims them.
  void release_pages(const void* begin, size_t n) const;

 private:
  void release();

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace channel
