// The episodes a session has committed, in memory (episode_file.h keeps them on disk): at most
// `capacity` of them, the oldest dropped first.
#pragma once

#include <cstddef>
#include <deque>
#include <span>
#include <vector>

#include "engine/episode.h"

namespace channel {

class EpisodeStore {
 public:
  // The original's --mem-capacity default.
  static constexpr size_t kDefaultCapacity = 64;

  explicit EpisodeStore(size_t capacity = kDefaultCapacity);

  // Gives the episode the next id and keeps it, dropping the oldest when full. Every episode of
  // a store has the same centroid width (the first one's); add and restore throw channel::Error
  // for another.
  const Episode& add(Episode episode);
  // Keeps an episode read back from disk with its own id, dropping the oldest when full; later
  // adds continue after it. Throws channel::Error unless the id is above every id given so far.
  const Episode& restore(Episode episode);

  // What a recall does to the episodes it brings back (indices into episodes()): last accessed
  // now, one access more.
  void mark_recalled(const std::vector<size_t>& indices, int64_t now_ms);

  const std::deque<Episode>& episodes() const { return episodes_; }
  size_t capacity() const { return capacity_; }

  // The episodes' centroids as one row-major matrix of centroid_width() columns, one row per
  // episode but not in episodes() order: centroid_row(i) is the row of episodes()[i]. The scan
  // (episode_scoring) reads them from here, at memory speed, not from each Episode's own vector.
  std::span<const float> centroid_rows() const { return centroids_; }
  size_t centroid_width() const { return centroid_width_; }
  size_t centroid_row(size_t episode_index) const { return (first_row_ + episode_index) % episodes_.size(); }
  // Centroids kept so far (every add and restore keeps one): the k-th (from 0) went into row
  // k % capacity(), which is how a copy of the rows elsewhere (engine/centroid_scan.h) finds the
  // rows written since it last looked.
  uint64_t centroids_kept() const { return centroids_kept_; }

 private:
  void keep_centroid(const std::vector<float>& centroid);

  size_t capacity_;
  uint64_t next_id_ = 1;
  std::deque<Episode> episodes_;
  // A ring of at most capacity_ rows in step with episodes_: it grows until the store is full,
  // then the dropped oldest episode's row takes the new centroid and the ring turns by one
  // (first_row_ is the oldest episode's row). Each centroid is thus held twice, in its Episode
  // (what the store file writes) and here: width x 4 bytes per episode, small beside its KV.
  std::vector<float> centroids_;
  size_t centroid_width_ = 0;
  size_t first_row_ = 0;
  uint64_t centroids_kept_ = 0;
};

}  // namespace channel
