# The Vulkan backend's build, included from the top-level CMakeLists.txt after
# channel_module(vulkan backend/vulkan ...) has made the channel_vulkan library:
#   - volk (libvulkan-volk-dev) is compiled in (volk.cpp): nothing links libvulkan.so.1, the
#     loader is opened at run time, so the binary starts on machines without Vulkan;
#   - the GLSL compute shaders in shaders/ are compiled by glslc at build time, one SPIR-V module
#     per variant (a source compiled with different -D defines), and embedded as uint32_t arrays
#     in a generated embedded_shaders.cpp (embed_spirv.cmake); no shader is compiled at run time.

find_program(CHANNEL_GLSLC glslc)
if(NOT CHANNEL_GLSLC)
  message(FATAL_ERROR "glslc (GLSL to SPIR-V compiler) not found: the Vulkan shaders are compiled with it at build "
                      "time; install the Debian package glslc (scripts/install-deps.sh)")
endif()
find_file(CHANNEL_VOLK_SOURCE volk.c)
find_path(CHANNEL_VULKAN_HEADERS vulkan/vulkan_core.h)
if(NOT CHANNEL_VOLK_SOURCE OR NOT CHANNEL_VULKAN_HEADERS)
  message(FATAL_ERROR "volk.c or the Vulkan headers not found: install the Debian packages libvulkan-volk-dev and "
                      "libvulkan-dev (scripts/install-deps.sh)")
endif()
get_filename_component(CHANNEL_VOLK_DIR ${CHANNEL_VOLK_SOURCE} DIRECTORY)
target_include_directories(channel_vulkan PRIVATE ${CHANNEL_VOLK_DIR} ${CHANNEL_VULKAN_HEADERS})
target_link_libraries(channel_vulkan PUBLIC ${CMAKE_DL_LIBS})  # volk's dlopen
# `VkFooInfo info{VK_STRUCTURE_TYPE_FOO_INFO};` sets sType and zero-initializes the other members,
# the usual Vulkan idiom: not a missing initializer.
target_compile_options(channel_vulkan PRIVATE -Wno-missing-field-initializers)

