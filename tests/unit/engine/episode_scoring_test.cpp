// Episodic memory's scoring: each term of the original's formula on its own (cosine, recency over
// milliseconds, accesses, salience) on hand-made episodes, the order of the best episodes, what a
// recall does to them, and the SIMD scan against a double-precision reference on random stores.
#include "engine/episode_scoring.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/split_mix.h"
#include "core/thread_pool.h"
#include "core/unit_length.h"

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
  const int64_t now = 5 * kDayMs;
  // Cosine 0.6, touched now, never recalled, salience 1: 0.6 + 0.5 + 0 + 0.2.
  Episode e = episode_at({1.0f, 0.0f}, now);
  EXPECT_NEAR(episode_score(0.6, e, now), 1.3, 1e-6);
  // A day old: the recency term falls to 0.5/e.
  e.last_accessed_ms = now - kDayMs;
  EXPECT_NEAR(episode_score(0.6, e, now), 0.6 + 0.5 / std::exp(1.0) + 0.2, 1e-6);
  // Recalled three times and a parent of one: 0.3·ln 5 more.
  e.last_accessed_ms = now;
  e.access_count = 3;
  e.child_count = 1;
  EXPECT_NEAR(episode_score(0.6, e, now), 1.3 + 0.3 * std::log(5.0), 1e-6);
  // Salience 0.5: 0.1 less than at 1.
  e.access_count = e.child_count = 0;
  e.salience = 0.5f;
  EXPECT_NEAR(episode_score(0.6, e, now), 1.2, 1e-6);
}

TEST(EpisodeScoring, RecencyIsMeasuredInMillisecondsNotTokens) {
  // The original's bug: `now` was the token clock, so a week-old episode looked brand new. Here
  // an episode touched a millisecond ago outscores one of the same content touched a week ago.
  const int64_t now = 30 * kDayMs;
  const double fresh = episode_score(1.0, episode_at({1.0f, 0.0f}, now - 1), now);
  const double old = episode_score(1.0, episode_at({1.0f, 0.0f}, now - 7 * kDayMs), now);
  EXPECT_NEAR(fresh - old, 0.5 * (std::exp(-1.0 / kDayMs) - std::exp(-7.0)), 1e-6);
}

TEST(EpisodeScoring, BestEpisodesComeBestFirstAndRecallTouchesThem) {
  EpisodeStore store(8);
  ThreadPool pool(1);
  const int64_t now = 2 * kDayMs;
  store.add(episode_at({0.0f, 1.0f}, now));   // cosine 0
  store.add(episode_at({1.0f, 0.0f}, now));   // cosine 1: best
  store.add(episode_at({0.0f, -1.0f}, now));  // cosine -1: worst
  store.add(episode_at({1.0f, 0.0f}, now));   // ties with the second: after it
  const std::vector<float> query = {1.0f, 0.0f};
  EXPECT_EQ(best_episodes(store, centroid_cosines(store, query, pool), now, 3, pool), (std::vector<size_t>{1, 3, 0}));
  EXPECT_EQ(best_episodes(store, centroid_cosines(store, query, pool), now, 10, pool).size(), 4u);

  store.mark_recalled({0}, now + 1000);
  EXPECT_EQ(store.episodes()[0].last_accessed_ms, now + 1000);
  EXPECT_EQ(store.episodes()[0].access_count, 1u);
  // One recall adds 0.3·ln 2 (about 0.21): still below a cosine of 1.
  EXPECT_EQ(best_episodes(store, centroid_cosines(store, query, pool), now + 1000, 1, pool), (std::vector<size_t>{1}));
}

TEST(EpisodeScoring, AFullStoreDropsItsOldestEpisode) {
  EpisodeStore store(2);
  for (int i = 0; i < 3; ++i) store.add(episode_at({1.0f}, i));
  ASSERT_EQ(store.episodes().size(), 2u);
  EXPECT_EQ(store.episodes()[0].id, 2u);
  EXPECT_EQ(store.episodes()[1].id, 3u);
}

TEST(EpisodeScoring, AQueryOfAnotherWidthIsRefused) {
  EpisodeStore store;
  store.add(episode_at({1.0f, 0.0f}, 0));
  ThreadPool pool(1);
  const std::vector<float> query = {1.0f, 0.0f, 0.0f};
  EXPECT_THROW(centroid_cosines(store, query, pool), Error);
}

