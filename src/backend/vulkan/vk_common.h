// What every file of the Vulkan backend includes: the Vulkan API through volk (function pointers
// loaded at run time, see volk.cpp) and the error check that turns a failed call into one
// channel::Error line.
#pragma once

#include <volk.h>

#include <cstdint>
#include <string_view>

namespace channel::vulkan {

// The name of a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY"), or its number.
std::string_view result_name(VkResult result);

// Throws channel::Error "Vulkan: <what> failed: <result>" unless result is VK_SUCCESS.
// VK_ERROR_DEVICE_LOST gets a hint: a driver watchdog may have stopped a long submission.
void check(VkResult result, std::string_view what);

}  // namespace channel::vulkan
