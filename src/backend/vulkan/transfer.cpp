#include "backend/vulkan/transfer.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace channel::vulkan {

Transfer::Transfer(Device& device, uint64_t staging_bytes)
    : device_(device), staging_bytes_(staging_bytes), commands_(device) {}

Buffer& Transfer::staging() {
  if (!staging_) staging_.emplace(device_, staging_bytes_, MemoryUse::kReadback);
  return *staging_;
}

void Transfer::check_range(const Buffer& buffer, uint64_t offset, uint64_t bytes, const char* what) const {
  if (offset > buffer.size() || bytes > buffer.size() - offset) {
    fail("Vulkan: {} of {} bytes at offset {} outside a buffer of {} bytes", what, bytes, offset, buffer.size());
  }
}

void Transfer::synchronize() {
  // An empty sequence: its fence covers all earlier submissions, its barriers their writes.
  commands_.begin();
  commands_.end();
  commands_.run();
}

void Transfer::upload(const Buffer& dst, uint64_t dst_offset, const void* data, uint64_t bytes) {
  check_range(dst, dst_offset, bytes, "upload");
  if (bytes == 0) return;
  if (dst.mapped()) {
    synchronize();  // the device may still read or write it
    std::memcpy(dst.mapped() + dst_offset, data, bytes);
    return;
  }
  Buffer& stage = staging();
  const auto* source = static_cast<const uint8_t*>(data);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, stage.size());
    std::memcpy(stage.mapped(), source + done, n);  // the previous chunk's copy has finished
    commands_.begin();
    commands_.copy(stage, 0, dst, dst_offset + done, n);
    commands_.end();
    commands_.run();
    done += n;
  }
}

void Transfer::download(const Buffer& src, uint64_t src_offset, void* data, uint64_t bytes) {
  check_range(src, src_offset, bytes, "download");
  if (bytes == 0) return;
  if (src.mapped()) {
    synchronize();
    std::memcpy(data, src.mapped() + src_offset, bytes);
    return;
  }
  Buffer& stage = staging();
  auto* target = static_cast<uint8_t*>(data);
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t n = std::min(bytes - done, stage.size());
    commands_.begin();
    commands_.copy(src, src_offset + done, stage, 0, n);
    commands_.end();
    commands_.run();
    std::memcpy(target + done, stage.mapped(), n);
    done += n;
  }
}

}  // namespace channel::vulkan
