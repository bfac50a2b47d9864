// The routed experts of Gemma 4 MoE layers: routing (softmax, top k, renormalisation) and the
// experts' weighted sum, on examples small enough to compute by hand.
#include "backend/cpu/moe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace channel::cpu {
namespace {

// Logits log(p) route as the probabilities p / sum(p).
std::vector<float> log_of(const std::vector<float>& p) {
  std::vector<float> out;
  for (float v : p) out.push_back(std::log(v));
  return out;
}

TEST(MoeRouting, SoftmaxTopKAndRenormalisation) {
  // Token 0: probabilities 0.1, 0.2, 0.4, 0.3; the top 2 are expert 2 (0.4) and 3 (0.3), weighted
  // 0.4 / 0.7 and 0.3 / 0.7. Token 1: 0.5, 0.25, 0.125, 0.125: experts 0 and 1, 2/3 and 1/3.
  std::vector<float> logits = log_of({1, 2, 4, 3});
  for (float v : log_of({4, 2, 1, 1})) logits.push_back(v);
  Routing routing;
  RoutingScratch scratch;
  route_tokens(logits.data(), 2, 4, 2, routing, scratch);
  EXPECT_EQ(routing.n_used, 2);
  EXPECT_EQ(routing.experts, (std::vector<int32_t>{2, 3, 0, 1}));
  const std::vector<float> expected = {4.0f / 7, 3.0f / 7, 2.0f / 3, 1.0f / 3};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(routing.weights[i], expected[i], 1e-6) << i;
}

TEST(MoeRouting, ManyExpertsTiesAndAllExperts) {
  // 20 experts (a group of 16 takes ggml's vector exponential): probabilities (i + 1) / 210, so
  // the top 3 are 19, 18, 17 with weights 20, 19 and 18 over 57.
  std::vector<float> p(20);
  for (int i = 0; i < 20; ++i) p[i] = static_cast<float>(i + 1);
  Routing routing;
  RoutingScratch scratch;
  route_tokens(log_of(p).data(), 1, 20, 3, routing, scratch);
  EXPECT_EQ(routing.experts, (std::vector<int32_t>{19, 18, 17}));
  EXPECT_NEAR(routing.weights[0], 20.0 / 57, 1e-6);
  EXPECT_NEAR(routing.weights[1], 19.0 / 57, 1e-6);
  EXPECT_NEAR(routing.weights[2], 18.0 / 57, 1e-6);

  // Equal probabilities: the lower index first.
  const std::vector<float> tied = {0.0f, 1.0f, 1.0f, 1.0f};
  route_tokens(tied.data(), 1, 4, 2, routing, scratch);
  EXPECT_EQ(routing.experts, (std::vector<int32_t>{1, 2}));
  EXPECT_FLOAT_EQ(routing.weights[0], 0.5f);

  // All experts used: the weights are the softmax itself.
  route_tokens(log_of({1, 3}).data(), 1, 2, 2, routing, scratch);
  EXPECT_EQ(routing.experts, (std::vector<int32_t>{1, 0}));
  EXPECT_NEAR(routing.weights[0], 0.75, 1e-6);
  EXPECT_NEAR(routing.weights[1], 0.25, 1e-6);
}

// F32 matrices of `rows` x `cols` held by the test, all zero but the entries set.
struct TestMatrix {
  std::vector<float> values;
  WeightMatrix view;
  TestMatrix(int64_t rows, int64_t cols) : values(static_cast<size_t>(rows * cols), 0.0f) {
    view.type = GgmlType::F32;
    view.cols = cols;
    view.rows = rows;
    view.row_bytes = static_cast<size_t>(cols) * sizeof(float);
    view.data = reinterpret_cast<const uint8_t*>(values.data());
  }
  float& at(int64_t row, int64_t col) { return values[static_cast<size_t>(row * view.cols + col)]; }
};

// Two experts over 32-wide inputs with 32 hidden units, only the first of which is used: expert
// e's gate reads 10 * x[e] (GELU(g) = g from 10 on, exactly), its up x[0] + e * x[1], its down
// writes (h, h / 2) for expert 0 and (h, h) for expert 1, scaled by 0.5 and 2.
//   token (1, 2): expert 0 gate 10, up 1 -> h 10 -> (10, 5) * 0.5 = (5, 2.5)
//                 expert 1 gate 20, up 3 -> h 60 -> (60, 60) * 2 = (120, 120)
//   token (2, 1): expert 0 gate 20, up 2 -> h 40 -> (40, 20) * 0.5 = (20, 10)
//                 expert 1 gate 10, up 3 -> h 30 -> (30, 30) * 2 = (60, 60)
// Token 0 routes to expert 1 (0.75) and 0 (0.25): (90 + 1.25, 90 + 0.625);
// token 1 to expert 0 (0.5) and 1 (0.5): (10 + 30, 5 + 30).
class MoeExperts : public ::testing::Test {
 protected:
  static constexpr int64_t kWidth = 32;

