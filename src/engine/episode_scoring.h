// Episodic memory's scoring (original-channel.md §2.8.3), over the in-memory store:
//   score = 1.0·cos(query, centroid) + 0.5·exp(−(now − last_accessed) / 1 day)
//         + 0.3·ln(1 + child_count + access_count) + 0.2·salience
// with `now` and last_accessed both on monotonic_milliseconds(): the original passed its token
// clock as `now`, so its recency term was ≈1 for every episode (and a recall overwrote
// last_accessed with a clock value).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "engine/episode_store.h"

namespace channel {

// The recency term's time constant, in milliseconds (the original's λ = 1/86,400,000).
inline constexpr double kRecencyMs = 86'400'000.0;

// The score of `episode` whose centroid has `cosine` with the query.
double episode_score(double cosine, const Episode& episode, int64_t now_ms);

// Throws channel::Error when `query` is not as wide as the store's centroids.
void check_query_width(const EpisodeStore& store, std::span<const float> query);

// The cosine of each episode's centroid with `query` (unit length, as the centroids: then the
// dot product is the cosine), indexed as store.episodes(). The scan reads the store's centroid
// matrix once, split over `pool`, with float sums (core/row_dots.h: each cosine within
// width · FLT_EPSILON of the exact one, as both vectors have unit length). Throws channel::Error
// when the query's width is not the centroids'.
std::vector<float> centroid_cosines(const EpisodeStore& store, std::span<const float> query, ThreadPool& pool);

// Values given per centroid row (store.centroid_rows()) put in store.episodes() order.
std::vector<float> in_episode_order(const EpisodeStore& store, std::span<const float> by_row);

// The indices into store.episodes() of the best `k` episodes, best first (ties: the older
// first), given each one's cosine with the query (centroid_cosines, or centroid_scan.h); the
// scores are computed over `pool`.
std::vector<size_t> best_episodes(const EpisodeStore& store, std::span<const float> cosines, int64_t now_ms,
                                  size_t k, ThreadPool& pool);

}  // namespace channel