TEST(EpisodeScoring, AnEpisodeOfAnotherWidthIsRefusedAndTheStoreKept) {
  EpisodeStore store;
  store.add(episode_at({1.0f, 0.0f}, 0));
  EXPECT_THROW(store.add(episode_at({1.0f, 0.0f, 0.0f}, 0)), Error);
  ASSERT_EQ(store.episodes().size(), 1u);
  EXPECT_EQ(store.centroid_rows().size(), 2u);
}

// --- The scan against a straightforward double-precision reference, on random stores.

std::vector<float> random_unit_vector(SplitMix64& random, size_t width) {
  std::vector<float> v(width);
  for (float& x : v) x = random.normal();
  scale_to_unit_length(v);
  return v;
}

Episode random_episode(SplitMix64& random, size_t width, int64_t now) {
  Episode e = episode_at(random_unit_vector(random, width), now - static_cast<int64_t>(random.below(7 * kDayMs)));
  e.access_count = static_cast<uint32_t>(random.below(5));
  e.child_count = static_cast<uint32_t>(random.below(2));
  e.salience = static_cast<float>(random.uniform());
  return e;
}

// The original's formula as §2.8.3 states it, summed in double one element at a time.
double reference_score(const Episode& e, std::span<const float> query, int64_t now) {
  double cosine = 0.0;
  for (size_t i = 0; i < query.size(); ++i) cosine += double{query[i]} * e.centroid[i];
  const double age = static_cast<double>(std::max<int64_t>(0, now - e.last_accessed_ms));
  return cosine + 0.5 * std::exp(-age / 86'400'000.0) + 0.3 * std::log(1.0 + e.child_count + e.access_count) +
         0.2 * e.salience;
}

TEST(EpisodeScoring, TheScanMatchesADoublePrecisionReferenceAndRanksAsIt) {
  SplitMix64 random(3);
  ThreadPool pool(3);  // the scan split over threads, as in a session
  const int64_t now = 40 * kDayMs;
  for (size_t width : {1, 2, 7, 16, 17, 100, 3843}) {
    // Stores that never filled, and ones that dropped their oldest episodes (the centroid
    // matrix's ring turned): 0, 1, 5 and 300 episodes.
    for (auto [capacity, added] : {std::pair<size_t, size_t>{4, 0}, {4, 1}, {5, 5}, {5, 13}, {300, 300}, {300, 451}}) {
      EpisodeStore store(capacity);
      for (size_t i = 0; i < added; ++i) store.add(random_episode(random, width, now));
      const std::vector<float> query = random_unit_vector(random, width);
      const auto& episodes = store.episodes();
      const std::string where = fmt::format("width {}, {} of {} episodes kept", width, episodes.size(), added);

      // Both vectors have unit length, so Σ|q_i c_i| <= 1 and the float sum is within
      // width · FLT_EPSILON of the exact cosine (core/row_dots.h); the norms' own rounding
      // (a few FLT_EPSILON) is what the + 4 covers.
      const double tolerance = (static_cast<double>(width) + 4) * FLT_EPSILON;
      const std::vector<float> cosines = centroid_cosines(store, query, pool);
      ASSERT_EQ(cosines.size(), episodes.size()) << where;
      std::vector<double> reference(episodes.size());
      for (size_t i = 0; i < episodes.size(); ++i) {
        reference[i] = reference_score(episodes[i], query, now);
        EXPECT_NEAR(episode_score(cosines[i], episodes[i], now), reference[i], tolerance) << where << ", episode " << i;
      }

      for (size_t k : {size_t{3}, size_t{128}}) {
        const std::vector<size_t> ranked = best_episodes(store, centroid_cosines(store, query, pool), now, k, pool);
        ASSERT_EQ(ranked.size(), std::min(k, episodes.size())) << where;
        // Ranked in the reference's order wherever two scores are more than the tolerance of
        // each apart, and nothing left out that the reference puts clearly above the last.
        for (size_t r = 1; r < ranked.size(); ++r) {
          EXPECT_GE(reference[ranked[r - 1]], reference[ranked[r]] - 2 * tolerance) << where << ", rank " << r;
        }
        std::vector<bool> taken(episodes.size(), false);
        for (size_t i : ranked) taken[i] = true;
        for (size_t i = 0; i < episodes.size() && !ranked.empty(); ++i) {
          if (!taken[i]) {
            EXPECT_LE(reference[i], reference[ranked.back()] + 2 * tolerance) << where << ", episode " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace channel
