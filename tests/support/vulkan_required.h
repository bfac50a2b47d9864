// Whether the tests must find a usable Vulkan device (CHANNEL_REQUIRE_VULKAN=1, as scripts/test.sh
// sets it): then a test that needs one fails without it instead of skipping.
#pragma once

#include <cstdlib>
#include <cstring>

namespace channel::testing {

inline bool vulkan_required() {
  const char* value = std::getenv("CHANNEL_REQUIRE_VULKAN");
  return value != nullptr && std::strcmp(value, "1") == 0;
}

}  // namespace channel::testing
