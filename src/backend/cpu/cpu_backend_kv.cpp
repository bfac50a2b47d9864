// CpuBackend's KV export and import for snapshots: the f16 keys as written, values, positions and
// moves of chosen slots. Moved keys are re-derived by rotate_keys, the one place that computes a
// moved key, so a restored key is bit-identical to the one exported.
#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <map>

#include "backend/backend_checks.h"
#include "core/error.h"

namespace channel::cpu {

void CpuBackend::read_kv(std::span<const uint32_t> slots, KvBlob& out) const {
  const ModelConfig& config = model_->config();
  begin_kv_export(slots, slot_position_, slot_moved_by_, config.n_kv_layers, out);
  for (int il = 0; il < config.n_kv_layers; ++il) {
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
  check_kv_blob(blob, config);
  std::map<int64_t, std::vector<uint32_t>> slots_by_move;
  for (size_t i = 0; i < blob.slots.size(); ++i) {
    const uint32_t slot = blob.slots[i];
    for (int il = 0; il < config.n_kv_layers; ++il) {
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
