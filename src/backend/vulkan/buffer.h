// Device memory for tensors, activations, KV and parameters.
//
// Addressing: every buffer is created with VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT and shaders
// reach it through its 64-bit device address (GL_EXT_buffer_reference), passed in push constants.
// Chosen over descriptor sets because
//   - no descriptor range limit applies: maxStorageBufferRange (128 MiB on lavapipe, 4 GiB on
//     NVIDIA) bounds a descriptor, not a buffer, so tensors larger than it need no splitting;
//   - a sub-range is just address + offset: many tensors can share one allocation (weight arenas),
//     and a dispatch can start at any row;
//   - recorded command buffers replay with no descriptor sets to allocate or update.
// bufferDeviceAddress is core in Vulkan 1.2 and supported by lavapipe, NVIDIA, AMD and Intel.
// What remains is maxMemoryAllocationSize (lavapipe 2 GiB, NVIDIA ~4 GiB): one Buffer is one
// allocation, so a tensor larger than that must be split by rows into several buffers (the matrix
// kernels take the address of the first row, so each piece is one dispatch).
#pragma once

#include <cstdint>

#include "backend/vulkan/device.h"

namespace channel::vulkan {

enum class MemoryUse {
  // Read and written by shaders. Device-local; on unified-memory devices (integrated GPUs, CPU
  // drivers) also host-visible and coherent, so the host reads and writes it in place.
  kDevice,
  // Written by the host, read by shaders (staging uploads, per-step parameters): host-visible and
  // coherent, device-local where the device offers such memory (resizable BAR).
  kUpload,
  // Written by shaders or copies, read by the host (downloads): host-visible, coherent, cached
  // where possible (uncached reads are slow).
  kReadback,
};

// Whether host-visible memory is mapped. kNever leaves every buffer unmapped, so Transfer stages
// its copies as on a discrete GPU: the tests run that path on unified-memory devices (lavapipe).
enum class HostMapping { kWherePossible, kNever };

class Buffer {
 public:
  Buffer() = default;
  // Throws channel::Error when `bytes` exceeds maxMemoryAllocationSize or memory runs out.
  Buffer(Device& device, uint64_t bytes, MemoryUse use, HostMapping mapping = HostMapping::kWherePossible);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  VkBuffer handle() const { return buffer_; }
  uint64_t size() const { return size_; }
  // The address shaders use; address() + offset reaches byte `offset`.
  VkDeviceAddress address() const { return address_; }
  // The host mapping (persistently mapped, coherent), or nullptr when the memory is not host-visible.
  uint8_t* mapped() const { return mapped_; }
  bool host_visible() const { return mapped_ != nullptr; }

 private:
  void release();

  Device* device_ = nullptr;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t size_ = 0;
  VkDeviceAddress address_ = 0;
  uint8_t* mapped_ = nullptr;
};

}  // namespace channel::vulkan
