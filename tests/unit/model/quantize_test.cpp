// quantize_row / dequantize: exact encodings worked out by hand from ggml's reference quantizers
// (quantize_row_q8_0_ref, quantize_row_q4_0_ref), the Q4_0 nibble layout, error bounds on random
// rows, and the refusal of partial blocks.
#include "model/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/error.h"
#include "core/half.h"

namespace channel {
namespace {

BlockQ8_0 q8_block(const std::vector<uint8_t>& bytes, size_t index = 0) {
  BlockQ8_0 block;
  std::memcpy(&block, bytes.data() + index * sizeof(block), sizeof(block));
  return block;
}

BlockQ4_0 q4_block(const std::vector<uint8_t>& bytes, size_t index = 0) {
  BlockQ4_0 block;
  std::memcpy(&block, bytes.data() + index * sizeof(block), sizeof(block));
  return block;
}

std::vector<float> dequantized(GgmlType type, const std::vector<uint8_t>& bytes, size_t n) {
  std::vector<float> out(n);
  dequantize(type, bytes.data(), static_cast<int64_t>(n), out.data());
  return out;
}

TEST(QuantizeQ8_0, ExactScaleRoundsHalvesAwayFromZero) {
  // max |x| = 127/16, so d = 1/16 exactly and q = round(16 x), ties away from zero (roundf).
  std::vector<float> x(32);
  for (int j = 8; j < 32; ++j) x[j] = static_cast<float>(j - 16) / 16.0f;
  x[0] = 7.9375f;    // 127
  x[1] = -7.9375f;   // -127
  x[2] = 0.03125f;   // 0.5 -> 1
  x[3] = -0.03125f;  // -0.5 -> -1
  x[4] = 0.09375f;   // 1.5 -> 2
  x[5] = 0.15625f;   // 2.5 -> 3, not 2: not banker's rounding
  x[6] = 0.0f;
  x[7] = 1.0f;  // 16
  const auto bytes = quantize_row(GgmlType::Q8_0, x);
  ASSERT_EQ(bytes.size(), sizeof(BlockQ8_0));
  const BlockQ8_0 block = q8_block(bytes);
  EXPECT_EQ(block.d, 0x2C00);  // fp16 2^-4
  const int8_t expected_head[8] = {127, -127, 1, -1, 2, 3, 0, 16};
  for (int j = 0; j < 8; ++j) EXPECT_EQ(block.qs[j], expected_head[j]) << j;
  for (int j = 8; j < 32; ++j) EXPECT_EQ(block.qs[j], j - 16) << j;
  const auto back = dequantized(GgmlType::Q8_0, bytes, 32);
  EXPECT_EQ(back[5], 0.1875f);
  for (int j = 8; j < 32; ++j) EXPECT_EQ(back[j], x[j]) << j;  // on the grid: exact
}

TEST(QuantizeQ8_0, InexactScaleIsRoundedToHalf) {
  // d = 1/127 = 2^-7 * 128/127; fp16 keeps 10 mantissa bits: 1024/127 = 8.06 -> 8, so 0x2000 | 8.
  std::vector<float> x(32, 1.0f);
  x[1] = -0.5f;
  const auto bytes = quantize_row(GgmlType::Q8_0, x);
  const BlockQ8_0 block = q8_block(bytes);
  EXPECT_EQ(block.d, 0x2008);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], -64);  // -63.5 (in f32: -63.50000x) rounds away from zero
  const auto back = dequantized(GgmlType::Q8_0, bytes, 32);
  EXPECT_EQ(back[0], 131064.0f / 131072.0f);  // 127 * 2^-7 * 1032/1024
}

TEST(QuantizeQ8_0, ZeroBlock) {
  const auto bytes = quantize_row(GgmlType::Q8_0, std::vector<float>(32, 0.0f));
  const BlockQ8_0 block = q8_block(bytes);
  EXPECT_EQ(block.d, 0x0000);
  for (int8_t q : block.qs) EXPECT_EQ(q, 0);
}

