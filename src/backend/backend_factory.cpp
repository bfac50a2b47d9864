#include "backend/backend_factory.h"

#include "backend/cpu/cpu_backend.h"
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
    case BackendKind::Vulkan:
      break;
  }
  fail("the Vulkan backend (--gpu, --backend vulkan) is not built into this version yet; use --backend cpu");
}

}  // namespace channel
