#include "core/huge_page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace channel {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

}  // namespace

HugePageBuffer::HugePageBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // Whole huge pages, and one more, so that a 2 MiB boundary falls within the first one.
  const size_t whole_pages = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  mapping_bytes_ = whole_pages + kHugePage;
  mapping_ = ::mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    fail("cannot allocate {} MiB: {}", bytes >> 20, std::strerror(errno));
  }
  const auto address = reinterpret_cast<uintptr_t>(mapping_);
  data_ = reinterpret_cast<uint8_t*>((address + kHugePage - 1) & ~(kHugePage - 1));
  // Advice only: a kernel without transparent huge pages leaves ordinary pages, which work.
  ::madvise(data_, whole_pages, MADV_HUGEPAGE);
}

HugePageBuffer::~HugePageBuffer() { release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapping_bytes_(std::exchange(other.mapping_bytes_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void HugePageBuffer::release() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
  mapping_ = nullptr;
  mapping_bytes_ = 0;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace channel
