#include "engine/episode_scoring.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace channel {

double episode_score(const Episode& episode, std::span<const float> query, int64_t now_ms) {
  if (query.size() != episode.centroid.size()) {
    fail("the memory query has {} dimensions, the episodes {}", query.size(), episode.centroid.size());
  }
  double cosine = 0.0;
  for (size_t i = 0; i < query.size(); ++i) cosine += static_cast<double>(query[i]) * episode.centroid[i];
  // An episode touched "in the future" (a clock that went back) counts as just touched.
  const double age_ms = static_cast<double>(std::max<int64_t>(0, now_ms - episode.last_accessed_ms));
  const double uses = static_cast<double>(episode.child_count) + episode.access_count;
  return 1.0 * cosine + 0.5 * std::exp(-age_ms / kRecencyMs) + 0.3 * std::log1p(uses) + 0.2 * episode.salience;
}

std::vector<size_t> best_episodes(const EpisodeStore& store, std::span<const float> query, int64_t now_ms, size_t k) {
  const auto& episodes = store.episodes();
  std::vector<double> scores(episodes.size());
  for (size_t i = 0; i < episodes.size(); ++i) scores[i] = episode_score(episodes[i], query, now_ms);
  std::vector<size_t> order(episodes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t n = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](size_t a, size_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  order.resize(n);
  return order;
}

}  // namespace channel