set(CHANNEL_SHADER_DIR ${CMAKE_CURRENT_SOURCE_DIR}/src/backend/vulkan/shaders)
set(CHANNEL_SHADER_OUT ${CMAKE_CURRENT_BINARY_DIR}/vulkan_shaders)
file(MAKE_DIRECTORY ${CHANNEL_SHADER_OUT})
file(GLOB CHANNEL_SHADER_INCLUDES CONFIGURE_DEPENDS ${CHANNEL_SHADER_DIR}/*.glsl)
set(CHANNEL_SHADER_SPV "")
set(CHANNEL_SHADER_LIST "")

# channel_vulkan_shader(VARIANT SOURCE [glslc options...]): VARIANT is the name the C++ side looks
# the SPIR-V up by (shader_registry.h).
function(channel_vulkan_shader variant source)
  set(spv ${CHANNEL_SHADER_OUT}/${variant}.spv)
  add_custom_command(
    OUTPUT ${spv}
    COMMAND ${CHANNEL_GLSLC} --target-env=vulkan1.2 -O ${ARGN} -o ${spv} ${CHANNEL_SHADER_DIR}/${source}
    DEPENDS ${CHANNEL_SHADER_DIR}/${source} ${CHANNEL_SHADER_INCLUDES}
    COMMENT "glslc ${variant}"
    VERBATIM)
  set(CHANNEL_SHADER_SPV ${CHANNEL_SHADER_SPV} ${spv} PARENT_SCOPE)
  set(CHANNEL_SHADER_LIST "${CHANNEL_SHADER_LIST}${variant}=${spv}," PARENT_SCOPE)
endfunction()

# Matrix kernels: one source per kernel, compiled per weight type; the Q4_0 / Q8_0 ones also with
# integer dot product instructions, and on the matrix units (VK_NV_cooperative_matrix), both used
# where the device has them.
foreach(type f32 f16 bf16 q8_0 q4_0)
  string(TOUPPER ${type} TYPE)
  channel_vulkan_shader(matmul_${type} matmul.comp -DTYPE_${TYPE})
endforeach()
foreach(type f32 f16 bf16)
  string(TOUPPER ${type} TYPE)
  channel_vulkan_shader(matvec_${type} matvec.comp -DTYPE_${TYPE})
endforeach()
foreach(type q8_0 q4_0)
  string(TOUPPER ${type} TYPE)
  channel_vulkan_shader(matvec_q_${type} matvec_q.comp -DTYPE_${TYPE})
  channel_vulkan_shader(matvec_q_${type}_dot matvec_q.comp -DTYPE_${TYPE} -DUSE_INTEGER_DOT)
  channel_vulkan_shader(matvec_gated_${type} matvec_q.comp -DTYPE_${TYPE} -DGATED_OUTPUT)
  channel_vulkan_shader(matvec_gated_${type}_dot matvec_q.comp -DTYPE_${TYPE} -DUSE_INTEGER_DOT -DGATED_OUTPUT)
  channel_vulkan_shader(matvec_heads_${type} matvec_q.comp -DTYPE_${TYPE} -DHEAD_INPUTS)
  channel_vulkan_shader(matvec_heads_${type}_dot matvec_q.comp -DTYPE_${TYPE} -DUSE_INTEGER_DOT -DHEAD_INPUTS)
  channel_vulkan_shader(matmul_${type}_dot matmul.comp -DTYPE_${TYPE} -DUSE_INTEGER_DOT)
  foreach(rows 64 128)
    channel_vulkan_shader(matmul_coop_${type}_${rows} matmul_coop.comp -DTYPE_${TYPE} -DTILE_ROWS=${rows})
  endforeach()
endforeach()
# Activation conversions.
channel_vulkan_shader(quantize_q8_0 quantize_q8.comp)
channel_vulkan_shader(round_f16 round_half.comp -DTYPE_F16)
channel_vulkan_shader(round_bf16 round_half.comp -DTYPE_BF16)

# The decoder's other steps (vulkan_backend.cpp): embedding rows per weight type, norms, the
# attention inputs (QK-norm, RoPE, KV write), attention over the slot list, GEGLU, softcap, key
# rotation and KV row copies, the E-models' per-layer inputs, the weight prefetch.
foreach(type f32 f16 bf16 q8_0 q4_0)
  string(TOUPPER ${type} TYPE)
  channel_vulkan_shader(embed_${type} embed.comp -DTYPE_${TYPE})
endforeach()
foreach(shader rms_norm norm_quantize attention_inputs attention_rows attention attention_combine geglu
               geglu_quantize softcap rotate_keys copy_rows per_layer_inputs prefetch)
  channel_vulkan_shader(${shader} ${shader}.comp)
endforeach()

# The benchmarks' own: bench/vulkan_sync_bench.cpp.
channel_vulkan_shader(grid_sync_bench grid_sync_bench.comp)

set(CHANNEL_EMBEDDED_SHADERS ${CHANNEL_SHADER_OUT}/embedded_shaders.cpp)
add_custom_command(
  OUTPUT ${CHANNEL_EMBEDDED_SHADERS}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${CHANNEL_EMBEDDED_SHADERS} -DSHADERS=${CHANNEL_SHADER_LIST}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/src/backend/vulkan/embed_spirv.cmake
  DEPENDS ${CHANNEL_SHADER_SPV} ${CMAKE_CURRENT_SOURCE_DIR}/src/backend/vulkan/embed_spirv.cmake
  COMMENT "embedding SPIR-V shaders"
  VERBATIM)
target_sources(channel_vulkan PRIVATE ${CHANNEL_EMBEDDED_SHADERS})
