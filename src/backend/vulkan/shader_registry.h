// The SPIR-V of every compute shader, compiled from shaders/*.comp by glslc at build time and
// embedded in the binary (vulkan.cmake generates embedded_shaders.cpp; nothing is compiled at run
// time). A shader is named by its variant, e.g. "matvec_q4_0" or "matvec_q4_0_dot".
//
// Adding a shader: write shaders/NAME.comp (include common.glsl for the pointer types), add a
// channel_vulkan_shader(VARIANT NAME.comp -DDEFINES...) line to vulkan.cmake per variant, and
// create its pipeline by variant name (pipeline.h).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace channel::vulkan {

struct EmbeddedShader {
  std::string_view name;
  std::span<const uint32_t> spirv;
};

// All embedded shaders (defined in the generated embedded_shaders.cpp).
std::span<const EmbeddedShader> embedded_shaders();

// The shader of that name; throws channel::Error if there is none (a build without it).
const EmbeddedShader& find_shader(std::string_view name);

}  // namespace channel::vulkan