TEST(QuantizeQ4_0, NegativeExtremeMapsToZeroAndNibblesSplitByHalfBlock) {
  // x[0] = -8 has the largest magnitude, so d = -8 / -8 = 1 and q = trunc(x + 8.5).
  // Low nibble of byte j holds element j (= j - 8, so q = j); the high nibble holds element
  // j + 16 (= 7 - j, so q = 15 - j).
  std::vector<float> x(32);
  for (int j = 0; j < 16; ++j) {
    x[j] = static_cast<float>(j - 8);
    x[j + 16] = static_cast<float>(7 - j);
  }
  const auto bytes = quantize_row(GgmlType::Q4_0, x);
  ASSERT_EQ(bytes.size(), sizeof(BlockQ4_0));
  const BlockQ4_0 block = q4_block(bytes);
  EXPECT_EQ(block.d, 0x3C00);  // fp16 1.0
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], j | ((15 - j) << 4)) << j;
  EXPECT_EQ(dequantized(GgmlType::Q4_0, bytes, 32), x);  // every value is on the grid
}

TEST(QuantizeQ4_0, PositiveExtremeGivesANegativeScaleAndClipsTheOtherSide) {
  // max = +8 (first of the tie with -8), d = -1: 8 -> q 0 (value 8), -8 -> q 16 capped to 15
  // (value -7), 0 -> q 8 (value 0). Q4_0 reaches -8d on one side but only 7|d| on the other.
  std::vector<float> x(32, 0.0f);
  x[0] = 8.0f;
  x[1] = -8.0f;
  const auto bytes = quantize_row(GgmlType::Q4_0, x);
  const BlockQ4_0 block = q4_block(bytes);
  EXPECT_EQ(block.d, 0xBC00);  // fp16 -1.0
  EXPECT_EQ(block.qs[0], 0x80);
  EXPECT_EQ(block.qs[1], 0x8F);
  for (int j = 2; j < 16; ++j) EXPECT_EQ(block.qs[j], 0x88) << j;
  const auto back = dequantized(GgmlType::Q4_0, bytes, 32);
  EXPECT_EQ(back[0], 8.0f);
  EXPECT_EQ(back[1], -7.0f);
  EXPECT_EQ(back[2], 0.0f);
}

TEST(QuantizeQ4_0, FirstOfEqualMagnitudesSetsTheSign) {
  std::vector<float> x(32, 0.0f);
  x[0] = -4.0f;
  x[1] = 4.0f;
  const auto bytes = quantize_row(GgmlType::Q4_0, x);
  const BlockQ4_0 block = q4_block(bytes);
  EXPECT_EQ(block.d, 0x3800);    // d = -4 / -8 = 0.5
  EXPECT_EQ(block.qs[0], 0x80);  // element 0: -4 * 2 + 8.5 -> 0
  EXPECT_EQ(block.qs[1], 0x8F);  // element 1: 4 * 2 + 8.5 -> 16, capped to 15
  EXPECT_EQ(dequantized(GgmlType::Q4_0, bytes, 32)[1], 3.5f);
}

TEST(QuantizeQ4_0, ElementSixteenAndUpLiveInTheHighNibble) {
  std::vector<float> x(32, 0.0f);
  x[20] = -8.0f;  // byte 4, high nibble
  const auto bytes = quantize_row(GgmlType::Q4_0, x);
  const BlockQ4_0 block = q4_block(bytes);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], j == 4 ? 0x08 : 0x88) << j;
}

TEST(QuantizeQ4_0, ZeroBlockHasANegativeZeroScale) {
  // ggml starts from max = 0.0f, and 0.0f / -8 is -0.0f: fp16 0x8000.
  const auto bytes = quantize_row(GgmlType::Q4_0, std::vector<float>(32, 0.0f));
  const BlockQ4_0 block = q4_block(bytes);
  EXPECT_EQ(block.d, 0x8000);
  for (uint8_t q : block.qs) EXPECT_EQ(q, 0x88);
  for (float v : dequantized(GgmlType::Q4_0, bytes, 32)) EXPECT_EQ(v, 0.0f);
}

