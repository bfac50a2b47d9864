// A decode step of the Vulkan backend allocates nothing once its pass is recorded (issue 8: "no
// per-token allocation"): decode replays the recorded command sequences, and the step's inputs
// go into buffers made at load. Dense layers of a quantized and a float type, and an E-model
// (per-layer embeddings decoded on the host, KV-shared layers). Counted by decode_allocations.h,
// which replaces this test binary's operator new.
#include <gtest/gtest.h>

#include "backend/vulkan/vulkan_backend.h"
#include "decode_allocations.h"
#include "gpu_test_support.h"

namespace channel {
namespace {

using testing::decode_allocations;

TEST(VulkanDecodeAllocations, NoneOnceThePassIsRecorded) {
  if (!testing::kCountsAllocations) GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
  CHANNEL_GPU_CONTEXT(gpu);  // skips (or fails under CHANNEL_REQUIRE_VULKAN=1) without a device
  const testing::BackendMaker vulkan_backend = [](std::shared_ptr<const Model> model) {
    return std::make_unique<vulkan::VulkanBackend>(model, vulkan::VulkanBackendOptions{});
  };
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::F32}) {
    SynthOptions o = default_synth_options(ModelArch::Gemma4);
    o.weight_type = o.embedding_type = type;
    EXPECT_EQ(decode_allocations(o, vulkan_backend), 0) << ggml_type_traits(type).name;
  }
  SynthOptions e_model = default_synth_options(ModelArch::Gemma4);
  e_model.weight_type = e_model.embedding_type = GgmlType::Q8_0;
  e_model.n_embd_per_layer = 32;
  e_model.n_kv_shared = 3;
  EXPECT_EQ(decode_allocations(e_model, vulkan_backend), 0) << "E-model";
}

}  // namespace
}  // namespace channel
