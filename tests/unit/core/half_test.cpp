#include "core/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace channel {
namespace {

TEST(Half, EveryF16RoundTripsThroughF32) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint16_t h = static_cast<uint16_t>(bits);
    const float f = f16_to_f32(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f)))) << bits;
    } else {
      EXPECT_EQ(f32_to_f16(f), h) << bits;
    }
  }
}

TEST(Half, F16RoundsToNearestEven) {
  // 1 + 2^-11 lies exactly between 1 and the next f16 (1 + 2^-10): ties go to the even one (1).
  EXPECT_EQ(f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
  // 1 + 3 * 2^-11 lies between 1 + 2^-10 (odd) and 1 + 2^-9 (even): rounds up to the even one.
  EXPECT_EQ(f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // largest finite
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);  // half the smallest subnormal: tie to even (zero)
  EXPECT_EQ(f32_to_f16(0x1.8p-25f), 0x0001);
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
}

TEST(Half, Bf16RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);       // tie to even
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);   // tie to even, upwards
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
}

}  // namespace
}  // namespace channel