// Random rows at several magnitudes: each value is within half a step (Q8_0) or a whole step
// (Q4_0, whose extreme on the far side is clipped) of the scale d, plus the error of storing d in
// fp16 times the largest |q|. Blocks of 1e-3 have subnormal fp16 scales, where that error is large.
TEST(Quantize, RoundTripErrorIsBoundedByTheScale) {
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(32 * 48);
  for (size_t i = 0; i < x.size(); ++i) {
    const float magnitude = std::array{1.0f, 1e-3f, 1e3f}[(i / 32) % 3];
    x[i] = normal(rng) * magnitude;
  }
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    const bool q8 = type == GgmlType::Q8_0;
    const auto bytes = quantize_row(type, x);
    const auto back = dequantized(type, bytes, x.size());
    for (size_t b = 0; b < x.size() / 32; ++b) {
      float amax = 0.0f;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[b * 32 + j]));
      const float d = q8 ? amax / 127.0f : amax / 8.0f;
      const float d_error = std::fabs(d - std::fabs(f16_to_f32(f32_to_f16(d))));
      const float bound = (q8 ? 0.5f : 1.0f) * d + (q8 ? 127.0f : 8.0f) * d_error + amax * 1e-6f;
      for (int j = 0; j < 32; ++j) {
        const size_t i = b * 32 + j;
        EXPECT_LE(std::fabs(back[i] - x[i]), bound) << ggml_type_traits(type).name << " element " << i;
      }
    }
  }
}

TEST(Quantize, HalfTypesUseTheCoreConversions) {
  const std::vector<float> x = {1.0f,     -2.5f,    65504.0f, 1e-8f,
                                65520.0f, 0x1p-24f, -0.0f,    std::numeric_limits<float>::infinity()};
  const auto f16 = quantize_row(GgmlType::F16, x);
  const auto bf16 = quantize_row(GgmlType::BF16, x);
  ASSERT_EQ(f16.size(), 2 * x.size());
  ASSERT_EQ(bf16.size(), 2 * x.size());
  const uint16_t expected_f16[] = {0x3C00, 0xC100, 0x7BFF, 0x0000, 0x7C00, 0x0001, 0x8000, 0x7C00};
  for (size_t i = 0; i < x.size(); ++i) {
    uint16_t h, b;
    std::memcpy(&h, f16.data() + 2 * i, 2);
    std::memcpy(&b, bf16.data() + 2 * i, 2);
    EXPECT_EQ(h, expected_f16[i]) << i;
    EXPECT_EQ(b, f32_to_bf16(x[i])) << i;
  }
  const auto back = dequantized(GgmlType::F16, f16, x.size());
  EXPECT_EQ(back[1], -2.5f);
  EXPECT_EQ(back[5], 0x1p-24f);
  EXPECT_EQ(dequantized(GgmlType::BF16, bf16, x.size())[1], -2.5f);
}

TEST(Quantize, F32IsCopiedBitForBit) {
  const std::vector<float> x = {std::bit_cast<float>(0x7fc12345u), -0.0f, 3.25f};
  const auto bytes = quantize_row(GgmlType::F32, x);
  ASSERT_EQ(bytes.size(), 12u);
  EXPECT_EQ(std::memcmp(bytes.data(), x.data(), 12), 0);
  const auto back = dequantized(GgmlType::F32, bytes, 3);
  EXPECT_EQ(std::memcmp(back.data(), x.data(), 12), 0);
}

TEST(Quantize, NonFiniteInputsGiveDefinedBlocks) {
  // ggml's result here is undefined behaviour in C; ours must simply not crash or trip UBSan.
  std::vector<float> x(32, 1.0f);
  x[3] = std::numeric_limits<float>::infinity();
  x[4] = std::numeric_limits<float>::quiet_NaN();
  for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0}) {
    const auto bytes = quantize_row(type, x);
    EXPECT_EQ(bytes.size(), ggml_row_bytes(type, 32));
  }
}

TEST(Quantize, PartialBlocksAreRefused) {
  EXPECT_THROW(quantize_row(GgmlType::Q4_0, std::vector<float>(33)), Error);
  EXPECT_THROW(quantize_row(GgmlType::Q8_0, std::vector<float>(16)), Error);
  std::vector<uint8_t> data(64);
  std::vector<float> out(64);
  EXPECT_THROW(dequantize(GgmlType::Q8_0, data.data(), 40, out.data()), Error);
  EXPECT_THROW(dequantize(GgmlType::F16, data.data(), -1, out.data()), Error);
  EXPECT_NO_THROW(quantize_row(GgmlType::F16, std::vector<float>(3)));
  EXPECT_TRUE(quantize_row(GgmlType::Q4_0, {}).empty());
}

}  // namespace
}  // namespace channel
