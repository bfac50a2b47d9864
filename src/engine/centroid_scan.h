// Episodic memory's scan: the cosine of every stored episode's centroid with a recall query,
// where the backend computes. On a backend that computes in host memory (the CPU) it reads the
// store's rows in place with a thread pool (episode_scoring.h's centroid_cosines). On a device
// (Backend::make_row_dot_table) it keeps a copy of the rows in the device's memory, brought up to
// date before each scan with the rows committed since the last one, so that a scan streams
// device memory and copies only the query and one float per episode; if the device has no room
// for the copy, the scan stays on the host.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "core/thread_pool.h"
#include "engine/episode_store.h"

namespace channel {

class CentroidScan {
 public:
  // Scans `store` (which must outlive it) on `backend` (likewise), or on the host with
  // host_threads threads.
  CentroidScan(const EpisodeStore& store, Backend& backend, int host_threads);

  // The cosine of each of store.episodes() with the unit-length `query`, in that order. Throws
  // channel::Error when the query's width is not the centroids'.
  std::vector<float> cosines(std::span<const float> query);

  // The indices into store.episodes() of the best `k` episodes for `query` at `now_ms`, best
  // first (episode_scoring.h's best_episodes over this scan's cosines).
  std::vector<size_t> best_episodes(std::span<const float> query, int64_t now_ms, size_t k);

  // Whether the last scan ran on the backend's device.
  bool on_device() const { return device_rows_ != nullptr; }

 private:
  // Makes the device copy the first time there are rows to copy (its width is the first
  // centroid's); nullptr stays where the backend computes on the host or has no room.
  void make_device_rows();
  void copy_new_rows();

  const EpisodeStore& store_;
  Backend& backend_;
  // The host scan's threads. A scan runs between backend calls, never during one, so they and
  // the CPU backend's take turns.
  ThreadPool host_pool_;
  bool device_rows_tried_ = false;
  std::unique_ptr<RowDotTable> device_rows_;
  uint64_t rows_copied_ = 0;  // the store's centroids_kept() when the device copy was last brought up to date
};

}  // namespace channel
