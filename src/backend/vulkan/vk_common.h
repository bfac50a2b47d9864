// What every file of the Vulkan backend includes: the Vulkan API through volk (function pointers
// loaded at run time, see volk.cpp) and the error check that turns a failed call into one
// channel::Error line.
#pragma once

#include <volk.h>

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

namespace channel::vulkan {

// The name of a VkResult ("VK_ERROR_OUT_OF_DEVICE_MEMORY"), or its number.
std::string_view result_name(VkResult result);

// Throws channel::Error "Vulkan: <what> failed: <result>" unless result is VK_SUCCESS.
// VK_ERROR_DEVICE_LOST gets a hint: a driver watchdog may have stopped a long submission.
void check(VkResult result, std::string_view what);

// Vulkan's two-call list query: ask for the count, then fill that many elements. query(count,
// data) is the call with its other arguments bound; it returns a VkResult (checked, named `what`
// in the error) or nothing. Each element starts as `blank`, which carries the sType where the
// element type has one. The list is cut to the second count, which may be smaller.
template <typename T, typename Query>
std::vector<T> enumerate(Query query, std::string_view what, T blank = T{}) {
  const auto call = [&](uint32_t* count, T* data) {
    if constexpr (std::is_void_v<decltype(query(count, data))>) {
      query(count, data);
    } else {
      check(query(count, data), what);
    }
  };
  uint32_t count = 0;
  call(&count, nullptr);
  std::vector<T> items(count, blank);
  call(&count, items.data());
  items.resize(count);
  return items;
}

}  // namespace channel::vulkan
