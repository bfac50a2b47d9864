// Attention of a batch of queries over cached f16 keys and values, following the arithmetic of
// llama.cpp's CPU flash attention (ggml-cpu ops.cpp, as built for AVX-512: libggml-cpu-zen4) so
// that logits agree with the peer closely enough for quantized models too, where any difference
// can flip an int8 rounding of the next layer's activations. Three schemes, chosen the way
// llama.cpp chooses them:
//
//   - one-row (batches of fewer than kTiledMinQueries tokens, including decode): per query head,
//     Q rounded to f16, scores by ggml_vec_dot_f16 (4 accumulators of 16 f32 lanes over 64-element
//     steps, reduced in a fixed tree, elements past the last whole step added in double), an
//     online softmax with expf, and the weighted sum of values kept in an f16 accumulator: on a
//     new maximum the accumulator is scaled and rounded to f16, then each value is added with a
//     fused multiply-add and rounded to f16;
//   - split-KV (single-token decode once llama.cpp's KV view, the used cells padded to a multiple
//     of 256, reaches kSplitKvMinCells, i.e. past 256 cells): the one-row scheme on each of
//     `kv_split_threads` consecutive chunks of that view, the chunks' partial results then
//     combined in f32 in chunk order;
//   - tiled (batches of kTiledMinQueries tokens or more, head sizes a multiple of 16): per 64-cell
//     tile, f32 scores (a fused multiply-add chain over the head dimensions), the tile's maximum,
//     its exponentials by ggml's AVX-512 polynomial (ggml_v_expf) and their sum (4 groups of 16
//     in a fixed tree, groups added in double), and the weighted sum of values in f32 (a fused
//     multiply-add chain over the tile's keys); 1/sum applied at the end.
//
// Cells. llama.cpp's tiles and chunks are aligned to KV cell indices counted from cell 0, and it
// visits keys in cell order. Here the listed keys are taken to occupy consecutive cells starting
// at `first_cell` in list order. On a fresh stream (no eviction, no moved keys, fewer tokens than
// the ring holds) list order is chronological and a key's cell in llama.cpp is its position, so
// the caller passes the first listed key's position; elsewhere llama.cpp has no equivalent and
// this is only a fixed, deterministic grouping. llama.cpp's split-KV chunks also depend on its
// KV size (cells padded to a multiple of 256, modelled as max(256, first_cell + listed rounded
// up to 256), assuming its cache is large enough) and on its thread count (`kv_split_threads`).
//
// Checked bit for bit against ggml_flash_attn_ext of the prebuilt peer (libggml-cpu-zen4) on
// random problems of all three schemes, and on the Q/K/V llama.cpp itself computes in a model.
// Everything else assumes the query is pre-scaled (the KQ scale is 1, as for Gemma 3 and 4), no
// soft-capping, no ALiBi, no sinks, and finite keys and values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace channel {
class ThreadPool;
}

namespace channel::cpu {

inline constexpr int64_t kTiledMinQueries = 64;   // llama.cpp's GGML_FA_TILE_Q
inline constexpr int64_t kKvTileCells = 64;       // llama.cpp's GGML_FA_TILE_KV
inline constexpr int64_t kSplitKvMinCells = 512;  // split-KV decode from this KV size
inline constexpr int64_t kKvCellPadding = 256;    // llama.cpp pads its KV view to this many cells

enum class AttentionScheme { kAuto, kOneRow, kSplitKv, kTiled };

struct AttentionProblem {
  int head_dim = 0;
  int n_head = 0;
  int n_head_kv = 0;  // n_head is a multiple; query head h reads KV head h / (n_head / n_head_kv)

  // Queries: [n_tokens][n_head * head_dim] f32, already normed, rotated and scaled; the results
  // go to `out`, same layout. Token t sees the keys whose position p satisfies
  // min_position[t] <= p <= max_position[t] (and p >= 0).
  int64_t n_tokens = 0;
  const float* q = nullptr;
  float* out = nullptr;
  std::span<const int32_t> min_position;
  std::span<const int32_t> max_position;

  // Keys and values, f16: those of slot s and KV head g start at k + s * kv_stride + g * head_dim
  // (and v likewise). `slots` lists the cells attended over, in order; slot_positions[s] is the
  // position of the key in slot s (negative: empty, never visible).
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  size_t kv_stride = 0;
  std::span<const uint32_t> slots;
  std::span<const int32_t> slot_positions;
  int64_t first_cell = 0;  // llama.cpp cell index of slots[0] (see "Cells" above)

  // llama.cpp's thread count, the number of its split-KV chunks: the CPU backend passes its own
  // (--threads), so a decode past 512 cells adds as llama.cpp run with the same thread count does.
  int kv_split_threads = 1;
  AttentionScheme scheme = AttentionScheme::kAuto;  // forced for tests
};

// The scheme llama.cpp would use for `p` (p.scheme unless kAuto).
AttentionScheme attention_scheme(const AttentionProblem& p);

// llama.cpp's KV view size in cells: the listed cells rounded up to kKvCellPadding, at least that.
int64_t padded_kv_cells(const AttentionProblem& p);

// attend()'s working memory, kept by its caller between calls so that attention allocates
// nothing once warm (a decode step attends once per layer): a grow-only buffer per pool thread
// and the split-KV partial results. One per caller: two attend() calls may not share one at once.
class AttentionScratch {
 public:
  AttentionScratch();
  ~AttentionScratch();
  AttentionScratch(const AttentionScratch&) = delete;
  AttentionScratch& operator=(const AttentionScratch&) = delete;

 private:
  friend void attend(const AttentionProblem& p, ThreadPool& pool, AttentionScratch& scratch);
  struct State;
  std::unique_ptr<State> state_;
};

// SIMD kernels (Highway, dispatched at run time), work split over `pool`.
void attend(const AttentionProblem& p, ThreadPool& pool, AttentionScratch& scratch);

// Scalar implementation of the same arithmetic, one query head at a time; bit-identical to
// attend() (tests compare them).
void attend_reference(const AttentionProblem& p);

}  // namespace channel::cpu
