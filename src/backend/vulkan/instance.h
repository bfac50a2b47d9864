// The Vulkan loader and instance. The loader (libvulkan.so.1) is opened at run time through volk;
// its absence is a channel::Error naming what is missing and how to get it, never a failure to
// start the binary.
#pragma once

#include <cstdint>

#include "backend/vulkan/vk_common.h"

namespace channel::vulkan {

// Opens libvulkan.so.1 once per process (later calls return at once). Throws channel::Error
// when it cannot be loaded or is older than Vulkan 1.2.
void load_loader();

// A VkInstance for compute (no surfaces, no layers unless CHANNEL_VULKAN_VALIDATION=1 asks for
// VK_LAYER_KHRONOS_validation). Instance-level functions are volk's globals: they are the
// loader's dispatching trampolines, valid for every instance.
class Instance {
 public:
  Instance();  // loads the loader first
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t api_version() const { return api_version_; }  // what the instance was created for

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  uint32_t api_version_ = 0;
};

}  // namespace channel::vulkan
