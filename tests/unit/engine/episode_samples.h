// Episodes for the episode store's tests and the fuzzer's seed corpus: a small header (two KV
// layers of different widths) and episodes whose every field, KV included, depends on a seed.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/episode_format.h"

namespace channel::test {

inline EpisodeFileHeader sample_episode_header(uint64_t fingerprint = 0x0123456789abcdefull) {
  return {fingerprint, 16, {8, 12}};
}

// `seed` picks every value; the id is left 0 for the store to give.
inline Episode sample_episode(uint64_t seed, uint32_t n_tokens = 5, const EpisodeFileHeader& header = sample_episode_header()) {
  uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
  const auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  Episode e;
  e.parent_id = next() % 3;
  e.created_ms = static_cast<int64_t>(next());
  e.last_accessed_ms = e.created_ms + static_cast<int64_t>(next() % 1000);
  e.start_clock = static_cast<int64_t>(next() % 100000);
  e.access_count = static_cast<uint32_t>(next() % 7);
  e.child_count = static_cast<uint32_t>(next() % 2);
  e.salience = 1.0f;
  e.interrupted = next() % 2 == 1;
  for (uint32_t i = 0; i < header.centroid_width; ++i) e.centroid.push_back(static_cast<float>(next() % 2000) / 1000.0f - 1.0f);
  if (seed % 4 == 3) e.centroid[0] = std::nanf("");  // must come back bit for bit too
  for (uint32_t i = 0; i < n_tokens; ++i) {
    e.tokens.push_back(static_cast<int32_t>(next() % 262144));
    e.clocks.push_back(e.start_clock + i);
    e.kv.slots.push_back(static_cast<uint32_t>((e.start_clock + i) % 3968));
    e.kv.positions.push_back(static_cast<int32_t>(e.start_clock + i));
    e.kv.moved_by.push_back(static_cast<int64_t>(next() % 5));
  }
  e.continuation_token = e.tokens.back();
  for (uint32_t width : header.kv_widths) {
    KvBlob::Layer layer;
    for (uint32_t i = 0; i < n_tokens * width; ++i) {
      layer.k_as_written.push_back(static_cast<uint16_t>(next()));
      layer.v.push_back(static_cast<uint16_t>(next()));
    }
    e.kv.layers.push_back(std::move(layer));
  }
  return e;
}

}  // namespace channel::test
