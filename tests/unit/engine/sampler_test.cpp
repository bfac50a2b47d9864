#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <random>
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

// The sampler's order written out plainly, every id sorted: masked ids dropped, penalties on the
// recent window, the best top_k (higher logit, then lower id), then greedy or the softmax draw
// with min-p and top-p, from a generator in the same state.
int32_t reference_sample(const SamplerOptions& o, std::mt19937_64& rng, const std::vector<float>& logits,
                         const std::vector<int32_t>& masked, const std::vector<int32_t>& recent) {
  std::map<int32_t, int> counts;
  const size_t window = std::min<size_t>(recent.size(), static_cast<size_t>(std::max(0, o.repeat_last_n)));
  for (size_t i = recent.size() - window; i < recent.size(); ++i) {
    if (recent[i] >= 0 && static_cast<size_t>(recent[i]) < logits.size()) ++counts[recent[i]];
  }
  std::vector<std::pair<float, int32_t>> candidates;
  for (size_t i = 0; i < logits.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    if (std::find(masked.begin(), masked.end(), id) != masked.end()) continue;
    float value = logits[i];
    if (counts.count(id)) {
      value = value > 0 ? value / o.repeat_penalty : value * o.repeat_penalty;
      value -= o.presence_penalty + static_cast<float>(counts[id]) * o.frequency_penalty;
    }
    candidates.emplace_back(value, id);
  }
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  if (o.top_k > 0 && candidates.size() > static_cast<size_t>(o.top_k)) candidates.resize(o.top_k);
  if (o.temperature <= 0.0f) return candidates.front().second;
  const float max_logit = candidates.front().first;
  double total = 0.0;
  for (auto& [value, id] : candidates) total += value = std::exp((value - max_logit) / o.temperature);
  size_t n = candidates.size();
  if (o.min_p > 0.0f) {
    n = 1;
    while (n < candidates.size() && candidates[n].first >= candidates.front().first * o.min_p) ++n;
    total = 0.0;
    for (size_t i = 0; i < n; ++i) total += candidates[i].first;
  }
  double kept = 0.0;
  size_t n_kept = 0;
  while (n_kept < n) {
    kept += candidates[n_kept++].first;
    if (kept >= o.top_p * total) break;
  }
  double r = std::uniform_real_distribution<double>(0.0, kept)(rng);
  for (size_t i = 0; i < n_kept; ++i) {
    if ((r -= candidates[i].first) <= 0.0) return candidates[i].second;
  }
  return candidates[n_kept - 1].second;
}

// The sampler takes the best top_k in one pass over the vocabulary (most ids cost one comparison):
// it picks what the plain order picks, on vocabularies with many equal logits (ties broken by
// id), masks, penalties that raise (repeat_penalty < 1) or lower logits, and every top_k.
TEST(Sampler, PicksWhatThePlainOrderPicks) {
  std::mt19937 rng(2026);
  int compared = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const size_t n_vocab = trial % 3 == 0 ? 5000 : 300;
    std::vector<float> logits(n_vocab);
    std::uniform_int_distribution<int> level(-20, 20);  // few distinct values: many ties
    for (float& v : logits) v = static_cast<float>(level(rng)) * 0.25f;
    std::vector<int32_t> masked, recent;
    std::uniform_int_distribution<int32_t> id(-2, static_cast<int32_t>(n_vocab) + 2);  // some out of range
    // Half of the masked ids from the range the recent ones repeat in: masked and penalized at once.
    for (int i = 0; i < trial % 7; ++i) masked.push_back(i % 2 ? id(rng) % 20 : id(rng));
    for (int i = 0; i < (trial * 5) % 40; ++i) recent.push_back(id(rng) % 20);  // repeats
    SamplerOptions o;
    o.temperature = trial % 4 == 0 ? 0.0f : 0.8f;
    o.top_k = std::array{0, 1, 5, 64, 400}[trial % 5];
    o.top_p = trial % 2 ? 0.9f : 1.0f;
    o.min_p = trial % 3 == 1 ? 0.05f : 0.0f;
    o.repeat_penalty = std::array{1.0f, 1.3f, 0.7f}[trial % 3];
    o.repeat_last_n = 16 + trial % 3 * 24;
    o.frequency_penalty = trial % 4 == 1 ? 0.2f : 0.0f;
    o.presence_penalty = trial % 5 == 2 ? 0.5f : 0.0f;
    o.seed = static_cast<uint64_t>(trial);
    Sampler sampler(o);
    std::mt19937_64 reference_rng(o.seed);
    for (int draw = 0; draw < 20; ++draw) {
      SCOPED_TRACE(::testing::Message() << "trial " << trial << " draw " << draw);
      ASSERT_EQ(sampler.sample(logits, masked, recent), reference_sample(o, reference_rng, logits, masked, recent));
      ++compared;
    }
  }
  EXPECT_EQ(compared, 1200);
}

}  // namespace
}  // namespace channel