  MoeExperts()
      : gate_up(2 * 2 * kWidth, kWidth), gate(2 * kWidth, kWidth), up(2 * kWidth, kWidth), down(2 * kWidth, kWidth) {
    for (int e = 0; e < 2; ++e) {
      gate_up.at(e * 2 * kWidth, e) = gate.at(e * kWidth, e) = 10.0f;
      gate_up.at(e * 2 * kWidth + kWidth, 0) = up.at(e * kWidth, 0) = 1.0f;
      gate_up.at(e * 2 * kWidth + kWidth, 1) = up.at(e * kWidth, 1) = static_cast<float>(e);
      down.at(e * kWidth, 0) = 1.0f;
      down.at(e * kWidth + 1, 0) = e == 0 ? 0.5f : 1.0f;
    }
    x[0] = 1.0f, x[1] = 2.0f;
    x[kWidth] = 2.0f, x[kWidth + 1] = 1.0f;
    routing.n_used = 2;
    routing.experts = {1, 0, 0, 1};
    routing.weights = {0.75f, 0.25f, 0.5f, 0.5f};
  }

  std::vector<float> run(const ExpertWeights& w) {
    std::vector<float> out(2 * kWidth, -1.0f);
    ExpertScratch scratch;
    ThreadPool pool(2);
    run_experts(w, 2, kWidth, x.data(), 2, routing, out.data(), scratch, pool);
    return out;
  }

  void expect_hand_computed(const std::vector<float>& out) {
    EXPECT_EQ(out[0], 91.25f);
    EXPECT_EQ(out[1], 90.625f);
    EXPECT_EQ(out[kWidth], 40.0f);
    EXPECT_EQ(out[kWidth + 1], 35.0f);
    for (int64_t i = 2; i < kWidth; ++i) {
      EXPECT_EQ(out[i], 0.0f) << i;
      EXPECT_EQ(out[kWidth + i], 0.0f) << i;
    }
  }

  TestMatrix gate_up, gate, up, down;
  std::vector<float> x = std::vector<float>(2 * kWidth, 0.0f);
  Routing routing;
};

TEST_F(MoeExperts, FusedGateUpWeightedSumByHand) {
  ExpertWeights w;
  w.gate_up = gate_up.view;
  w.down = down.view;
  w.down_scale = {0.5f, 2.0f};
  expect_hand_computed(run(w));
}

TEST_F(MoeExperts, SeparateGateAndUpGiveTheSame) {
  ExpertWeights w;
  w.gate = gate.view;
  w.up = up.view;
  w.down = down.view;
  w.down_scale = {0.5f, 2.0f};
  expect_hand_computed(run(w));
}

// The router's F32 products, in both of llama.cpp's orders (one token, or an expert count not a
// multiple of 4: ggml_vec_dot_f32, whose 64-value sets leave 16 of these 80 values over; 2+
// tokens and 4 experts: tinyBLAS): small integers, so every order gives the exact dot product.
TEST(MoeRouterLogits, AreTheDotProductsInEitherOrder) {
  constexpr int64_t kEmbd = 80;
  for (int64_t n_expert : {3, 4}) {
    TestMatrix router(n_expert, kEmbd);
    std::vector<float> x(2 * kEmbd);
    for (int64_t i = 0; i < kEmbd; ++i) {
      for (int64_t e = 0; e < n_expert; ++e) router.at(e, i) = static_cast<float>((i * (e + 1)) % 7 - 3);
      x[i] = static_cast<float>(i % 5 - 2);
      x[kEmbd + i] = static_cast<float>(i % 3);
    }
    ThreadPool pool(2);
    for (int64_t n_tokens : {1, 2}) {
      std::vector<float> out(static_cast<size_t>(n_tokens * n_expert), -1.0f);
      router_logits(router.view, x.data(), n_tokens, out.data(), pool);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t e = 0; e < n_expert; ++e) {
          float expected = 0.0f;
          for (int64_t i = 0; i < kEmbd; ++i) expected += router.at(e, i) * x[t * kEmbd + i];
          EXPECT_EQ(out[t * n_expert + e], expected) << n_expert << " experts, token " << t << " of " << n_tokens;
        }
      }
    }
  }
}

}  // namespace
}  // namespace channel::cpu
