// Host <-> device copies. Buffers the host can map (unified memory, kUpload / kReadback) are
// read and written in place; others go through one staging buffer, in chunks of its size.
// Every transfer is synchronous and ordered after all work submitted before it: when it
// returns, the data is in place (upload) or in host memory (download). Meant for loading
// weights, snapshots and tests; per-step traffic (a few logits, parameters) should use mapped
// kUpload / kReadback buffers inside the recorded sequences instead.
#pragma once

#include <cstdint>
#include <optional>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"

namespace channel::vulkan {

class Transfer {
 public:
  // The staging buffer (staging_bytes) is allocated on first use, and only if some buffer is not mapped.
  explicit Transfer(Device& device, uint64_t staging_bytes = 64ull << 20);

  void upload(const Buffer& dst, uint64_t dst_offset, const void* data, uint64_t bytes);
  void download(const Buffer& src, uint64_t src_offset, void* data, uint64_t bytes);
  // Waits until the device has finished everything submitted so far, with its writes visible to
  // the host (before touching mapped memory the device may still use).
  void synchronize();

 private:
  void check_range(const Buffer& buffer, uint64_t offset, uint64_t bytes, const char* what) const;
  Buffer& staging();

  Device& device_;
  uint64_t staging_bytes_;
  std::optional<Buffer> staging_;
  CommandSequence commands_;
};

}  // namespace channel::vulkan
