#include "backend/vulkan/vk_common.h"

#include <fmt/format.h>

#include "core/error.h"

namespace channel::vulkan {

std::string_view result_name(VkResult result) {
  switch (result) {
#define CHANNEL_VK_RESULT(name) \
  case name:                    \
    return #name;
    CHANNEL_VK_RESULT(VK_SUCCESS)
    CHANNEL_VK_RESULT(VK_NOT_READY)
    CHANNEL_VK_RESULT(VK_TIMEOUT)
    CHANNEL_VK_RESULT(VK_INCOMPLETE)
    CHANNEL_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    CHANNEL_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    CHANNEL_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    CHANNEL_VK_RESULT(VK_ERROR_DEVICE_LOST)
    CHANNEL_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    CHANNEL_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    CHANNEL_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    CHANNEL_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    CHANNEL_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    CHANNEL_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    CHANNEL_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    CHANNEL_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    CHANNEL_VK_RESULT(VK_ERROR_UNKNOWN)
    CHANNEL_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    CHANNEL_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    CHANNEL_VK_RESULT(VK_ERROR_FRAGMENTATION)
    CHANNEL_VK_RESULT(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    CHANNEL_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef CHANNEL_VK_RESULT
    default:
      return "unknown VkResult";
  }
}

void check(VkResult result, std::string_view what) {
  if (result == VK_SUCCESS) return;
  if (result == VK_ERROR_DEVICE_LOST) {
    fail("Vulkan: {} failed: VK_ERROR_DEVICE_LOST (the GPU stopped; a driver watchdog ends submissions that run "
         "too long: submit fewer layers at a time)",
         what);
  }
  fail("Vulkan: {} failed: {} ({})", what, result_name(result), static_cast<int>(result));
}

}  // namespace channel::vulkan
