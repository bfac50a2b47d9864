// list_devices and the queries behind DeviceInfo. Structures of a Vulkan version or extension are
// only chained into the queries when the device has that version or extension.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "backend/vulkan/device_info.h"
#include "backend/vulkan/device_query.h"
#include "backend/vulkan/instance.h"
#include "core/error.h"

namespace channel::vulkan {
namespace {

DeviceType to_device_type(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceType::kDiscrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceType::kIntegrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceType::kVirtual;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceType::kCpu;
    default: return DeviceType::kOther;
  }
}

// Order of preference when no device is named.
int type_rank(DeviceType type) {
  switch (type) {
    case DeviceType::kDiscrete: return 0;
    case DeviceType::kIntegrated: return 1;
    case DeviceType::kVirtual: return 2;
    case DeviceType::kCpu: return 3;
    case DeviceType::kOther: return 4;
  }
  return 5;
}

// Appends `next` to the pNext chain that ends at *tail.
template <class T>
void chain(void**& tail, T& next) {
  *tail = &next;
  tail = &next.pNext;
}

// 16 where VK_NV_cooperative_matrix lists int8 x int8 -> int32 (accumulator and result) products
// of 16 x 16 x 32 on subgroups, else 0: matmul_coop.comp reads its scales in the element layout of
// NVIDIA's 16 x 16 tiles (a device with 16 x 8 x 32 only takes the tiled kernel instead).
uint32_t int8_matrix_n(VkPhysicalDevice device) {
  const auto shapes = enumerate<VkCooperativeMatrixPropertiesNV>(
      [&](uint32_t* n, VkCooperativeMatrixPropertiesNV* data) {
        return vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(device, n, data);
      },
      "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV", {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  for (const VkCooperativeMatrixPropertiesNV& s : shapes) {
    const bool int8 = s.AType == VK_COMPONENT_TYPE_SINT8_NV && s.BType == VK_COMPONENT_TYPE_SINT8_NV &&
                      s.CType == VK_COMPONENT_TYPE_SINT32_NV && s.DType == VK_COMPONENT_TYPE_SINT32_NV;
    if (int8 && s.scope == VK_SCOPE_SUBGROUP_NV && s.MSize == 16 && s.KSize == 32 && s.NSize == 16) return 16;
  }
  return 0;
}

// Workgroup size of the tiled matrix kernel (matmul.comp), above the minimum of 128 Vulkan allows.
constexpr uint32_t kRequiredWorkgroupInvocations = 256;

}  // namespace

std::string_view device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kDiscrete: return "discrete";
    case DeviceType::kIntegrated: return "integrated";
    case DeviceType::kVirtual: return "virtual";
    case DeviceType::kCpu: return "cpu";
    case DeviceType::kOther: return "other";
  }
  return "other";
}

