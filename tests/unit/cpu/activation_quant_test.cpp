#include "backend/cpu/activation_quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "hwy_targets.h"

namespace channel::cpu {
namespace {

using ActivationQuantTest = hwy_testing::PerHwyTarget;
CHANNEL_INSTANTIATE_PER_HWY_TARGET(ActivationQuantTest);

std::vector<BlockQ8_0> quantize(const std::vector<float>& x) {
  std::vector<BlockQ8_0> blocks(x.size() / kQuantBlock);
  quantize_row_q8_0(x.data(), static_cast<int64_t>(x.size()), blocks.data());
  return blocks;
}

void expect_same_blocks(const std::vector<BlockQ8_0>& a, const std::vector<BlockQ8_0>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].d, b[i].d) << "block " << i;
    EXPECT_EQ(std::memcmp(a[i].qs, b[i].qs, sizeof(a[i].qs)), 0) << "block " << i;
  }
}

TEST_P(ActivationQuantTest, SimdMatchesScalarReferenceBitForBit) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> log_magnitude(-20.0f, 20.0f);
  std::vector<float> x(64 * kQuantBlock);
  for (int64_t b = 0; b < 64; ++b) {
    const float magnitude = std::exp2(log_magnitude(rng));  // scales from tiny (fp16 subnormal) to large
    for (int64_t i = 0; i < kQuantBlock; ++i) x[b * kQuantBlock + i] = normal(rng) * magnitude;
  }
  std::vector<BlockQ8_0> reference(x.size() / kQuantBlock);
  quantize_row_q8_0_reference(x.data(), static_cast<int64_t>(x.size()), reference.data());
  expect_same_blocks(quantize(x), reference);
}

TEST_P(ActivationQuantTest, RoundsTiesToEvenLikeGgmlX86) {
  // amax = 127 makes the inverse scale exactly 1, so x * id = x: ties stay ties. ggml's x86 path
  // (_mm256_round_ps) gives 2, -2, 4, 0; roundf (quantize_row_q8_0_ref) would give 3, -3, 4, 1.
  std::vector<float> x(kQuantBlock, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  x[4] = 0.5f;
  const std::vector<BlockQ8_0> blocks = quantize(x);
  EXPECT_EQ(blocks[0].d, f32_to_f16(1.0f));
  EXPECT_EQ(blocks[0].qs[0], 127);
  EXPECT_EQ(blocks[0].qs[1], 2);
  EXPECT_EQ(blocks[0].qs[2], -2);
  EXPECT_EQ(blocks[0].qs[3], 4);
  EXPECT_EQ(blocks[0].qs[4], 0);
}

TEST_P(ActivationQuantTest, ScaleIsAmaxOver127AndValuesUseInverseOfAmax) {
  std::vector<float> x(kQuantBlock);
  for (int64_t i = 0; i < kQuantBlock; ++i) x[i] = 0.1f * static_cast<float>(i - 16);  // largest |x| at i = 0
  const float amax = std::fabs(x[0]);
  const std::vector<BlockQ8_0> blocks = quantize(x);
  EXPECT_EQ(blocks[0].d, f32_to_f16(amax / 127.f));
  const float inverse_scale = 127.f / amax;
  for (int64_t i = 0; i < kQuantBlock; ++i) {
    EXPECT_EQ(blocks[0].qs[i], static_cast<int8_t>(std::nearbyint(x[i] * inverse_scale))) << i;
  }
  EXPECT_EQ(blocks[0].qs[0], -127);
}

TEST_P(ActivationQuantTest, ZeroBlockHasZeroScaleAndValues) {
  const std::vector<BlockQ8_0> blocks = quantize(std::vector<float>(2 * kQuantBlock, 0.0f));
  for (const BlockQ8_0& block : blocks) {
    EXPECT_EQ(block.d, 0);
    for (int8_t q : block.qs) EXPECT_EQ(q, 0);
  }
}

}  // namespace
}  // namespace channel::cpu
