// CpuBackend's KV export and import for snapshots: the f16 keys as written, values, positions and
// moves of chosen slots. Moved keys are re-derived by rotate_keys, the one place that computes a
// moved key, so a restored key is bit-identical to the one exported.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>

#include "core/error.h"

namespace channel::cpu {
namespace {

size_t kv_width(const LayerConfig& layer) { return static_cast<size_t>(layer.n_head_kv) * layer.head_dim; }

// Everything write_kv checks before it changes anything.
void validate_blob(const KvBlob& blob, const ModelConfig& config) {
  const size_t n = blob.slots.size();
  if (blob.positions.size() != n || blob.moved_by.size() != n) {
    fail("KV blob has {} slots but {} positions and {} moves", n, blob.positions.size(), blob.moved_by.size());
  }
  if (blob.layers.size() != static_cast<size_t>(config.n_layer)) {
    fail("KV blob has {} layers, the model {}", blob.layers.size(), config.n_layer);
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
  for (int il = 0; il < config.n_layer; ++il) {
    const size_t expected = n * kv_width(config.layers[il]);
    const KvBlob::Layer& layer = blob.layers[il];
    if (layer.k_as_written.size() != expected || layer.v.size() != expected) {
      fail("KV blob layer {} holds {} keys and {} values, expected {} each ({} slots x {})", il,
           layer.k_as_written.size(), layer.v.size(), expected, n, kv_width(config.layers[il]));
    }
  }
}

}  // namespace

void CpuBackend::read_kv(std::span<const uint32_t> slots, KvBlob& out) const {
  for (uint32_t slot : slots) {
    if (slot >= kv::kTotalSlots) fail("cannot read scratch slot {}", slot);
    if (slot_position_[slot] < 0) fail("cannot read empty slot {}", slot);
  }
  const ModelConfig& config = model_->config();
  out.slots.assign(slots.begin(), slots.end());
  out.positions.clear();
  out.moved_by.clear();
  for (uint32_t slot : slots) {
    out.positions.push_back(slot_position_[slot]);
    out.moved_by.push_back(slot_moved_by_[slot]);
  }
  out.layers.assign(static_cast<size_t>(config.n_layer), {});
  for (int il = 0; il < config.n_layer; ++il) {
    const size_t width = kv_width(config.layers[il]);
    const LayerCache& cache = cache_[il];
    KvBlob::Layer& layer = out.layers[il];
    layer.k_as_written.resize(slots.size() * width);
    layer.v.resize(slots.size() * width);
    for (size_t i = 0; i < slots.size(); ++i) {
      const size_t at = static_cast<size_t>(slots[i]) * width;
      // An unmoved key is its written key; k_as_written holds only moved ones.
      const std::vector<uint16_t>& keys = slot_moved_by_[slots[i]] != 0 ? cache.k_as_written : cache.k;
      std::copy_n(keys.data() + at, width, layer.k_as_written.data() + i * width);
      std::copy_n(cache.v.data() + at, width, layer.v.data() + i * width);
    }
  }
}

void CpuBackend::write_kv(const KvBlob& blob) {
  const ModelConfig& config = model_->config();
  validate_blob(blob, config);
  std::map<int64_t, std::vector<uint32_t>> slots_by_move;
  for (size_t i = 0; i < blob.slots.size(); ++i) {
    const uint32_t slot = blob.slots[i];
    for (int il = 0; il < config.n_layer; ++il) {
      const size_t width = kv_width(config.layers[il]);
      LayerCache& cache = cache_[il];
      std::copy_n(blob.layers[il].k_as_written.data() + i * width, width, cache.k.data() + slot * width);
      std::copy_n(blob.layers[il].v.data() + i * width, width, cache.v.data() + slot * width);
    }
    slot_position_[slot] = static_cast<int32_t>(blob.positions[i] - blob.moved_by[i]);
    slot_moved_by_[slot] = 0;
    if (blob.moved_by[i] != 0) slots_by_move[blob.moved_by[i]].push_back(slot);
  }
  // Each key is now as written at its written position; moving it as the original was moved
  // recomputes the same key and position.
  for (const auto& [delta, slots] : slots_by_move) rotate_keys(slots, delta);
}

}  // namespace channel::cpu
