// fma_by_rounding_to_odd against std::fma (libm's, one instruction on the machines that run the
// tests): random operands of every relative size, sums that cancel, results at float midpoints
// where rounding the double sum to float rounds twice, subnormal results, zeros, infinities, NaN.
#include "core/fused_multiply_add.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

namespace channel {
namespace {

// Equal results: the same bits, any NaN for a NaN.
::testing::AssertionResult same_float(float expected, float actual) {
  if (std::isnan(expected) && std::isnan(actual)) return ::testing::AssertionSuccess();
  if (std::bit_cast<uint32_t>(expected) == std::bit_cast<uint32_t>(actual)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << expected << " (0x" << std::hex << std::bit_cast<uint32_t>(expected)
                                       << "), got " << actual << " (0x" << std::bit_cast<uint32_t>(actual) << ")";
}

::testing::AssertionResult matches_fma(float a, float b, float c) {
  auto result = same_float(std::fma(a, b, c), fma_by_rounding_to_odd(a, b, c));
  if (!result) result << " for fma(" << a << ", " << b << ", " << c << ")";
  return result;
}

float random_float(std::mt19937& rng, int min_exponent, int max_exponent) {
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(min_exponent, max_exponent);
  const float magnitude = std::ldexp(mantissa(rng), exponent(rng));
  return rng() & 1 ? -magnitude : magnitude;
}

TEST(FusedMultiplyAdd, RandomOperandsOfEveryRelativeSize) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1'000'000; ++i) {
    const float a = random_float(rng, -40, 40);
    const float b = random_float(rng, -40, 40);
    const float c = random_float(rng, -90, 90);
    ASSERT_TRUE(matches_fma(a, b, c));
  }
}

// c close to -a * b: the sum cancels to the product's low bits.
TEST(FusedMultiplyAdd, CancellingSums) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200'000; ++i) {
    const float a = random_float(rng, -20, 20);
    const float b = random_float(rng, -20, 20);
    const float c = -(a * b);  // the product rounded to float
    ASSERT_TRUE(matches_fma(a, b, c));
    ASSERT_TRUE(matches_fma(a, b, std::nextafter(c, 0.0f)));
  }
}

// x plus just under half its unit in the last place: the exact sum lies below a float midpoint by
// far less than a double's precision, so the double sum is the midpoint and rounding it to float
// picks the even neighbour; for an odd x that is the wrong one. The naive double sum must get
// these wrong (else the cases test nothing) and fma_by_rounding_to_odd right.
TEST(FusedMultiplyAdd, SumsJustShortOfAFloatMidpoint) {
  std::mt19937 rng(13);
  int naive_wrong = 0;
  for (int i = 0; i < 10'000; ++i) {
    float x = random_float(rng, -60, 60);
    x = std::bit_cast<float>(std::bit_cast<uint32_t>(x) | 1u);  // odd significand
    const float half_ulp = std::ldexp(1.0f, std::ilogb(x) - 24);
    const float a = 1.0f + std::ldexp(1.0f, -23);
    const float b = std::copysign(half_ulp - std::ldexp(half_ulp, -23), x);  // a * b = half_ulp (1 - 2^-46)
    const float naive = static_cast<float>(static_cast<double>(a) * b + x);
    if (naive != std::fma(a, b, x)) ++naive_wrong;
    ASSERT_TRUE(matches_fma(a, b, x));
  }
  EXPECT_EQ(naive_wrong, 10'000);
}

TEST(FusedMultiplyAdd, SubnormalResultsZerosInfinitiesAndNan) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  const float smallest_normal = std::numeric_limits<float>::min();
  std::mt19937 rng(17);
  for (int i = 0; i < 100'000; ++i) {  // products and sums among the subnormals
    ASSERT_TRUE(matches_fma(random_float(rng, -80, -60), random_float(rng, -80, -60), random_float(rng, -150, -120)));
  }
  const float cases[][3] = {
      {0.0f, 1.0f, 0.0f},       {-0.0f, 1.0f, 0.0f},        {0.0f, -1.0f, -0.0f},  {1.0f, 1.0f, -1.0f},
      {-1.0f, 1.0f, 1.0f},      {tiny, 0.5f, 0.0f},         {tiny, 0.5f, tiny},    {smallest_normal, 0.5f, -tiny},
      {kInf, 1.0f, 1.0f},       {kInf, 0.0f, 1.0f},         {kInf, 1.0f, -kInf},   {1.0f, 1.0f, kInf},
      {kNan, 1.0f, 1.0f},       {1.0f, 1.0f, kNan},         {3e38f, 10.0f, 0.0f},  {3e38f, 10.0f, -kInf},
      {-3e38f, 10.0f, 3e38f},   {3e38f, 1.0f, 3e38f},       {1e-30f, 1e-30f, 1.0f}, {1.0f + tiny, 1.0f, -1.0f},
  };
  for (const auto& c : cases) EXPECT_TRUE(matches_fma(c[0], c[1], c[2]));
}

// fused_multiply_add is std::fma where the build has the instruction and fma_by_rounding_to_odd
// elsewhere: the same value either way.
TEST(FusedMultiplyAdd, DispatchGivesTheSameValue) {
  std::mt19937 rng(19);
  for (int i = 0; i < 10'000; ++i) {
    const float a = random_float(rng, -30, 30), b = random_float(rng, -30, 30), c = random_float(rng, -60, 60);
    ASSERT_TRUE(same_float(std::fma(a, b, c), fused_multiply_add(a, b, c)));
  }
}

}  // namespace
}  // namespace channel
