#include "engine/episode_store.h"

#include <algorithm>

#include "core/error.h"

namespace channel {

EpisodeStore::EpisodeStore(size_t capacity) : capacity_(capacity) {
  if (capacity == 0) fail("the episodic store needs a capacity of at least 1 episode");
}

const Episode& EpisodeStore::add(Episode episode) {
  episode.id = next_id_;
  return restore(std::move(episode));
}

const Episode& EpisodeStore::restore(Episode episode) {
  if (episode.id < next_id_) fail("episode id {} does not follow id {}", episode.id, next_id_ - 1);
  keep_centroid(episode.centroid);
  next_id_ = episode.id + 1;
  if (episodes_.size() == capacity_) episodes_.pop_front();
  episodes_.push_back(std::move(episode));
  return episodes_.back();
}

void EpisodeStore::keep_centroid(const std::vector<float>& centroid) {
  if (episodes_.empty()) {
    centroids_.clear();
    centroid_width_ = centroid.size();
    first_row_ = 0;
  } else if (centroid.size() != centroid_width_) {
    fail("an episode's centroid has {} dimensions, the store's {}", centroid.size(), centroid_width_);
  }
  ++centroids_kept_;
  if (episodes_.size() < capacity_) {
    centroids_.insert(centroids_.end(), centroid.begin(), centroid.end());
    return;
  }
  // Full: the oldest episode's row, about to be dropped, becomes the newest one's.
  std::copy(centroid.begin(), centroid.end(), centroids_.begin() + static_cast<std::ptrdiff_t>(first_row_ * centroid_width_));
  first_row_ = (first_row_ + 1) % capacity_;
}

void EpisodeStore::mark_recalled(const std::vector<size_t>& indices, int64_t now_ms) {
  for (size_t i : indices) {
    Episode& episode = episodes_.at(i);
    episode.last_accessed_ms = now_ms;
    ++episode.access_count;
  }
}

}  // namespace channel
