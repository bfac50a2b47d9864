// volk, the Vulkan meta-loader (Debian: libvulkan-volk-dev), compiled into the module: it opens
// libvulkan.so.1 with dlopen at run time instead of the binary linking it, so `channel` starts
// (and runs on the CPU) on machines without a Vulkan loader, and reports its absence as an error
// only when the Vulkan backend is asked for.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wcast-function-type"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <volk.c>  // NOLINT(bugprone-suspicious-include)
#pragma GCC diagnostic pop
