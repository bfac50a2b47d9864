// The checks every backend makes before it changes anything: a forward pass's inputs and a KV
// blob to import. Backends share them so that each refuses bad input with the same message.
#pragma once

#include <limits>
#include <span>
#include <string_view>
#include <unordered_set>

#include "backend/backend.h"
#include "core/error.h"
#include "model/model_config.h"

namespace channel {

inline size_t kv_width(const LayerConfig& layer) { return static_cast<size_t>(layer.n_head_kv) * layer.head_dim; }

// Token ids outside the vocabulary, slots outside the cache, negative positions, mismatched
// spans, bad candidates.
inline void check_forward_inputs(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
                                 std::span<const int32_t> candidates, int n_vocab) {
  if (batch.tokens.empty()) fail("empty batch");
  if (batch.positions.size() != batch.tokens.size() || batch.slots.size() != batch.tokens.size()) {
    fail("batch has {} tokens but {} positions and {} slots", batch.tokens.size(), batch.positions.size(), batch.slots.size());
  }
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    if (batch.tokens[i] < 0 || batch.tokens[i] >= n_vocab) {
      fail("token id {} is outside the vocabulary (0..{})", batch.tokens[i], n_vocab - 1);
    }
    if (batch.slots[i] >= kKvSlots) fail("KV slot {} is outside the cache (0..{})", batch.slots[i], kKvSlots - 1);
    if (batch.positions[i] < 0) fail("negative position {}", batch.positions[i]);
  }
  for (const kv::SlotRuns* slots : {&view.global_slots, &view.sliding_slots}) {
    if (slots->size() > kKvSlots) fail("attention view lists {} slots, more than the cache has", slots->size());
    slots->for_each([](uint32_t s) {
      if (s >= kKvSlots) fail("attention view slot {} is outside the cache", s);
    });
  }
  if (wanted == LogitsWanted::Candidates) {
    if (candidates.empty()) fail("no candidate tokens given");
    for (int32_t c : candidates) {
      if (c < 0 || c >= n_vocab) fail("candidate token id {} is outside the vocabulary", c);
    }
  }
}

// rotate_keys and read_kv work on written committed slots only: `action` names the call.
inline void check_written_slots(std::span<const uint32_t> slots, std::span<const int32_t> slot_position,
                                std::string_view action) {
  for (uint32_t slot : slots) {
    if (slot >= kv::kTotalSlots) fail("cannot {} scratch slot {}", action, slot);
    if (slot_position[slot] < 0) fail("cannot {} empty slot {}", action, slot);
  }
}

// read_kv's first step in every backend: the slots checked, and the blob's slot table (slots,
// positions, moves) filled, its layers (one per layer that owns KV) left empty for the backend's
// keys and values.
inline void begin_kv_export(std::span<const uint32_t> slots, std::span<const int32_t> slot_position,
                            std::span<const int64_t> slot_moved_by, int n_kv_layers, KvBlob& out) {
  check_written_slots(slots, slot_position, "read");
  out.slots.assign(slots.begin(), slots.end());
  out.positions.clear();
  out.moved_by.clear();
  for (uint32_t slot : slots) {
    out.positions.push_back(slot_position[slot]);
    out.moved_by.push_back(slot_moved_by[slot]);
  }
  out.layers.assign(static_cast<size_t>(n_kv_layers), {});
}

// Everything write_kv checks before it changes anything.
inline void check_kv_blob(const KvBlob& blob, const ModelConfig& config) {
  const size_t n = blob.slots.size();
  if (blob.positions.size() != n || blob.moved_by.size() != n) {
    fail("KV blob has {} slots but {} positions and {} moves", n, blob.positions.size(), blob.moved_by.size());
  }
  if (blob.layers.size() != static_cast<size_t>(config.n_kv_layers)) {
    fail("KV blob has {} layers, the model {} with KV", blob.layers.size(), config.n_kv_layers);
  }
  std::unordered_set<uint32_t> seen;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t slot = blob.slots[i];
    if (slot >= kv::kTotalSlots) fail("KV blob slot {} is outside the committed slots (0..{})", slot, kv::kTotalSlots - 1);
    if (!seen.insert(slot).second) fail("KV blob lists slot {} twice", slot);
    // The key was written at positions - moved_by, which must be a position too.
    const int64_t written = int64_t{blob.positions[i]} - blob.moved_by[i];
    if (blob.positions[i] < 0 || written < 0 || written > std::numeric_limits<int32_t>::max()) {
      fail("KV blob slot {}: position {} moved by {} is not a position a key can have", slot, blob.positions[i],
           blob.moved_by[i]);
    }
  }
  for (int il = 0; il < config.n_kv_layers; ++il) {
    const size_t expected = n * kv_width(config.layers[il]);
    const KvBlob::Layer& layer = blob.layers[il];
    if (layer.k_as_written.size() != expected || layer.v.size() != expected) {
      fail("KV blob layer {} holds {} keys and {} values, expected {} each ({} slots x {})", il,
           layer.k_as_written.size(), layer.v.size(), expected, n, kv_width(config.layers[il]));
    }
  }
}

}  // namespace channel
