// What Channel knows about each Vulkan device: identity, memory, limits and the features its
// kernels use. Free of Vulkan types so that the CLI and the backend factory can use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace channel::vulkan {

enum class DeviceType { kDiscrete, kIntegrated, kVirtual, kCpu, kOther };

std::string_view device_type_name(DeviceType type);  // "discrete", "integrated", "virtual", "cpu", "other"

struct DeviceFeatures {
  // Required (a device without them is listed but not usable, see DeviceInfo::missing).
  bool buffer_device_address = false;     // Vulkan 1.2: all buffers are reached through addresses
  bool storage_buffer_16bit = false;      // 16-bit loads: GGUF blocks and f16 / bf16 rows are 2-byte aligned
  bool shader_int64 = false;              // 64-bit address arithmetic in shaders
  bool shader_float64 = false;            // double sums where the CPU backend sums in double (norms, attention)
  bool subgroup_arithmetic = false;       // subgroupAdd in compute shaders (reductions)
  bool subgroup_shuffle = false;          // subgroupShuffleXor in compute shaders (norm_quantize's Q8_0 blocks)
  // Used where present.
  bool shader_float16 = false;            // f16 arithmetic (packed f16 math)
  bool storage_buffer_8bit = false;       // 8-bit loads and stores
  bool shader_int8 = false;               // int8 arithmetic
  bool integer_dot_product = false;       // VK_KHR_shader_integer_dot_product (core in 1.3)
  bool integer_dot_4x8_accelerated = false;  // ... and its packed signed 4x8 dot runs in hardware
  bool cooperative_matrix = false;        // VK_KHR_cooperative_matrix is offered (not used: glslang 11 lacks it)
  // VK_NV_cooperative_matrix's int8 x int8 -> int32 products of 16 x N x 32 on compute subgroups
  // of 32 (matmul_coop.comp): 16 where the device lists N = 16, else 0 (none used).
  uint32_t int8_matrix_n = 0;
  bool subgroup_size_control = false;     // VK_EXT_subgroup_size_control / Vulkan 1.3
  // VK_KHR_pipeline_executable_properties: the driver's statistics of each compiled pipeline
  // (registers, spills, ...) on request (CHANNEL_VULKAN_PIPELINE_STATS=1); no kernel depends on it.
  bool pipeline_executable_info = false;
};

struct DeviceInfo {
  uint32_t index = 0;  // position in the loader's enumeration: what --gpu-device takes
  std::string name;
  DeviceType type = DeviceType::kOther;
  uint32_t api_version = 0;  // VK_MAKE_API_VERSION encoding
  std::string driver;        // driver name and version information, e.g. "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"
  uint32_t vendor_id = 0;
  uint32_t device_id = 0;

  uint64_t device_local_bytes = 0;  // sum of the device-local memory heaps
  // Device-local memory the host can map (integrated GPUs, CPU drivers): buffers are then used
  // in place, without staging copies.
  bool unified_memory = false;

  uint32_t subgroup_size = 0;  // the default size of compute subgroups
  uint32_t min_subgroup_size = 0;
  uint32_t max_subgroup_size = 0;
  uint64_t max_storage_buffer_range = 0;   // limit of one storage-buffer descriptor (not used: addresses)
  uint64_t max_memory_allocation_size = 0; // largest single allocation, so the largest Buffer
  uint64_t max_buffer_size = 0;            // Vulkan 1.3 maxBufferSize (0 if not reported)
  uint32_t max_compute_shared_memory = 0;  // bytes of shared memory per workgroup
  uint32_t max_workgroup_count[3] = {0, 0, 0};
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_push_constants = 0;
  float timestamp_period_ns = 0;  // nanoseconds per timestamp tick

  DeviceFeatures features;
  // The required features (above) this device lacks, by their Vulkan names; empty: usable.
  std::vector<std::string> missing;

  bool usable() const { return missing.empty(); }
};

// Every physical device the loader reports, in its order. Throws channel::Error with one line
// naming what was looked for when there is no loader (libvulkan.so.1), no driver or no device.
std::vector<DeviceInfo> list_devices();

// The device picked when none is named: the first usable discrete GPU, else integrated, else
// virtual, else CPU-type (lavapipe), else other; nullopt when none is usable.
std::optional<uint32_t> default_device_index(const std::vector<DeviceInfo>& devices);

// "Vulkan 1.3.230"-style version text.
std::string version_text(uint32_t api_version);

}  // namespace channel::vulkan
