#include "backend/backend_factory.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/vulkan/vulkan_backend.h"
#include "core/error.h"

namespace channel {

std::optional<BackendKind> parse_backend_kind(std::string_view name) {
  if (name == "cpu") return BackendKind::Cpu;
  if (name == "vulkan") return BackendKind::Vulkan;
  return std::nullopt;
}

std::string_view backend_kind_name(BackendKind kind) { return kind == BackendKind::Cpu ? "cpu" : "vulkan"; }

std::unique_ptr<Backend> make_backend(std::shared_ptr<const Model> model, const BackendOptions& options) {
  switch (options.kind) {
    case BackendKind::Cpu:
      return std::make_unique<cpu::CpuBackend>(std::move(model), options.threads);
    case BackendKind::Vulkan: {
      vulkan::VulkanBackendOptions vulkan_options;
      if (options.gpu_device >= 0) vulkan_options.device_index = static_cast<uint32_t>(options.gpu_device);
      vulkan_options.layers_per_submit = options.layers_per_submit;
      return std::make_unique<vulkan::VulkanBackend>(std::move(model), vulkan_options);
    }
  }
  fail("unknown backend");
}

}  // namespace channel
