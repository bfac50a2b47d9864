#include "engine/episode_store.h"

#include "core/error.h"

namespace channel {

EpisodeStore::EpisodeStore(size_t capacity) : capacity_(capacity) {
  if (capacity == 0) fail("the episodic store needs a capacity of at least 1 episode");
}

const Episode& EpisodeStore::add(Episode episode) {
  episode.id = next_id_++;
  if (episodes_.size() == capacity_) episodes_.pop_front();
  episodes_.push_back(std::move(episode));
  return episodes_.back();
}

void EpisodeStore::mark_recalled(const std::vector<size_t>& indices, int64_t now_ms) {
  for (size_t i : indices) {
    Episode& episode = episodes_.at(i);
    episode.last_accessed_ms = now_ms;
    ++episode.access_count;
  }
}

}  // namespace channel
