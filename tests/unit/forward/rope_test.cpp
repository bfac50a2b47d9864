// RoPE as a rotation: norms are kept, rotating by p then by q equals rotating by p + q (for
// unscaled frequencies), dims beyond n_rot and pairs with huge frequency factors stay put.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/geglu.h"
#include "backend/cpu/ops.h"

namespace channel::cpu {
namespace {

std::vector<float> random_head(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

TEST(Rope, RotationsCompose) {
  const int head_dim = 64;
  auto direct = random_head(head_dim, 1);
  auto composed = direct;
  RopeTable table;
  table.compute(7 + 5, head_dim, 10000.0f, 1.0f, {});
  table.apply(direct.data());
  table.compute(7, head_dim, 10000.0f, 1.0f, {});
  table.apply(composed.data());
  table.compute(5, head_dim, 10000.0f, 1.0f, {});
  table.apply(composed.data());
  for (int i = 0; i < head_dim; ++i) EXPECT_NEAR(direct[i], composed[i], 2e-5f) << i;
}

TEST(Rope, PartialRotationLeavesTheRestAlone) {
  const int head_dim = 64;
  const auto original = random_head(head_dim, 2);
  // n_rot 32 of 64 dims: dims 32.. untouched. Frequency factors of 1e30: pairs 4.. unrotated.
  std::vector<float> factors(16, 1e30f);
  for (int i = 0; i < 4; ++i) factors[i] = 1.0f;
  auto head = original;
  RopeTable table;
  table.compute(1234, 32, 1e6f, 1.0f, factors);
  table.apply(head.data());
  for (int i = 32; i < head_dim; ++i) EXPECT_EQ(head[i], original[i]) << i;
  for (int i = 4; i < 16; ++i) {
    EXPECT_NEAR(head[i], original[i], 1e-6f) << i;
    EXPECT_NEAR(head[i + 16], original[i + 16], 1e-6f) << i;
  }
  double before = 0, after = 0;
  for (int i = 0; i < head_dim; ++i) {
    before += original[i] * original[i];
    after += head[i] * head[i];
  }
  EXPECT_NEAR(before, after, 1e-4 * before);
  EXPECT_GT(std::abs(head[0] - original[0]) + std::abs(head[16] - original[16]), 1e-3);  // pair 0 did rotate
}

TEST(Rope, LinearScalingDividesThePosition) {
  auto scaled = random_head(32, 3);
  auto plain = scaled;
  RopeTable table;
  table.compute(800, 32, 1e6f, 1.0f / 8.0f, {});
  table.apply(scaled.data());
  table.compute(100, 32, 1e6f, 1.0f, {});
  table.apply(plain.data());
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(scaled[i], plain[i], 1e-5f) << i;
}

TEST(RmsNorm, MatchesTheFormula) {
  const auto x = random_head(100, 4);
  std::vector<float> w(100, 2.0f), y(100);
  rms_norm(x.data(), y.data(), 100, 1e-6f, w);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double scale = 1.0 / std::sqrt(ss / 100 + 1e-6);
  for (int i = 0; i < 100; ++i) EXPECT_NEAR(y[i], x[i] * scale * 2.0, 1e-5) << i;
}

TEST(Geglu, CloseToExactGeluTimesUp) {
  for (float g : {-12.0f, -3.0f, -0.5f, 0.0f, 0.3f, 1.7f, 9.9f, 15.0f}) {
    const float up = 1.5f;
    float y;
    geglu(&g, &up, &y, 1);
    const double exact = 0.5 * g * (1.0 + std::tanh(0.7978845608 * (g + 0.044715 * g * g * g))) * up;
    EXPECT_NEAR(y, exact, 2e-3 * std::max(1.0, std::abs(exact))) << g;  // f16 table: ~1e-3 relative
  }
}

}  // namespace
}  // namespace channel::cpu

namespace channel::cpu {
namespace {

// Moving a post-RoPE key by delta equals computing it at p + delta: for full rotation, linear
// scaling and Gemma 4's partial rotation through frequency factors.
TEST(Rope, RotateByDeltaEqualsRopeAtTheLaterPosition) {
  struct Case {
    int n_rot;
    float base;
    float freq_scale;
    std::vector<float> factors;
  };
  std::vector<float> partial(32, 1e30f);
  for (int i = 0; i < 8; ++i) partial[i] = 1.0f;
  const std::vector<Case> cases = {{64, 1e4f, 1.0f, {}}, {64, 1e6f, 0.125f, {}}, {64, 1e6f, 1.0f, partial}};
  for (const Case& c : cases) {
    for (int32_t p : {0, 17, 900}) {
      for (int64_t delta : {1, 128, 3000}) {
        auto moved = random_head(c.n_rot, static_cast<uint32_t>(p + delta));
        auto direct = moved;
        RopeTable table;
        table.compute(p, c.n_rot, c.base, c.freq_scale, c.factors);
        table.apply(moved.data());
        rope_rotate_by(moved.data(), delta, c.n_rot, c.base, c.freq_scale, c.factors);
        table.compute(static_cast<int32_t>(p + delta), c.n_rot, c.base, c.freq_scale, c.factors);
        table.apply(direct.data());
        // The direct path forms angles in f32 (as ggml does): agreement to f32 angle rounding.
        for (int i = 0; i < c.n_rot; ++i) EXPECT_NEAR(moved[i], direct[i], 2e-3f) << p << "+" << delta << " dim " << i;
      }
    }
  }
}

}  // namespace
}  // namespace channel::cpu
