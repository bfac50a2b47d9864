#include "backend/vulkan/buffer.h"

#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

#include "core/error.h"

namespace channel::vulkan {
namespace {

constexpr VkMemoryPropertyFlags kDeviceLocal = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
constexpr VkMemoryPropertyFlags kHostVisible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
constexpr VkMemoryPropertyFlags kCached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT;

std::optional<uint32_t> find_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t allowed,
                                         VkMemoryPropertyFlags wanted) {
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    if ((allowed & (1u << i)) && (memory.memoryTypes[i].propertyFlags & wanted) == wanted) return i;
  }
  return std::nullopt;
}

// Memory property sets to try, best first.
std::vector<VkMemoryPropertyFlags> preferences(MemoryUse use, bool unified) {
  switch (use) {
    case MemoryUse::kDevice:
      if (unified) return {kDeviceLocal | kHostVisible | kCached, kDeviceLocal | kHostVisible, kDeviceLocal};
      return {kDeviceLocal};
    case MemoryUse::kUpload:
      return {kDeviceLocal | kHostVisible, kHostVisible};
    case MemoryUse::kReadback:
      return {kHostVisible | kCached, kHostVisible};
  }
  return {kDeviceLocal};
}

const char* use_name(MemoryUse use) {
  switch (use) {
    case MemoryUse::kDevice: return "device";
    case MemoryUse::kUpload: return "upload";
    case MemoryUse::kReadback: return "readback";
  }
  return "?";
}

}  // namespace

Buffer::Buffer(Device& device, uint64_t bytes, MemoryUse use, HostMapping mapping) : device_(&device), size_(bytes) {
  if (mapping == HostMapping::kNever && use != MemoryUse::kDevice) fail("Vulkan: upload and readback buffers are always mapped");
  if (bytes == 0) fail("Vulkan: a buffer of 0 bytes");
  const DeviceInfo& info = device.info();
  if (info.max_memory_allocation_size != 0 && bytes > info.max_memory_allocation_size) {
    fail("Vulkan: a buffer of {} bytes exceeds maxMemoryAllocationSize ({} bytes) of {}: split it", bytes,
         info.max_memory_allocation_size, info.name);
  }
  const VolkDeviceTable& fn = device.fn();
  VkBufferCreateInfo create{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  create.size = bytes;
  // Indirect: recorded dispatches whose workgroup counts change between replays read them from
  // a buffer (CommandSequence::dispatch_indirect).
  create.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT;
  create.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(fn.vkCreateBuffer(device.handle(), &create, nullptr, &buffer_), "vkCreateBuffer");

  VkMemoryRequirements requirements{};
  fn.vkGetBufferMemoryRequirements(device.handle(), buffer_, &requirements);
  std::optional<uint32_t> type;
  VkMemoryPropertyFlags flags = 0;
  for (const VkMemoryPropertyFlags wanted : preferences(use, info.unified_memory)) {
    type = find_memory_type(device.memory_properties(), requirements.memoryTypeBits, wanted);
    if (type) {
      flags = device.memory_properties().memoryTypes[*type].propertyFlags;
      break;
    }
  }
  if (!type) {
    release();
    fail("Vulkan: {} has no memory type for a {} buffer", info.name, use_name(use));
  }

  VkMemoryAllocateFlagsInfo allocate_flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  allocate_flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.pNext = &allocate_flags;
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex = *type;
  const VkResult result = fn.vkAllocateMemory(device.handle(), &allocate, nullptr, &memory_);
  if (result != VK_SUCCESS) {
    release();
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
      fail("Vulkan: out of memory allocating {} bytes on {} ({})", bytes, info.name, result_name(result));
    }
    check(result, "vkAllocateMemory");
  }
  check(fn.vkBindBufferMemory(device.handle(), buffer_, memory_, 0), "vkBindBufferMemory");
  if ((flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && mapping == HostMapping::kWherePossible) {
    void* pointer = nullptr;
    check(fn.vkMapMemory(device.handle(), memory_, 0, VK_WHOLE_SIZE, 0, &pointer), "vkMapMemory");
    mapped_ = static_cast<uint8_t*>(pointer);
  }
  VkBufferDeviceAddressInfo address{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
  address.buffer = buffer_;
  address_ = fn.vkGetBufferDeviceAddress(device.handle(), &address);
}

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept { *this = std::move(other); }

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = std::exchange(other.device_, nullptr);
    buffer_ = std::exchange(other.buffer_, VK_NULL_HANDLE);
    memory_ = std::exchange(other.memory_, VK_NULL_HANDLE);
    size_ = std::exchange(other.size_, 0);
    address_ = std::exchange(other.address_, 0);
    mapped_ = std::exchange(other.mapped_, nullptr);
  }
  return *this;
}

void Buffer::release() {
  if (device_ == nullptr) return;
  const VolkDeviceTable& fn = device_->fn();
  if (buffer_ != VK_NULL_HANDLE) fn.vkDestroyBuffer(device_->handle(), buffer_, nullptr);
  if (memory_ != VK_NULL_HANDLE) fn.vkFreeMemory(device_->handle(), memory_, nullptr);  // also unmaps
  buffer_ = VK_NULL_HANDLE;
  memory_ = VK_NULL_HANDLE;
  mapped_ = nullptr;
  address_ = 0;
}

}  // namespace channel::vulkan
