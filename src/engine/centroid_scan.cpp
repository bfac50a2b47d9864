#include "engine/centroid_scan.h"

#include <algorithm>

#include "core/error.h"
#include "engine/episode_scoring.h"

namespace channel {

CentroidScan::CentroidScan(const EpisodeStore& store, Backend& backend, int host_threads)
    : store_(store), backend_(backend), host_pool_(host_threads) {}

std::vector<float> CentroidScan::cosines(std::span<const float> query) {
  const size_t n = store_.episodes().size();
  if (n == 0) return {};
  if (!device_rows_tried_) make_device_rows();
  if (!device_rows_) return centroid_cosines(store_, query, host_pool_);
  check_query_width(store_, query);
  copy_new_rows();
  std::vector<float> by_row(n);
  device_rows_->dot_rows(query, by_row);
  return in_episode_order(store_, by_row);
}

std::vector<size_t> CentroidScan::best_episodes(std::span<const float> query, int64_t now_ms, size_t k) {
  return channel::best_episodes(store_, cosines(query), now_ms, k, host_pool_);
}

void CentroidScan::make_device_rows() {
  device_rows_tried_ = true;
  try {
    device_rows_ = backend_.make_row_dot_table(store_.capacity(), store_.centroid_width());
  } catch (const Error&) {
    device_rows_ = nullptr;  // no room on the device: the host scan gives the same cosines
  }
}

void CentroidScan::copy_new_rows() {
  const uint64_t kept = store_.centroids_kept();
  const uint64_t capacity = store_.capacity();
  const size_t width = store_.centroid_width();
  // Centroid k went into row k % capacity: the rows of centroids [rows_copied_, kept), of which
  // only the last `capacity` still stand, in at most two runs (the ring's end and its start).
  uint64_t next = std::max(rows_copied_, kept > capacity ? kept - capacity : 0);
  while (next < kept) {
    const uint64_t row = next % capacity;
    const uint64_t n = std::min(kept - next, capacity - row);
    device_rows_->write_rows(row, store_.centroid_rows().subspan(row * width, n * width));
    next += n;
  }
  rows_copied_ = kept;
}

}  // namespace channel
