// The episodes a session has committed, in memory (episode_file.h keeps them on disk): at most
// `capacity` of them, the oldest dropped first.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "engine/episode.h"

namespace channel {

class EpisodeStore {
 public:
  // The original's --mem-capacity default.
  static constexpr size_t kDefaultCapacity = 64;

  explicit EpisodeStore(size_t capacity = kDefaultCapacity);

  // Gives the episode the next id and keeps it, dropping the oldest when full.
  const Episode& add(Episode episode);
  // Keeps an episode read back from disk with its own id, dropping the oldest when full; later
  // adds continue after it. Throws channel::Error unless the id is above every id given so far.
  const Episode& restore(Episode episode);

  // What a recall does to the episodes it brings back (indices into episodes()): last accessed
  // now, one access more.
  void mark_recalled(const std::vector<size_t>& indices, int64_t now_ms);

  const std::deque<Episode>& episodes() const { return episodes_; }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  uint64_t next_id_ = 1;
  std::deque<Episode> episodes_;
};

}  // namespace channel
