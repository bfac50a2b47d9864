// `channel gpu list`: the Vulkan devices the loader reports, what Channel would use of each, and
// which one --gpu picks when no --gpu-device is given.
#include <fmt/format.h>

#include <string>

#include "backend/vulkan/device_info.h"
#include "cli/commands.h"

namespace channel::cli {
namespace {

std::string bytes_text(uint64_t bytes) {
  if (bytes >= (1ull << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1ull << 30));
  if (bytes >= (1ull << 20)) return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1ull << 20));
  return fmt::format("{:.0f} KiB", static_cast<double>(bytes) / (1ull << 10));
}

const char* yes_no(bool value) { return value ? "yes" : "no"; }

void list_gpus() {
  const std::vector<vulkan::DeviceInfo> devices = vulkan::list_devices();  // throws: no loader / devices
  const std::optional<uint32_t> pick = vulkan::default_device_index(devices);
  for (const vulkan::DeviceInfo& d : devices) {
    const vulkan::DeviceFeatures& f = d.features;
    fmt::print("device {}: {}{}\n", d.index, d.name, pick == d.index ? "  [default]" : "");
    fmt::print("  type {}, Vulkan {}, driver {}\n", vulkan::device_type_name(d.type), vulkan::version_text(d.api_version),
               d.driver);
    fmt::print("  memory {} device-local{}, max allocation {}, max storage buffer range {}, shared memory {}\n",
               bytes_text(d.device_local_bytes), d.unified_memory ? " (unified: host-visible)" : "",
               bytes_text(d.max_memory_allocation_size), bytes_text(d.max_storage_buffer_range),
               bytes_text(d.max_compute_shared_memory));
    fmt::print("  subgroup size {}", d.subgroup_size);
    if (d.min_subgroup_size != d.max_subgroup_size) fmt::print(" ({}..{})", d.min_subgroup_size, d.max_subgroup_size);
    fmt::print("\n");
    fmt::print("  features: shaderFloat16 {}, 16-bit storage {}, 8-bit storage {}, shaderInt8 {}, bufferDeviceAddress {}, "
               "shaderInt64 {}, shaderFloat64 {}, subgroup arithmetic {}, subgroup shuffle {}\n",
               yes_no(f.shader_float16), yes_no(f.storage_buffer_16bit), yes_no(f.storage_buffer_8bit),
               yes_no(f.shader_int8), yes_no(f.buffer_device_address), yes_no(f.shader_int64),
               yes_no(f.shader_float64), yes_no(f.subgroup_arithmetic), yes_no(f.subgroup_shuffle));
    fmt::print("            integer dot product {} (4x8 accelerated {}), cooperative matrix (KHR) {}, "
               "int8 cooperative matrix (NV) {}, pipeline statistics {}\n",
               yes_no(f.integer_dot_product), yes_no(f.integer_dot_4x8_accelerated), yes_no(f.cooperative_matrix),
               f.int8_matrix_n != 0 ? fmt::format("16x{}x32", f.int8_matrix_n) : std::string("no"),
               yes_no(f.pipeline_executable_info));
    if (d.usable()) {
      fmt::print("  usable: yes\n");
    } else {
      std::string missing;
      for (const std::string& m : d.missing) missing += (missing.empty() ? "" : ", ") + m;
      fmt::print("  usable: no (lacks {})\n", missing);
    }
  }
  if (!pick) fmt::print("no usable device: --gpu would fail\n");
}

}  // namespace

void register_gpu_command(CLI::App& app) {
  CLI::App* gpu = app.add_subcommand("gpu", "Vulkan devices");
  gpu->require_subcommand(1);
  CLI::App* list = gpu->add_subcommand(
      "list", "List the Vulkan devices: type, memory, subgroup size, the features Channel uses, the default pick");
  list->footer("--gpu uses the device marked [default] unless --gpu-device N names another.");
  list->callback([] { list_gpus(); });
}

}  // namespace channel::cli
