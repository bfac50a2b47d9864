// Internal to the Vulkan backend: the queries behind DeviceInfo, on an existing instance.
#pragma once

#include <vector>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/vk_common.h"

namespace channel::vulkan {

std::vector<VkPhysicalDevice> enumerate_physical_devices(VkInstance instance);

// Properties, limits and features of one physical device (index: its position in the enumeration).
DeviceInfo describe_device(VkPhysicalDevice device, uint32_t index);

bool has_device_extension(VkPhysicalDevice device, const char* name);

}  // namespace channel::vulkan
