// One Vulkan device opened for compute: the instance, the chosen physical device, a logical device
// with the features the kernels use, one compute queue and the device's function table.
//
// Device-level functions are called through fn() (a VolkDeviceTable loaded for this device), not
// volk's globals, so that several devices (tests, listing while a backend runs) never overwrite
// each other's entry points.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/instance.h"
#include "backend/vulkan/vk_common.h"

namespace channel::vulkan {

class Device {
 public:
  // Opens device `index` of list_devices(), or the default_device_index() pick. Throws
  // channel::Error naming the missing feature(s) of a device that cannot run the kernels, or
  // what was looked for when there is no loader, driver or usable device.
  explicit Device(std::optional<uint32_t> index = std::nullopt);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkInstance instance() const { return instance_.handle(); }
  VkPhysicalDevice physical() const { return physical_; }
  VkDevice handle() const { return device_; }
  const VolkDeviceTable& fn() const { return fn_; }
  uint32_t queue_family() const { return queue_family_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const { return memory_; }

  // Whether shaders built with USE_INTEGER_DOT may run here (the feature was enabled).
  bool integer_dot_enabled() const { return info_.features.integer_dot_product; }
  // N of the int8 cooperative matrix products matmul_coop.comp may use here (16 or 8; 0: none).
  uint32_t int8_matrix_n() const { return info_.features.int8_matrix_n; }
  // Valid bits of the compute queue's timestamps; 0: no timestamps (CommandSequence::write_timestamp).
  uint32_t timestamp_valid_bits() const { return timestamp_valid_bits_; }

  // vkQueueSubmit of one command buffer on the compute queue, signalling `fence` (may be
  // VK_NULL_HANDLE). Thread-safe: the queue is externally synchronized through a mutex.
  void submit(VkCommandBuffer command_buffer, VkFence fence);
  // Waits until the queue has finished everything submitted.
  void wait_idle();

  // Waits for `fence` without a time limit, turning a lost device into a channel::Error.
  void wait_for(VkFence fence) const;

 private:
  Instance instance_;
  DeviceInfo info_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VolkDeviceTable fn_{};
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  uint32_t timestamp_valid_bits_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  std::mutex queue_mutex_;
};

}  // namespace channel::vulkan
