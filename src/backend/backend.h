// The interface every compute backend (CPU, Vulkan) implements. The engine decides which
// physical KV slots each token is written to and which slots each query reads; a backend only
// computes. It knows nothing of turns, protocol or memory.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
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
  // Asked before each layer (CPU) or chunk of layers (GPU: one submission) if set: once it
  // answers true, forward() stops and returns false.
  // The batch's slots then hold the KV of some layers only; the caller restores them
  // (StreamContext does).
  std::function<bool()> cancelled;
  // If set, receives the last token's final hidden state once forward() completes: the input
  // of the output norm (the residual stream after the last layer), n_embd floats. Episodic
  // memory stages it per decoded token; it is the pre-norm state, in the embeddings' own space,
  // because the recall query before a prefill is a sum of input embeddings (the output norm's
  // per-channel weights would turn the centroids away from that space), and because it is what
  // the original stages (its residual buffer x).
  std::vector<float>* last_hidden = nullptr;
};

// The slots each layer type reads, in chronological order, including the batch's own slots.
// A query at position p sees an entry at position q only if q <= p (causal) and, on sliding
// layers, p - q < sliding_window.
struct AttentionView {
  kv::SlotRuns global_slots;
  kv::SlotRuns sliding_slots;
};

enum class LogitsWanted { None, Last, All, Candidates };

// The KV of some slots, as a backend exports and re-imports it (snapshots). Keys are kept as
// first written, with how far rotate_keys has moved each one since: the backend derives the
// current key from these exactly as rotate_keys does, so a restored key is bit-identical and
// later moves still start from the written key. Entries follow `slots`; one layer per layer that
// owns KV (ModelConfig::n_kv_layers), whose arrays are
// [slots.size()][n_head_kv * head_dim] f16 bit patterns.
struct KvBlob {
  struct Layer {
    std::vector<uint16_t> k_as_written;
    std::vector<uint16_t> v;
    bool operator==(const Layer&) const = default;
  };
  std::vector<uint32_t> slots;
  std::vector<int32_t> positions;  // RoPE position of each slot's key now
  std::vector<int64_t> moved_by;   // positions rotate_keys moved each key since it was written
  std::vector<Layer> layers;
  bool operator==(const KvBlob&) const = default;
};

// Logits as a row-major [n_rows][n_cols] matrix: n_cols is the vocabulary size, or the number of
// candidates for LogitsWanted::Candidates.
struct Logits {
  int64_t n_rows = 0;
  int64_t n_cols = 0;
  std::vector<float> values;
  std::span<const float> row(int64_t r) const { return {values.data() + r * n_cols, static_cast<size_t>(n_cols)}; }
  bool operator==(const Logits&) const = default;
};

// A matrix of float rows kept in a backend's own memory, and every row's dot product with a
// vector: episodic memory's centroid scan (engine/centroid_scan.h) on a device whose memory is
// not the host's, so that a recall streams the centroids from device memory instead of
// copying them there each time. Rows are written as episodes are committed.
class RowDotTable {
 public:
  virtual ~RowDotTable() = default;
  virtual size_t rows() const = 0;
  virtual size_t width() const = 0;
  // Overwrites rows [first_row, first_row + values.size() / width()). Throws channel::Error when
  // they do not fit the table.
  virtual void write_rows(size_t first_row, std::span<const float> values) = 0;
  // out[r] = Σ_i row r[i] · vector[i] for the first out.size() rows, summed in float (in the
  // device's order: within the bound core/row_dots.h states for the CPU's). Throws
  // channel::Error when the sizes do not fit the table.
  virtual void dot_rows(std::span<const float> vector, std::span<float> out) = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Runs the batch; false if it was cancelled (Batch::cancel) before its last layer.
  virtual bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
                       std::span<const int32_t> candidates, Logits& out) = 0;

  // Moves the keys of `slots` `delta` positions forward (the Givens rotation RoPE composes
  // with), computed from the keys as first written so repeated moves do not accumulate rounding.
  virtual void rotate_keys(std::span<const uint32_t> slots, int64_t delta) = 0;

  // Copies the KV of `slots` (written slots below kv::kTotalSlots) into `out`.
  virtual void read_kv(std::span<const uint32_t> slots, KvBlob& out) const = 0;
  // Writes `blob` back into its slots. Throws channel::Error, with nothing changed, when the
  // blob does not fit this model and geometry (layer count, sizes, slots, positions).
  virtual void write_kv(const KvBlob& blob) = 0;

  // A table of `rows` rows of `width` floats in this backend's memory (unset values zero), or
  // nullptr where the backend computes in host memory: there the scan reads the host's rows in
  // place (core/row_dots.h), and a copy would only double them. The table must not outlive the
  // backend. Throws channel::Error when the device has no room for it.
  virtual std::unique_ptr<RowDotTable> make_row_dot_table(size_t rows, size_t width) = 0;

  // What the backend runs on, for logs, STATUS (is_gpu) and benchmark reports.
  virtual std::string description() const = 0;
  virtual bool is_gpu() const = 0;
};

}  // namespace channel
