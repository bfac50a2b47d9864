#include "backend/vulkan/instance.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "backend/vulkan/tuning.h"
#include "core/error.h"

namespace channel::vulkan {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool layer_available(const char* name) {
  const auto layers = enumerate<VkLayerProperties>(vkEnumerateInstanceLayerProperties, "vkEnumerateInstanceLayerProperties");
  for (const VkLayerProperties& layer : layers) {
    if (std::strcmp(layer.layerName, name) == 0) return true;
  }
  return false;
}

}  // namespace

void load_loader() {
  static std::once_flag once;
  static VkResult result = VK_ERROR_INITIALIZATION_FAILED;
  std::call_once(once, [] { result = volkInitialize(); });
  if (result != VK_SUCCESS) {
    fail("no Vulkan loader: libvulkan.so.1 could not be loaded (install the Debian package libvulkan1 and a driver: "
         "the GPU vendor's, or mesa-vulkan-drivers for the CPU driver lavapipe)");
  }
  const uint32_t version = volkGetInstanceVersion();
  if (version < VK_API_VERSION_1_2) {
    fail("the Vulkan loader libvulkan.so.1 supports Vulkan {}.{} only; Channel needs 1.2 (update libvulkan1)",
         VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version));
  }
}

Instance::Instance() {
  load_loader();
  // 1.3 where the loader has it: its core structures report integer dot product support.
  api_version_ = volkGetInstanceVersion() >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "channel";
  app.applicationVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.pEngineName = "channel";
  app.engineVersion = VK_MAKE_API_VERSION(0, 0, 1, 0);
  app.apiVersion = api_version_;

  std::vector<const char*> layers;
  if (diagnostic_switch("CHANNEL_VULKAN_VALIDATION")) {
    if (!layer_available(kValidationLayer)) {
      fail("CHANNEL_VULKAN_VALIDATION=1 but {} is not installed (Debian package vulkan-validationlayers)",
           kValidationLayer);
    }
    layers.push_back(kValidationLayer);
  }

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = static_cast<uint32_t>(layers.size());
  info.ppEnabledLayerNames = layers.data();
  const VkResult result = vkCreateInstance(&info, nullptr, &instance_);
  if (result == VK_ERROR_INCOMPATIBLE_DRIVER) {
    fail("no Vulkan driver: the loader libvulkan.so.1 found no installable client driver (install the GPU vendor's "
         "driver, or mesa-vulkan-drivers for the CPU driver lavapipe)");
  }
  check(result, "vkCreateInstance");
  // Instance-level entry points (enumeration, device creation); device-level ones are loaded
  // per device into its own table (device.h).
  volkLoadInstanceOnly(instance_);
}

Instance::~Instance() {
  if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
}

}  // namespace channel::vulkan
