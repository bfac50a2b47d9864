// Episodic memory's scoring on hand-made episodes: each term of the original's formula on its
// own (cosine, recency over milliseconds, accesses, salience), the order of the best episodes,
// and what a recall does to them.
#include "engine/episode_scoring.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"

namespace channel {
namespace {

constexpr int64_t kDayMs = 86'400'000;

Episode episode_at(std::vector<float> centroid, int64_t last_accessed_ms) {
  Episode e;
  e.centroid = std::move(centroid);
  e.last_accessed_ms = last_accessed_ms;
  return e;
}

TEST(EpisodeScoring, EachTermOfTheFormula) {
  const std::vector<float> query = {0.6f, 0.8f};
  const int64_t now = 5 * kDayMs;
  // Cosine 0.6, touched now, never recalled, salience 1: 0.6 + 0.5 + 0 + 0.2.
  Episode e = episode_at({1.0f, 0.0f}, now);
  EXPECT_NEAR(episode_score(e, query, now), 1.3, 1e-6);
  // A day old: the recency term falls to 0.5/e.
  e.last_accessed_ms = now - kDayMs;
  EXPECT_NEAR(episode_score(e, query, now), 0.6 + 0.5 / std::exp(1.0) + 0.2, 1e-6);
  // Recalled three times and a parent of one: 0.3·ln 5 more.
  e.last_accessed_ms = now;
  e.access_count = 3;
  e.child_count = 1;
  EXPECT_NEAR(episode_score(e, query, now), 1.3 + 0.3 * std::log(5.0), 1e-6);
  // Salience 0.5: 0.1 less than at 1.
  e.access_count = e.child_count = 0;
  e.salience = 0.5f;
  EXPECT_NEAR(episode_score(e, query, now), 1.2, 1e-6);
}

TEST(EpisodeScoring, RecencyIsMeasuredInMillisecondsNotTokens) {
  // The original's bug: `now` was the token clock, so a week-old episode looked brand new. Here
  // an episode touched a millisecond ago outscores one of the same content touched a week ago.
  const std::vector<float> query = {1.0f, 0.0f};
  const int64_t now = 30 * kDayMs;
  const double fresh = episode_score(episode_at({1.0f, 0.0f}, now - 1), query, now);
  const double old = episode_score(episode_at({1.0f, 0.0f}, now - 7 * kDayMs), query, now);
  EXPECT_NEAR(fresh - old, 0.5 * (std::exp(-1.0 / kDayMs) - std::exp(-7.0)), 1e-6);
}

TEST(EpisodeScoring, BestEpisodesComeBestFirstAndRecallTouchesThem) {
  EpisodeStore store(8);
  const int64_t now = 2 * kDayMs;
  store.add(episode_at({0.0f, 1.0f}, now));   // cosine 0
  store.add(episode_at({1.0f, 0.0f}, now));   // cosine 1: best
  store.add(episode_at({0.0f, -1.0f}, now));  // cosine -1: worst
  store.add(episode_at({1.0f, 0.0f}, now));   // ties with the second: after it
  const std::vector<float> query = {1.0f, 0.0f};
  EXPECT_EQ(best_episodes(store, query, now, 3), (std::vector<size_t>{1, 3, 0}));
  EXPECT_EQ(best_episodes(store, query, now, 10).size(), 4u);

  store.mark_recalled({0}, now + 1000);
  EXPECT_EQ(store.episodes()[0].last_accessed_ms, now + 1000);
  EXPECT_EQ(store.episodes()[0].access_count, 1u);
  // One recall adds 0.3·ln 2 (about 0.21): still below a cosine of 1.
  EXPECT_EQ(best_episodes(store, query, now + 1000, 1), (std::vector<size_t>{1}));
}

TEST(EpisodeScoring, AFullStoreDropsItsOldestEpisode) {
  EpisodeStore store(2);
  for (int i = 0; i < 3; ++i) store.add(episode_at({1.0f}, i));
  ASSERT_EQ(store.episodes().size(), 2u);
  EXPECT_EQ(store.episodes()[0].id, 2u);
  EXPECT_EQ(store.episodes()[1].id, 3u);
}

TEST(EpisodeScoring, AQueryOfAnotherWidthIsRefused) {
  const std::vector<float> query = {1.0f, 0.0f, 0.0f};
  EXPECT_THROW(episode_score(episode_at({1.0f, 0.0f}, 0), query, 0), Error);
}

}  // namespace
}  // namespace channel
