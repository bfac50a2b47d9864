#include "backend/vulkan/shader_registry.h"

#include "core/error.h"

namespace channel::vulkan {

const EmbeddedShader& find_shader(std::string_view name) {
  for (const EmbeddedShader& shader : embedded_shaders()) {
    if (shader.name == name) return shader;
  }
  fail("Vulkan: no embedded shader named '{}'", name);
}

}  // namespace channel::vulkan
