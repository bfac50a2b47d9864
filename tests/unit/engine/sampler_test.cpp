#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <vector>

namespace channel {
namespace {

std::vector<float> logits_of(std::initializer_list<float> values) { return values; }

TEST(Sampler, GreedyIsArgmaxWithLowestIndexOnTies) {
  Sampler sampler(SamplerOptions{.temperature = 0.0f});
  EXPECT_EQ(sampler.sample(logits_of({0.1f, 3.0f, -2.0f, 3.0f})), 1);
}

TEST(Sampler, MaskedTokensAreNeverChosen) {
  const auto logits = logits_of({5.0f, 4.0f, 3.0f, 2.0f});
  const std::vector<int32_t> masked = {0, 1};
  Sampler greedy(SamplerOptions{.temperature = 0.0f});
  EXPECT_EQ(greedy.sample(logits, masked), 2);
  Sampler hot(SamplerOptions{.temperature = 5.0f, .top_p = 1.0f, .seed = 3});
  for (int i = 0; i < 200; ++i) {
    const int32_t t = hot.sample(logits, masked);
    EXPECT_TRUE(t == 2 || t == 3) << t;
  }
}

TEST(Sampler, SameSeedSameTokens) {
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.0f;
  const SamplerOptions options{.temperature = 1.0f, .top_p = 0.95f, .min_p = 0.01f, .seed = 42};
  Sampler a(options), b(options), c(SamplerOptions{.temperature = 1.0f, .top_p = 0.95f, .min_p = 0.01f, .seed = 43});
  std::vector<int32_t> from_a, from_b, from_c;
  for (int i = 0; i < 100; ++i) {
    from_a.push_back(a.sample(logits));
    from_b.push_back(b.sample(logits));
    from_c.push_back(c.sample(logits));
  }
  EXPECT_EQ(from_a, from_b);
  EXPECT_NE(from_a, from_c);
}

TEST(Sampler, PenaltiesFollowTheOriginalFormula) {
  // Token 0 (logit 2.0) appeared twice: 2.0 / 1.5 - (0.5 + 2 * 0.25) = 0.333..., below token 1's 1.0.
  const auto logits = logits_of({2.0f, 1.0f, -5.0f});
  const std::vector<int32_t> recent = {0, 0};
  Sampler penalized(SamplerOptions{.temperature = 0.0f, .repeat_penalty = 1.5f, .frequency_penalty = 0.25f,
                                   .presence_penalty = 0.5f});
  EXPECT_EQ(penalized.sample(logits, {}, recent), 1);
  // Outside the window the penalty does not apply.
  Sampler short_window(SamplerOptions{.temperature = 0.0f, .repeat_penalty = 1.5f, .repeat_last_n = 0,
                                      .frequency_penalty = 0.25f, .presence_penalty = 0.5f});
  EXPECT_EQ(short_window.sample(logits, {}, recent), 0);
  // A negative logit is multiplied by the repeat penalty (pushed further down).
  const auto negative = logits_of({-1.0f, -1.2f});
  const std::vector<int32_t> recent_negative = {0};
  Sampler repeat_only(SamplerOptions{.temperature = 0.0f, .repeat_penalty = 1.5f});
  EXPECT_EQ(repeat_only.sample(negative, {}, recent_negative), 1);
}

TEST(Sampler, MinPAndTopPCutTheTail) {
  // p ~ {0.64, 0.24, 0.09, 0.03}: min_p 0.2 keeps {0, 1} (0.09 < 0.2 * 0.64); top_p 0.5 keeps {0}.
  const auto logits = logits_of({2.0f, 1.0f, 0.0f, -1.0f});
  Sampler min_p(SamplerOptions{.temperature = 1.0f, .top_p = 1.0f, .min_p = 0.2f, .seed = 1});
  Sampler top_p(SamplerOptions{.temperature = 1.0f, .top_p = 0.5f, .seed = 1});
  std::map<int32_t, int> seen_min_p, seen_top_p;
  for (int i = 0; i < 2000; ++i) {
    ++seen_min_p[min_p.sample(logits)];
    ++seen_top_p[top_p.sample(logits)];
  }
  EXPECT_EQ(seen_min_p.size(), 2u);
  EXPECT_GT(seen_min_p[1], 300);  // 0.27 of the kept mass
  EXPECT_EQ(seen_top_p.size(), 1u);
  EXPECT_EQ(seen_top_p.begin()->first, 0);
}

TEST(Sampler, FrequenciesFollowTheSoftmax) {
  const auto logits = logits_of({1.0f, 0.0f});
  Sampler sampler(SamplerOptions{.temperature = 1.0f, .top_p = 1.0f, .seed = 7});
  int first = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) first += sampler.sample(logits) == 0;
  const double expected = 1.0 / (1.0 + std::exp(-1.0));  // 0.731
  EXPECT_NEAR(static_cast<double>(first) / n, expected, 0.015);
}

}  // namespace
}  // namespace channel
