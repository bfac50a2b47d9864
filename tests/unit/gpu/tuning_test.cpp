// The Vulkan backend's tuning overrides (backend/vulkan/tuning.h): well-formed values land in the
// options, anything else is an error naming the setting. No device needed: DeviceInfo by hand.
#include "backend/vulkan/tuning.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "scoped_env.h"

namespace channel::vulkan {
namespace {

using channel::testing::ScopedEnv;

DeviceInfo device_of_type(DeviceType type) {
  DeviceInfo info;
  info.type = type;
  info.subgroup_size = 32;
  info.max_workgroup_invocations = 1024;
  info.max_compute_shared_memory = 49152;
  return info;
}

// The error message of `f`, which must throw channel::Error.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(VulkanTuning, DiagnosticSwitchIsOneOrZero) {
  EXPECT_FALSE(diagnostic_switch("CHANNEL_VULKAN_PROFILE"));  // unset
  {
    ScopedEnv on("CHANNEL_VULKAN_PROFILE", "1");
    EXPECT_TRUE(diagnostic_switch("CHANNEL_VULKAN_PROFILE"));
  }
  {
    ScopedEnv off("CHANNEL_VULKAN_PROFILE", "0");
    EXPECT_FALSE(diagnostic_switch("CHANNEL_VULKAN_PROFILE"));
  }
  for (const char* bad : {"yes", "2", "", "1 "}) {
    ScopedEnv value("CHANNEL_VULKAN_PROFILE", bad);
    EXPECT_NE(error_of([] { diagnostic_switch("CHANNEL_VULKAN_PROFILE"); }).find("CHANNEL_VULKAN_PROFILE must be 1 (on) or 0 (off)"),
              std::string::npos)
        << "value '" << bad << "'";
  }
}

TEST(VulkanTuning, MatvecShapeTakesThreeToFiveNumbers) {
  MatmulKernels::Options options;
  const uint32_t blocks = options.matvec_q_blocks, split = options.matvec_split;
  parse_matvec_shape("--shape", "64,4,1", options);
  EXPECT_EQ(options.matvec_workgroup, 64u);
  EXPECT_EQ(options.matvec_q_rows, 4u);
  EXPECT_EQ(options.matvec_rows, 4u);
  EXPECT_EQ(options.matvec_subgroup_rows, 1u);
  EXPECT_EQ(options.matvec_q_blocks, blocks);  // unchanged where not given
  EXPECT_EQ(options.matvec_split, split);
  parse_matvec_shape("--shape", "256,16,2,3,4", options);
  EXPECT_EQ(options.matvec_workgroup, 256u);
  EXPECT_EQ(options.matvec_q_blocks, 3u);
  EXPECT_EQ(options.matvec_split, 4u);
}

TEST(VulkanTuning, MalformedMatvecShapesNameTheSetting) {
  for (const char* text : {"", "128,8", "128,8,2,2,2,2", "128,-8,2", "128, 8,2", "128,8,2,", "128,8x,2",
                           "99999999999,8,2"}) {
    MatmulKernels::Options options;
    const std::string message = error_of([&] { parse_matvec_shape("--shape", text, options); });
    EXPECT_NE(message.find("--shape must be threads,rows,subgroup_rows"), std::string::npos) << text << ": " << message;
    EXPECT_NE(message.find(std::string("'") + text + "'"), std::string::npos) << message;
  }
}

TEST(VulkanTuning, DefaultsFollowTheDeviceType) {
  const DeviceInfo gpu = device_of_type(DeviceType::kDiscrete), cpu = device_of_type(DeviceType::kCpu);
  EXPECT_EQ(prefetch_budget_bytes(gpu, std::nullopt), uint64_t{12} << 20);
  EXPECT_EQ(prefetch_budget_bytes(cpu, std::nullopt), 0u);
  EXPECT_EQ(prefetch_budget_bytes(gpu, 5), 5u);  // the backend option wins
  EXPECT_EQ(norm_quantize_workgroup(gpu, 256), 1024u);
  EXPECT_EQ(norm_quantize_workgroup(cpu, 256), 256u);
  EXPECT_EQ(split_kv_chunk_keys(4096), 32u);  // on every device type
  EXPECT_EQ(matmul_options(cpu).matvec_workgroup, 32u);  // one subgroup
  EXPECT_EQ(matmul_options(cpu).matvec_split, 1u);
  EXPECT_EQ(matmul_options(gpu).matvec_workgroup, MatmulKernels::Options{}.matvec_workgroup);
}

TEST(VulkanTuning, OneRowAttentionTakesLargerBatchesWhereTheyFit) {
  DeviceInfo gpu = device_of_type(DeviceType::kDiscrete);
  const AttentionRowsShapes head256 = attention_rows_shapes(gpu, 256);
  EXPECT_EQ(head256.one_row.key_batch, 32u);
  EXPECT_EQ(head256.one_row.groups, 4u);
  EXPECT_EQ(head256.split.key_batch, 16u);
  EXPECT_EQ(head256.split.groups, 2u);
  const std::array<uint32_t, 5> constants = attention_rows_constants(head256.one_row, 255, false);
  EXPECT_EQ(constants, (std::array<uint32_t, 5>{256, 32, 4, 256, 0}));  // an even head size; 64 x groups invocations
  // lavapipe's 32 KiB: 32 keys of a 512-value head (45248 bytes of shared memory) do not fit.
  gpu.max_compute_shared_memory = 32768;
  EXPECT_EQ(attention_rows_shapes(gpu, 512).one_row.key_batch, 16u);
  EXPECT_EQ(attention_rows_shapes(gpu, 256).one_row.key_batch, 32u);
  gpu.max_workgroup_invocations = 128;
  EXPECT_EQ(attention_rows_shapes(gpu, 256).one_row.groups, 2u);
}

// The split-KV merge's workgroup: four groups by default, more where set and their values fit.
TEST(VulkanTuning, CombineWorkgroupIsSetWhereItsGroupsFit) {
  DeviceInfo gpu = device_of_type(DeviceType::kDiscrete);
  EXPECT_EQ(combine_workgroup(gpu, 256), 256u);
  {
    ScopedEnv env("CHANNEL_VULKAN_COMBINE_WORKGROUP", "1024");
    // 16 groups of 64 values, 4096 chunks' maxima and sums and a slice's staging: 37 KiB of the 48;
    // in 32 KiB (lavapipe's) they do not fit, 256 chunks (the ring's, of 16 keys) do.
    EXPECT_EQ(combine_workgroup(gpu, 4096), 1024u);
    gpu.max_compute_shared_memory = 32768;
    EXPECT_NE(error_of([&] { combine_workgroup(gpu, 4096); }).find("CHANNEL_VULKAN_COMBINE_WORKGROUP must be"),
              std::string::npos);
    EXPECT_EQ(combine_workgroup(gpu, 256), 1024u);
  }
  for (const char* text : {"0", "96", "2048", "x"}) {  // not whole groups of 64; past the device's invocations
    ScopedEnv env("CHANNEL_VULKAN_COMBINE_WORKGROUP", text);
    EXPECT_NE(error_of([&] { combine_workgroup(gpu, 256); }).find("a multiple of 64 up to"), std::string::npos) << text;
  }
}

TEST(VulkanTuning, EnvironmentOverridesAreChecked) {
  const DeviceInfo gpu = device_of_type(DeviceType::kDiscrete);
  {
    ScopedEnv env("CHANNEL_VULKAN_PREFETCH_MB", "6");
    EXPECT_EQ(prefetch_budget_bytes(gpu, std::nullopt), uint64_t{6} << 20);
  }
  for (const char* text : {"6x", "-1", "4097", ""}) {
    ScopedEnv env("CHANNEL_VULKAN_PREFETCH_MB", text);
    EXPECT_NE(error_of([&] { prefetch_budget_bytes(gpu, std::nullopt); }).find("CHANNEL_VULKAN_PREFETCH_MB must be"),
              std::string::npos)
        << text;
  }
  {
    ScopedEnv env("CHANNEL_VULKAN_NORM_WORKGROUP", "512");
    EXPECT_EQ(norm_quantize_workgroup(gpu, 256), 512u);
  }
  for (const char* text : {"48", "2048", "0"}) {  // not a multiple of 32; past the device's limit
    ScopedEnv env("CHANNEL_VULKAN_NORM_WORKGROUP", text);
    EXPECT_NE(error_of([&] { norm_quantize_workgroup(gpu, 256); }).find("a multiple of 32 up to 1024"),
              std::string::npos)
        << text;
  }
  {
    ScopedEnv matmul("CHANNEL_VULKAN_MATMUL", "8,3"), coop("CHANNEL_VULKAN_COOPMAT", "0"),
        tokens("CHANNEL_VULKAN_MATVEC_MAX_TOKENS", "12"), shape("CHANNEL_VULKAN_MATVEC", "64,4,1,2,2");
    const MatmulKernels::Options o = matmul_options(gpu);
    EXPECT_EQ(o.tiled_rows_per_thread, 8u);
    EXPECT_EQ(o.tiled_k_blocks, 3u);
    EXPECT_FALSE(o.cooperative_matrix);
    EXPECT_EQ(o.matvec_max_tokens, 12);
    EXPECT_EQ(o.matvec_workgroup, 64u);
    EXPECT_EQ(o.matvec_split, 2u);
  }
  {
    ScopedEnv coop("CHANNEL_VULKAN_COOPMAT", "6,64");
    const MatmulKernels::Options o = matmul_options(gpu);
    EXPECT_TRUE(o.cooperative_matrix);
    EXPECT_EQ(o.cooperative_k_blocks, 6u);
    EXPECT_EQ(o.cooperative_tile_rows, 64u);
    EXPECT_EQ(o.cooperative_small_batch_tile_rows, MatmulKernels::Options{}.cooperative_small_batch_tile_rows);
  }
  {
    ScopedEnv coop("CHANNEL_VULKAN_COOPMAT", "2,64,128,32");
    const MatmulKernels::Options o = matmul_options(gpu);
    EXPECT_EQ(o.cooperative_k_blocks, 2u);
    EXPECT_EQ(o.cooperative_tile_rows, 64u);
    EXPECT_EQ(o.cooperative_small_batch_tile_rows, 128u);
    EXPECT_EQ(o.cooperative_small_batch_tokens, 32);
  }
  for (const auto& [name, text] : {std::pair{"CHANNEL_VULKAN_MATMUL", "8"}, std::pair{"CHANNEL_VULKAN_COOPMAT", "4,64,64,256,1"},
                                   std::pair{"CHANNEL_VULKAN_MATVEC_MAX_TOKENS", "0"},
                                   std::pair{"CHANNEL_VULKAN_GATED_WORKGROUP", "many"},
                                   std::pair{"CHANNEL_VULKAN_MATVEC", "128"}}) {
    ScopedEnv env(name, text);
    EXPECT_NE(error_of([&] { matmul_options(gpu); }).find(std::string(name) + " must be"), std::string::npos)
        << name << "=" << text;
  }
  {
    ScopedEnv env("CHANNEL_VULKAN_SPLIT_KV_KEYS", "48");
    EXPECT_EQ(split_kv_chunk_keys(4096), 48u);
  }
  for (const char* text : {"0", "24", "4112", "32,32"}) {  // not a multiple of the 16-key batch; past the ring
    ScopedEnv env("CHANNEL_VULKAN_SPLIT_KV_KEYS", text);
    EXPECT_NE(error_of([&] { split_kv_chunk_keys(4096); }).find("a multiple of 16 from 16 to 4096"),
              std::string::npos)
        << text;
  }
  {
    ScopedEnv env("CHANNEL_VULKAN_ATTENTION_ROWS", "8,1");
    const AttentionRowsShapes shapes = attention_rows_shapes(gpu, 256);
    EXPECT_EQ(shapes.one_row.key_batch, 8u);
    EXPECT_EQ(shapes.one_row.groups, 1u);
    EXPECT_EQ(shapes.split.key_batch, 8u);  // two numbers set both schemes
  }
  {
    ScopedEnv env("CHANNEL_VULKAN_ATTENTION_ROWS", "48,4,32,2");
    const AttentionRowsShapes shapes = attention_rows_shapes(gpu, 256);
    EXPECT_EQ(shapes.one_row.key_batch, 48u);
    EXPECT_EQ(shapes.split.key_batch, 32u);
    EXPECT_EQ(shapes.split.groups, 2u);
  }
  // Three numbers; a batch smaller than its groups or not whole keys per group; more keys than
  // invocations; past the 1024 invocations; 64 keys of a 256-value head past 48 KiB; zero groups.
  for (const char* text : {"32,4,16", "1,2", "6,4", "192,2", "32,32", "64,4", "16,2,64,4", "16,0", "x"}) {
    ScopedEnv env("CHANNEL_VULKAN_ATTENTION_ROWS", text);
    EXPECT_NE(error_of([&] { attention_rows_shapes(gpu, 256); }).find("CHANNEL_VULKAN_ATTENTION_ROWS must be"),
              std::string::npos)
        << text;
  }
  {
    ScopedEnv env("CHANNEL_VULKAN_ATTENTION_TOKENS", "8");
    EXPECT_EQ(tiled_attention_tokens(gpu, 256), 8u);
  }
  for (const char* text : {"65", "0", "8,8"}) {
    ScopedEnv env("CHANNEL_VULKAN_ATTENTION_TOKENS", text);
    EXPECT_NE(error_of([&] { tiled_attention_tokens(gpu, 256); }).find("CHANNEL_VULKAN_ATTENTION_TOKENS must be"),
              std::string::npos)
        << text;
  }
}

}  // namespace
}  // namespace channel::vulkan
