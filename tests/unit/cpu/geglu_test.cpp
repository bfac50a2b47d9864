#include "backend/cpu/geglu.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "hwy_targets.h"

namespace channel::cpu {
namespace {

using GegluTest = hwy_testing::PerHwyTarget;
CHANNEL_INSTANTIATE_PER_HWY_TARGET(GegluTest);

// Gates over GELU's whole table range and past it, the cut-offs and f16's edge cases (subnormals,
// values that round to the next binade), in counts that leave every vector tail length.
std::vector<float> gates(std::mt19937& rng, size_t n) {
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  std::uniform_real_distribution<float> tiny(-1e-4f, 1e-4f);
  const std::vector<float> edges = {-10.0f, 10.0f, std::nextafter(-10.0f, 0.0f), std::nextafter(10.0f, 0.0f),
                                    0.0f, -0.0f, 5.9604645e-08f, 2.9802322e-08f, 6.1035156e-05f, 65504.0f,
                                    -1e30f, 1e30f, 1.00048828125f, 0.99951171875f};
  std::vector<float> g;
  for (size_t i = 0; i < n; ++i) {
    const size_t kind = i % 4;
    g.push_back(kind == 0 ? edges[(i / 4) % edges.size()] : kind == 1 ? tiny(rng) : wide(rng));
  }
  return g;
}

TEST_P(GegluTest, EqualsTheReferenceBitForBit) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> up_values(-3.0f, 3.0f);
  for (const size_t n : {1u, 7u, 15u, 16u, 17u, 33u, 1000u, 6912u}) {
    const std::vector<float> gate = gates(rng, n);
    std::vector<float> up(n);
    for (float& u : up) u = up_values(rng);
    std::vector<float> want(n), got(n);
    geglu_reference(gate.data(), up.data(), want.data(), static_cast<int64_t>(n));
    geglu(gate.data(), up.data(), got.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
          << "n " << n << ", gate " << gate[i] << ": " << got[i] << " vs " << want[i];
    }
  }
}

// The reference itself, against values of GELU-tanh known independently (f16-rounded).
TEST(GegluReferenceTest, KnownValues) {
  const float gate[] = {-20.0f, 0.0f, 1.0f, -1.0f, 20.0f};
  const float up[] = {1.0f, 1.0f, 1.0f, 1.0f, 2.0f};
  float y[5];
  geglu_reference(gate, up, y, 5);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_NEAR(y[2], 0.8412f, 1e-3f);   // gelu_tanh(1)
  EXPECT_NEAR(y[3], -0.1588f, 1e-3f);  // gelu_tanh(-1)
  EXPECT_EQ(y[4], 40.0f);              // past the table: the gate itself
}

}  // namespace
}  // namespace channel::cpu