std::string version_text(uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

std::vector<VkPhysicalDevice> enumerate_physical_devices(VkInstance instance) {
  return enumerate<VkPhysicalDevice>(
      [&](uint32_t* n, VkPhysicalDevice* data) { return vkEnumeratePhysicalDevices(instance, n, data); },
      "vkEnumeratePhysicalDevices");
}

bool has_device_extension(VkPhysicalDevice device, const char* name) {
  const auto extensions = enumerate<VkExtensionProperties>(
      [&](uint32_t* n, VkExtensionProperties* data) { return vkEnumerateDeviceExtensionProperties(device, nullptr, n, data); },
      "vkEnumerateDeviceExtensionProperties");
  return std::any_of(extensions.begin(), extensions.end(),
                     [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

DeviceInfo describe_device(VkPhysicalDevice device, uint32_t index) {
  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(device, &base);
  const uint32_t version = base.apiVersion;
  const bool v12 = version >= VK_API_VERSION_1_2;
  const bool v13 = version >= VK_API_VERSION_1_3;
  const bool dot_ext = has_device_extension(device, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  const bool size_control_ext = has_device_extension(device, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  const bool maintenance4_ext = has_device_extension(device, VK_KHR_MAINTENANCE_4_EXTENSION_NAME);
  const bool coop_nv_ext = has_device_extension(device, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  const bool executable_properties_ext =
      has_device_extension(device, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);

  DeviceInfo info;
  info.index = index;
  info.name = base.deviceName;
  info.type = to_device_type(base.deviceType);
  info.api_version = version;
  info.vendor_id = base.vendorID;
  info.device_id = base.deviceID;

  // ---- properties
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  void** tail = &props.pNext;
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties size_control{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceShaderIntegerDotProductProperties dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
  VkPhysicalDeviceMaintenance4Properties maintenance4{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_PROPERTIES};
  VkPhysicalDeviceCooperativeMatrixPropertiesNV coop{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV};
  chain(tail, subgroup);
  chain(tail, maintenance3);
  if (v12) chain(tail, driver);
  if (v13 || size_control_ext) chain(tail, size_control);
  if (v13 || dot_ext) chain(tail, dot);
  if (v13 || maintenance4_ext) chain(tail, maintenance4);
  if (coop_nv_ext) chain(tail, coop);
  vkGetPhysicalDeviceProperties2(device, &props);

  info.driver = v12 ? fmt::format("{} {}", driver.driverName, driver.driverInfo) : std::string("unknown");
  info.subgroup_size = subgroup.subgroupSize;
  info.min_subgroup_size = subgroup.subgroupSize;
  info.max_subgroup_size = subgroup.subgroupSize;
  if (v13 || size_control_ext) {
    info.min_subgroup_size = size_control.minSubgroupSize;
    info.max_subgroup_size = size_control.maxSubgroupSize;
  }
  const VkPhysicalDeviceLimits& limits = base.limits;
  info.max_storage_buffer_range = limits.maxStorageBufferRange;
  info.max_memory_allocation_size = maintenance3.maxMemoryAllocationSize;
  info.max_buffer_size = (v13 || maintenance4_ext) ? maintenance4.maxBufferSize : 0;
  info.max_compute_shared_memory = limits.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i) info.max_workgroup_count[i] = limits.maxComputeWorkGroupCount[i];
  info.max_workgroup_invocations = limits.maxComputeWorkGroupInvocations;
  info.max_push_constants = limits.maxPushConstantsSize;
  info.timestamp_period_ns = limits.timestampPeriod;

  // ---- features
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  tail = &features.pNext;
  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures size_control_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_features{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (coop_nv_ext) chain(tail, coop_features);
  if (executable_properties_ext) chain(tail, executable_features);
  if (v12) {
    chain(tail, f11);
    chain(tail, f12);
  }
  if (v13 || size_control_ext) chain(tail, size_control_features);
  if (v13 || dot_ext) chain(tail, dot_features);
  vkGetPhysicalDeviceFeatures2(device, &features);

  DeviceFeatures& f = info.features;
  f.buffer_device_address = v12 && f12.bufferDeviceAddress;
  f.storage_buffer_16bit = v12 && f11.storageBuffer16BitAccess;
  f.shader_int64 = features.features.shaderInt64;
  f.shader_float64 = features.features.shaderFloat64;
  f.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  f.subgroup_shuffle = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                       (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  f.shader_float16 = v12 && f12.shaderFloat16;
  f.storage_buffer_8bit = v12 && f12.storageBuffer8BitAccess;
  f.shader_int8 = v12 && f12.shaderInt8;
  f.integer_dot_product = (v13 || dot_ext) && dot_features.shaderIntegerDotProduct;
  f.integer_dot_4x8_accelerated = f.integer_dot_product && dot.integerDotProduct4x8BitPackedSignedAccelerated;
  // VK_KHR_cooperative_matrix is newer than the Debian 12 headers: looked up by name.
  f.cooperative_matrix = has_device_extension(device, "VK_KHR_cooperative_matrix");
  f.subgroup_size_control = (v13 || size_control_ext) && size_control_features.subgroupSizeControl;
  f.pipeline_executable_info = executable_properties_ext && executable_features.pipelineExecutableInfo;
  const bool coop_in_compute = (coop.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
  if (coop_nv_ext && coop_features.cooperativeMatrix && coop_in_compute && f.shader_int8 &&
      info.min_subgroup_size == 32 && info.max_subgroup_size == 32) {
    f.int8_matrix_n = int8_matrix_n(device);
  }

  // ---- memory
  VkPhysicalDeviceMemoryProperties memory{};
  vkGetPhysicalDeviceMemoryProperties(device, &memory);
  for (uint32_t h = 0; h < memory.memoryHeapCount; ++h) {
    if (memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) info.device_local_bytes += memory.memoryHeaps[h].size;
  }
  if (info.type == DeviceType::kIntegrated || info.type == DeviceType::kCpu) {
    constexpr VkMemoryPropertyFlags kMappable = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT |
                                                VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t t = 0; t < memory.memoryTypeCount; ++t) {
      if ((memory.memoryTypes[t].propertyFlags & kMappable) == kMappable) info.unified_memory = true;
    }
  }

  // ---- what the kernels cannot do without
  if (!v12) info.missing.push_back(fmt::format("Vulkan 1.2 (the device has {})", version_text(version)));
  if (!f.buffer_device_address) info.missing.push_back("bufferDeviceAddress");
  if (!f.storage_buffer_16bit) info.missing.push_back("storageBuffer16BitAccess");
  if (!f.shader_int64) info.missing.push_back("shaderInt64");
  if (!f.shader_float64) info.missing.push_back("shaderFloat64");
  if (!f.subgroup_arithmetic) info.missing.push_back("subgroup arithmetic in compute shaders");
  if (!f.subgroup_shuffle) info.missing.push_back("subgroup shuffles in compute shaders");
  if (info.min_subgroup_size < 4) info.missing.push_back("subgroups of at least 4 invocations");
  if (info.max_workgroup_invocations < kRequiredWorkgroupInvocations) {
    info.missing.push_back(fmt::format("{} invocations per workgroup", kRequiredWorkgroupInvocations));
  }
  return info;
}

std::vector<DeviceInfo> list_devices() {
  const Instance instance;
  const std::vector<VkPhysicalDevice> devices = enumerate_physical_devices(instance.handle());
  if (devices.empty()) {
    fail("no Vulkan device: the loader libvulkan.so.1 and its drivers report none (install the GPU vendor's driver, "
         "or mesa-vulkan-drivers for the CPU driver lavapipe)");
  }
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < devices.size(); ++i) infos.push_back(describe_device(devices[i], i));
  return infos;
}

std::optional<uint32_t> default_device_index(const std::vector<DeviceInfo>& devices) {
  std::optional<uint32_t> best;
  for (const DeviceInfo& d : devices) {
    if (!d.usable()) continue;
    if (!best || type_rank(d.type) < type_rank(devices[*best].type)) best = static_cast<uint32_t>(&d - devices.data());
  }
  if (best) return devices[*best].index;
  return std::nullopt;
}

}  // namespace channel::vulkan
