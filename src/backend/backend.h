// The interface every compute backend (CPU, Vulkan) implements. The engine decides which
// physical KV slots each token is written to and which slots each query reads; a backend only
// computes. It knows nothing of turns, protocol or memory.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/geometry.h"
#include "kv/slot_runs.h"

namespace channel {

// Physical KV slots per layer (the 4096 of the geometry plus the transient scratch), allocated
// once when the backend is made (DESIGN.md §4).
constexpr uint32_t kKvSlots = kv::kPhysicalSlots;

// Tokens to run through the model. Token i is at RoPE position positions[i] and its keys and
// values are stored in KV slot slots[i] of every layer.
struct Batch {
  std::span<const int32_t> tokens;
  std::span<const int32_t> positions;
  std::span<const uint32_t> slots;
};

// The slots each layer type reads, in chronological order, including the batch's own slots.
// A query at position p sees an entry at position q only if q <= p (causal) and, on sliding
// layers, p - q < sliding_window.
struct AttentionView {
  kv::SlotRuns global_slots;
  kv::SlotRuns sliding_slots;
};

enum class LogitsWanted { None, Last, All, Candidates };

// Logits as a row-major [n_rows][n_cols] matrix: n_cols is the vocabulary size, or the number of
// candidates for LogitsWanted::Candidates.
struct Logits {
  int64_t n_rows = 0;
  int64_t n_cols = 0;
  std::vector<float> values;
  std::span<const float> row(int64_t r) const { return {values.data() + r * n_cols, static_cast<size_t>(n_cols)}; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual void forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
                       std::span<const int32_t> candidates, Logits& out) = 0;

  // Moves the keys of `slots` `delta` positions forward (the Givens rotation RoPE composes
  // with), computed from the keys as first written so repeated moves do not accumulate rounding.
  virtual void rotate_keys(std::span<const uint32_t> slots, int64_t delta) = 0;
};

}  // namespace channel
