#include "backend/vulkan/device.h"

#include <fmt/format.h>

#include <vector>

#include "backend/vulkan/device_query.h"
#include "core/error.h"

namespace channel::vulkan {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<VkQueueFamilyProperties> queue_families(VkPhysicalDevice device) {
  return enumerate<VkQueueFamilyProperties>(
      [&](uint32_t* n, VkQueueFamilyProperties* data) { vkGetPhysicalDeviceQueueFamilyProperties(device, n, data); },
      "vkGetPhysicalDeviceQueueFamilyProperties");
}

// The queue family for compute: one with compute but no graphics if there is one (a dedicated
// compute queue does not share time slices with a desktop), else any with compute.
uint32_t pick_compute_queue_family(VkPhysicalDevice device) {
  const std::vector<VkQueueFamilyProperties> families = queue_families(device);
  const auto count = static_cast<uint32_t>(families.size());
  std::optional<uint32_t> any;
  for (uint32_t i = 0; i < count; ++i) {
    if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
    if (!(families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) return i;
    if (!any) any = i;
  }
  if (!any) fail("Vulkan device has no compute queue");
  return *any;
}

}  // namespace

Device::Device(std::optional<uint32_t> index) {
  const std::vector<VkPhysicalDevice> devices = enumerate_physical_devices(instance_.handle());
  if (devices.empty()) {
    fail("no Vulkan device: the loader libvulkan.so.1 and its drivers report none (install the GPU vendor's driver, "
         "or mesa-vulkan-drivers for the CPU driver lavapipe)");
  }
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe_device(devices[i], i));

  if (index) {
    if (*index >= infos.size()) {
      fail("no Vulkan device {}: there are {} (see `channel gpu list`)", *index, infos.size());
    }
    if (!infos[*index].usable()) {
      fail("Vulkan device {} ({}) cannot run Channel's kernels: it lacks {}", *index, infos[*index].name,
           joined(infos[*index].missing));
    }
  } else {
    index = default_device_index(infos);
    if (!index) {
      std::string reasons;
      for (const DeviceInfo& d : infos) reasons += fmt::format("{}{} lacks {}", reasons.empty() ? "" : "; ", d.name, joined(d.missing));
      fail("no usable Vulkan device: {}", reasons);
    }
  }
  info_ = infos[*index];
  physical_ = devices[*index];
  vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
  queue_family_ = pick_compute_queue_family(physical_);
  timestamp_valid_bits_ = queue_families(physical_)[queue_family_].timestampValidBits;

  // Features: the required ones, and the optional ones the kernels use where present.
  const DeviceFeatures& f = info_.features;
  const bool v13 = std::min(info_.api_version, instance_.api_version()) >= VK_API_VERSION_1_3;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.shaderInt64 = VK_TRUE;
  features.features.shaderFloat64 = VK_TRUE;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = VK_TRUE;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.bufferDeviceAddress = VK_TRUE;
  f12.shaderFloat16 = f.shader_float16;
  f12.shaderInt8 = f.shader_int8;
  f12.storageBuffer8BitAccess = f.storage_buffer_8bit;
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  dot.shaderIntegerDotProduct = VK_TRUE;
  VkPhysicalDeviceSubgroupSizeControlFeatures size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  size_control.subgroupSizeControl = VK_TRUE;
  size_control.computeFullSubgroups = VK_FALSE;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  coop.cooperativeMatrix = VK_TRUE;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  executable.pipelineExecutableInfo = VK_TRUE;
  features.pNext = &f11;
  f11.pNext = &f12;
  void** tail = &f12.pNext;
  std::vector<const char*> extensions;
  if (f.integer_dot_product) {
    *tail = &dot;
    tail = &dot.pNext;
    if (!v13) extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  }
  if (f.subgroup_size_control) {
    *tail = &size_control;
    tail = &size_control.pNext;
    if (!v13) extensions.push_back(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  }
  if (f.int8_matrix_n != 0) {
    *tail = &coop;
    tail = &coop.pNext;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  if (f.pipeline_executable_info) {  // costs nothing until a pipeline asks for its statistics
    *tail = &executable;
    tail = &executable.pNext;
    extensions.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  }

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = queue_family_;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  VkDeviceCreateInfo create{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  create.pNext = &features;
  create.queueCreateInfoCount = 1;
  create.pQueueCreateInfos = &queue;
  create.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  create.ppEnabledExtensionNames = extensions.data();
  check(vkCreateDevice(physical_, &create, nullptr, &device_),
        fmt::format("vkCreateDevice ({})", info_.name));
  volkLoadDeviceTable(&fn_, device_);
  fn_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
}

Device::~Device() {
  if (device_ == VK_NULL_HANDLE) return;
  fn_.vkDeviceWaitIdle(device_);
  fn_.vkDestroyDevice(device_, nullptr);
}

void Device::submit(VkCommandBuffer command_buffer, VkFence fence) {
  VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &command_buffer;
  const std::lock_guard lock(queue_mutex_);
  check(fn_.vkQueueSubmit(queue_, 1, &submit, fence), "vkQueueSubmit");
}

void Device::wait_idle() {
  const std::lock_guard lock(queue_mutex_);
  check(fn_.vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
}

void Device::wait_for(VkFence fence) const {
  while (true) {
    const VkResult result = fn_.vkWaitForFences(device_, 1, &fence, VK_TRUE, 1'000'000'000ull);
    if (result == VK_TIMEOUT) continue;  // long work is fine; a hung GPU ends as DEVICE_LOST
    check(result, "vkWaitForFences");
    return;
  }
}

}  // namespace channel::vulkan
