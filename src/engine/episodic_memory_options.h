// How a session keeps episodic memory (serve's --no-memory, --mem-capacity, --memory [PATH]).
#pragma once

#include <cstddef>
#include <string>

#include "engine/episode_store.h"

namespace channel {

struct EpisodicMemoryOptions {
  bool enabled = true;  // false: nothing is staged or committed
  size_t capacity = EpisodeStore::kDefaultCapacity;
  std::string path;  // the store file (docs/memory-format.md); empty: in memory only
  int scan_threads = 1;  // threads of a recall's scan of the centroids (serve: --threads)
};

}  // namespace channel
