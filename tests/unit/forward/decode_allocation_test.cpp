// A decode step of the CPU backend allocates nothing once the first steps have sized its
// buffers (issue 12: "nothing allocated in the decode loop"), for dense and MoE layers and for
// every weight type's path (decode_allocations.h counts). The Vulkan backend's are counted with
// the GPU tests (gpu/decode_allocation_test.cpp).
#include <gtest/gtest.h>

#include "backend/cpu/cpu_backend.h"
#include "decode_allocations.h"

namespace channel {
namespace {

using testing::decode_allocations;

#define SKIP_WITHOUT_ALLOCATION_COUNTER() \
  if (!testing::kCountsAllocations) GTEST_SKIP() << "allocations are not counted under AddressSanitizer"

testing::BackendMaker cpu_backend(int threads) {
  return [threads](std::shared_ptr<const Model> model) { return std::make_unique<cpu::CpuBackend>(model, threads); };
}

TEST(DecodeAllocations, DenseLayersOfEveryWeightType) {
  SKIP_WITHOUT_ALLOCATION_COUNTER();
  for (ModelArch arch : {ModelArch::Gemma3, ModelArch::Gemma4}) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::BF16, GgmlType::F16, GgmlType::F32}) {
      SynthOptions o = default_synth_options(arch);
      o.weight_type = o.embedding_type = type;
      EXPECT_EQ(decode_allocations(o, cpu_backend(2)), 0)
          << ggml_type_traits(type).name << (arch == ModelArch::Gemma3 ? " gemma3" : " gemma4");
    }
  }
}

// Past 4096 tokens: the ring has wrapped, so each decoded token evicts (whole spans) and
// overwrites a live slot.
TEST(DecodeAllocations, WithTheRingWrapped) {
  SKIP_WITHOUT_ALLOCATION_COUNTER();
  EXPECT_EQ(decode_allocations(default_synth_options(ModelArch::Gemma3), cpu_backend(2), 4200), 0);
}

TEST(DecodeAllocations, MixtureOfExpertsLayers) {
  SKIP_WITHOUT_ALLOCATION_COUNTER();
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::F32}) {
    EXPECT_EQ(decode_allocations(testing::moe_options(type), cpu_backend(2)), 0) << ggml_type_traits(type).name;
  }
}

TEST(DecodeAllocations, PerLayerEmbeddingsAndSharedKv) {
  SKIP_WITHOUT_ALLOCATION_COUNTER();
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.weight_type = o.embedding_type = GgmlType::Q4_0;
  o.n_embd_per_layer = 32;
  o.n_kv_shared = 3;
  EXPECT_EQ(decode_allocations(o, cpu_backend(3)), 0);
}

}  // namespace
}  // namespace channel
