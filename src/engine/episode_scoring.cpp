#include "engine/episode_scoring.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"
#include "core/row_dots.h"

namespace channel {
namespace {

// Rows per chunk of the scan: enough that a chunk's start-up cost (a thread's wake-up, the
// query coming into its cache) is small beside streaming its rows in.
constexpr int64_t kScanRowGrain = 64;
// Episodes per chunk of the scoring: an exp and a log1p each (~45 ns an episode on the build
// machine, 0.45 ms for 10,000 on one thread: half the scan's time on 16 threads).
constexpr int64_t kScoreGrain = 256;

}  // namespace

double episode_score(double cosine, const Episode& episode, int64_t now_ms) {
  // An episode touched "in the future" (a clock that went back) counts as just touched.
  const double age_ms = static_cast<double>(std::max<int64_t>(0, now_ms - episode.last_accessed_ms));
  const double uses = static_cast<double>(episode.child_count) + episode.access_count;
  return 1.0 * cosine + 0.5 * std::exp(-age_ms / kRecencyMs) + 0.3 * std::log1p(uses) + 0.2 * episode.salience;
}

void check_query_width(const EpisodeStore& store, std::span<const float> query) {
  if (query.size() != store.centroid_width()) {
    fail("the memory query has {} dimensions, the episodes {}", query.size(), store.centroid_width());
  }
}

std::vector<float> centroid_cosines(const EpisodeStore& store, std::span<const float> query, ThreadPool& pool) {
  const size_t n = store.episodes().size();
  if (n == 0) return {};
  check_query_width(store, query);
  const size_t width = store.centroid_width();
  const std::span<const float> matrix = store.centroid_rows();
  std::vector<float> by_row(n);
  pool.parallel_for(
      static_cast<int64_t>(n),
      [&](int64_t begin, int64_t end) {
        const auto first = static_cast<size_t>(begin), rows = static_cast<size_t>(end - begin);
        dot_rows_f32(matrix.subspan(first * width, rows * width), query, std::span(by_row).subspan(first, rows));
      },
      kScanRowGrain);
  return in_episode_order(store, by_row);
}

std::vector<float> in_episode_order(const EpisodeStore& store, std::span<const float> by_row) {
  const size_t n = store.episodes().size();
  if (by_row.size() != n) fail("{} values for the rows of {} episodes", by_row.size(), n);
  std::vector<float> ordered(n);
  for (size_t i = 0; i < n; ++i) ordered[i] = by_row[store.centroid_row(i)];
  return ordered;
}

std::vector<size_t> best_episodes(const EpisodeStore& store, std::span<const float> cosines, int64_t now_ms,
                                  size_t k, ThreadPool& pool) {
  const auto& episodes = store.episodes();
  if (cosines.size() != episodes.size()) fail("{} cosines for {} episodes", cosines.size(), episodes.size());
  std::vector<double> scores(episodes.size());
  pool.parallel_for(
      static_cast<int64_t>(episodes.size()),
      [&](int64_t begin, int64_t end) {
        for (auto i = static_cast<size_t>(begin); i < static_cast<size_t>(end); ++i) {
          scores[i] = episode_score(cosines[i], episodes[i], now_ms);
        }
      },
      kScoreGrain);
  std::vector<size_t> order(episodes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  const size_t n = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](size_t a, size_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  order.resize(n);
  return order;
}

}  // namespace channel
