// SIMD attention kernels (Highway, one compilation per target, dispatched at run time) and the
// work split. The arithmetic is attention_reference.cpp's, operation for operation: what differs
// is only which independent operations run side by side.
//
// - One-row and split-KV: one work item is one token, one KV head (all query heads reading it:
//   the keys and values are loaded once per group, or a part of the group where the items would
//   be fewer than the threads) and one range of cells. Keys are taken in
//   blocks: scores of the block for every head of the group, then the online-softmax bookkeeping
//   (scalar, in key order), then the f16 accumulators updated with the block's values a few
//   vectors of head dimensions at a time, held in registers across the block's keys.
// - Tiled: one work item is one KV head and a tile of query rows (tokens x heads of the group),
//   with the rows in SIMD lanes: scores are fused multiply-add chains over the head dimensions
//   against broadcast key elements, the per-tile maximum, exponentials and their tree sums are
//   computed for all rows of the tile at once; the weighted sum of values has the head
//   dimensions in lanes.
//
// Targets without fused multiply-add (SSSE3, SSE4, scalar fallbacks) and scalable vectors run the
// scalar reference for each work item.
#include "backend/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <hwy/aligned_allocator.h>

#include "backend/cpu/attention_detail.h"
#include "core/error.h"
#include "core/half.h"
#include "core/thread_pool.h"

// Highway compiles this file once per SIMD target and dispatches at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/attention.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#ifndef CHANNEL_ATTENTION_ITEMS_DEFINED
#define CHANNEL_ATTENTION_ITEMS_DEFINED
namespace channel::cpu::attention_detail {

// Grow-only scratch memory of one thread (no allocation once warm).
class Scratch {
 public:
  template <typename T>
  T* get(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes > bytes_) {
      data_ = hwy::AllocateAligned<uint8_t>(bytes);
      bytes_ = bytes;
    }
    return reinterpret_cast<T*>(data_.get());
  }

 private:
  hwy::AlignedFreeUniquePtr<uint8_t[]> data_;
  size_t bytes_ = 0;
};

// A one-row work item: query token t, query heads [head, head + n_heads) of KV head g, listed
// cells [begin, end); partials[i] receives query head head + i. `scratch` is the running thread's.
struct OneRowItem {
  int64_t t = 0;
  int g = 0;
  int head = 0, n_heads = 1;
  int64_t begin = 0, end = 0;
  OneRowPartial* partials = nullptr;
  bool finish = false;  // write partials[i].vkq / s in place (no split)
  Scratch* scratch = nullptr;
};

// A tiled work item: KV head g, query rows [row_begin, row_end) of that KV head, row r being
// token r / group and query head g * group + r % group. `scratch` is the running thread's.
struct TiledItem {
  int g = 0;
  int64_t row_begin = 0, row_end = 0;
  Scratch* scratch = nullptr;
};

}  // namespace channel::cpu::attention_detail
#endif

HWY_BEFORE_NAMESPACE();
namespace channel::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace attention_detail;

#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128 || HWY_HAVE_SCALABLE || !HWY_NATIVE_FMA

void RunOneRow(const AttentionProblem& p, const OneRowItem& item) {
  for (int i = 0; i < item.n_heads; ++i) {
    OneRowPartial& r = item.partials[i];
    one_row_reference(p, item.t, item.head + i, item.begin, item.end, r);
    if (item.finish) finish_one_row(r, p.head_dim, r.vkq);
  }
}

size_t TiledRowsPerItem() { return static_cast<size_t>(kTiledMinQueries); }

void RunTiled(const AttentionProblem& p, const TiledItem& item) {
  const int group = p.n_head / p.n_head_kv;
  for (int64_t row = item.row_begin; row < item.row_end; ++row) {
    const int64_t t = row / group;
    const int h = item.g * group + static_cast<int>(row % group);
    tiled_row_reference(p, t, h, p.out + (t * p.n_head + h) * p.head_dim);
  }
}

#else  // fixed-width SIMD with fused multiply-add

using DF = hn::CappedTag<float, 16>;  // ggml's accumulators are 16 lanes: 1, 2 or 4 vectors
using VF = hn::Vec<DF>;
using DH = hn::Rebind<hwy::float16_t, DF>;
using DI = hn::RebindToSigned<DF>;
constexpr size_t kLanes = hn::MaxLanes(DF());
constexpr size_t kVecsPer16 = 16 / kLanes;

HWY_INLINE VF LoadF16(const uint16_t* p) {
  return hn::PromoteTo(DF(), hn::LoadU(DH(), reinterpret_cast<const hwy::float16_t*>(p)));
}

HWY_INLINE VF RoundF16(VF v) { return hn::PromoteTo(DF(), hn::DemoteTo(DH(), v)); }

float RoundF16(float x) { return f16_to_f32(f32_to_f16(x)); }

// Sum of the lanes as _mm512_reduce_add_ps adds them: halves, 8, 4, 2, 1 lanes.
template <class D, class V>
HWY_INLINE float ReduceHalves(D d, V v) {
  if constexpr (hn::MaxLanes(D()) == 1) {
    return hn::GetLane(v);
  } else {
    const hn::Half<D> dh;
    return ReduceHalves(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
}

// reduce16 of 16 lanes held in kVecsPer16 vectors.
HWY_INLINE float Reduce16(VF (&x)[kVecsPer16]) {
  for (size_t n = kVecsPer16 / 2; n >= 1; n /= 2) {
    for (size_t i = 0; i < n; ++i) x[i] = hn::Add(x[i], x[i + n]);
  }
  return ReduceHalves(DF(), x[0]);
}

// The whole 64-element steps of ggml_vec_dot_f16 for one key and kHeads f16-rounded queries
// (rows of q16, `dim` apart): the reduced f32 sum (the leftovers are added in ScoreBlock).
template <int kHeads>
HWY_INLINE void DotF16Steps(const float* q16, const uint16_t* key, int whole, int dim, float* sums, int stride) {
  const DF df;
  VF acc[kHeads][4][kVecsPer16];
  for (int h = 0; h < kHeads; ++h) {
    for (int j = 0; j < 4; ++j) {
      for (size_t v = 0; v < kVecsPer16; ++v) acc[h][j][v] = hn::Zero(df);
    }
  }
  for (int i = 0; i < whole; i += 64) {
    for (int j = 0; j < 4; ++j) {
      for (size_t v = 0; v < kVecsPer16; ++v) {
        const size_t offset = i + 16 * j + kLanes * v;
        const VF k = LoadF16(key + offset);
        for (int h = 0; h < kHeads; ++h) acc[h][j][v] = hn::MulAdd(hn::LoadU(df, q16 + h * dim + offset), k, acc[h][j][v]);
      }
    }
  }
  for (int h = 0; h < kHeads; ++h) {
    VF lanes[kVecsPer16];
    for (size_t v = 0; v < kVecsPer16; ++v) {
      lanes[v] = hn::Add(hn::Add(acc[h][0][v], acc[h][2][v]), hn::Add(acc[h][1][v], acc[h][3][v]));
    }
    sums[h * stride] = Reduce16(lanes);
  }
}

// How many query heads share one pass over a key: their accumulators must fit the registers.
constexpr int kDotHeads = kLanes >= 16 ? 4 : 1;
constexpr int kOneRowBlock = 32;  // keys per block
// Accumulator vectors of head dimensions held across a block. Each is a chain of f16 roundings
// (convert, FMA, convert back) key after key, so the vectors of a pass are what keeps the
// converters busy: 8 decoded 4096 keys ~1.45x as fast as 4 on an AVX2 guest (docs/benchmarks.md).
constexpr size_t kVkqVecs = 8;

// One block of visible keys for the heads of a group (the one-row scheme).
struct OneRowBlock {
  const uint16_t* keys[kOneRowBlock];
  const uint16_t* values[kOneRowBlock];
  int n = 0;
};

template <size_t kVecs>
HWY_INLINE void AccumulateValues(const OneRowBlock& block, const float* rescale, const float* weight, size_t d0,
                                 float* vkq) {
  const DF df;
  VF acc[kVecs];
  for (size_t c = 0; c < kVecs; ++c) acc[c] = hn::LoadU(df, vkq + d0 + c * kLanes);
  for (int j = 0; j < block.n; ++j) {
    if (rescale[j] != 1.0f) {  // ggml_vec_scale_f16 on a new maximum (a scale of 1 changes nothing)
      const VF ms = hn::Set(df, rescale[j]);
      for (size_t c = 0; c < kVecs; ++c) acc[c] = RoundF16(hn::Mul(acc[c], ms));
    }
    const VF vs = hn::Set(df, weight[j]);  // ggml_vec_mad_f16
    for (size_t c = 0; c < kVecs; ++c) acc[c] = RoundF16(hn::MulAdd(LoadF16(block.values[j] + d0 + c * kLanes), vs, acc[c]));
  }
  for (size_t c = 0; c < kVecs; ++c) hn::StoreU(acc[c], df, vkq + d0 + c * kLanes);
}

// Scores [head][key] of a block: ggml_vec_dot_f16 of each key with each head's query. The whole
// 64-element steps run key by key (dimensions in lanes); the leftover elements, whose products
// ggml adds one by one in double, run with the block's keys in lanes so that the sequential
// double additions of different keys overlap.
void ScoreBlock(const OneRowBlock& block, int group, int dim, const float* q16, float* scores, float* transposed) {
  const DF df;
  const int whole = dim & ~63;
  if (whole > 0) {
    for (int j = 0; j < block.n; ++j) {
      int h = 0;
      for (; h + kDotHeads <= group; h += kDotHeads) {
        DotF16Steps<kDotHeads>(q16 + h * dim, block.keys[j], whole, dim, scores + h * kOneRowBlock + j, kOneRowBlock);
      }
      for (; h < group; ++h) DotF16Steps<1>(q16 + h * dim, block.keys[j], whole, dim, scores + h * kOneRowBlock + j, kOneRowBlock);
    }
  } else {
    std::fill(scores, scores + group * kOneRowBlock, 0.0f);
  }
  const int tail = dim - whole;
  if (tail == 0) return;

  // transposed[i][j]: leftover element i of key j (0 past the block's keys).
  alignas(64) float row[64];
  for (int j = 0; j < kOneRowBlock; ++j) {
    if (j < block.n) {
      const uint16_t* key = block.keys[j] + whole;
      int i = 0;
      for (; i + static_cast<int>(kLanes) <= tail; i += kLanes) hn::Store(LoadF16(key + i), df, row + i);
      for (; i < tail; ++i) row[i] = f16_to_f32(key[i]);
    } else {
      std::fill(row, row + tail, 0.0f);
    }
    for (int i = 0; i < tail; ++i) transposed[i * kOneRowBlock + j] = row[i];
  }
  using DH2 = hn::Half<DF>;
  using DD = hn::Rebind<double, DH2>;
  constexpr size_t kDoubles = hn::MaxLanes(DD());
  constexpr size_t kSums = kOneRowBlock / kDoubles;
  const DH2 dh2;
  const DD dd;
  for (int h = 0; h < group; ++h) {
    float* head_scores = scores + h * kOneRowBlock;
    hn::Vec<DD> sums[kSums];
    for (size_t v = 0; v < kSums; ++v) sums[v] = hn::PromoteTo(dd, hn::LoadU(dh2, head_scores + v * kDoubles));
    const float* q = q16 + h * dim + whole;
    for (int i = 0; i < tail; ++i) {
      const VF qi = hn::Set(df, q[i]);
      for (size_t c = 0; c < kOneRowBlock / kLanes; ++c) {
        const VF product = hn::Mul(qi, hn::Load(df, transposed + i * kOneRowBlock + c * kLanes));  // rounded to f32
        sums[2 * c] = hn::Add(sums[2 * c], hn::PromoteTo(dd, hn::LowerHalf(dh2, product)));
        sums[2 * c + 1] = hn::Add(sums[2 * c + 1], hn::PromoteTo(dd, hn::UpperHalf(dh2, product)));
      }
    }
    for (size_t v = 0; v < kSums; ++v) hn::StoreU(hn::DemoteTo(dh2, sums[v]), dh2, head_scores + v * kDoubles);
  }
}

void ProcessOneRowBlock(const OneRowBlock& block, int group, int dim, const float* q16, OneRowPartial* partials,
                        float* scores, float* rescale, float* weight, float* transposed) {
  ScoreBlock(block, group, dim, q16, scores, transposed);
  for (int h = 0; h < group; ++h) {
    OneRowPartial& r = partials[h];
    float* ms = rescale + h * kOneRowBlock;
    float* vs = weight + h * kOneRowBlock;
    // The online softmax, in key order.
    for (int j = 0; j < block.n; ++j) {
      const float s = scores[h * kOneRowBlock + j];
      ms[j] = 1.0f;
      vs[j] = 1.0f;
      if (s > r.m) {
        ms[j] = std::exp(r.m - s);
        r.m = s;
      } else {
        vs[j] = std::exp(s - r.m);
      }
      r.s = mul_then_add(r.s, ms[j], vs[j]);
    }
    // The accumulator, a few vectors of dimensions at a time across the block.
    size_t d = 0;
    for (; d + kVkqVecs * kLanes <= static_cast<size_t>(dim); d += kVkqVecs * kLanes) {
      AccumulateValues<kVkqVecs>(block, ms, vs, d, r.vkq);
    }
    for (; d + kLanes <= static_cast<size_t>(dim); d += kLanes) AccumulateValues<1>(block, ms, vs, d, r.vkq);
    for (; d < static_cast<size_t>(dim); ++d) {
      float a = r.vkq[d];
      for (int j = 0; j < block.n; ++j) {
        if (ms[j] != 1.0f) a = RoundF16(a * ms[j]);
        a = RoundF16(std::fma(f16_to_f32(block.values[j][d]), vs[j], a));
      }
      r.vkq[d] = a;
    }
  }
}

void RunOneRow(const AttentionProblem& p, const OneRowItem& item) {
  const DF df;
  const int heads = item.n_heads;  // the query heads this item computes over one pass of the keys
  const int dim = p.head_dim;
  float* transposed = item.scratch->get<float>(64 * kOneRowBlock + static_cast<size_t>(heads) * dim + 3 * heads * kOneRowBlock);
  float* q16 = transposed + 64 * kOneRowBlock;
  float* scores = q16 + heads * dim;
  float* rescale = scores + heads * kOneRowBlock;
  float* weight = rescale + heads * kOneRowBlock;

  for (int i = 0; i < heads; ++i) {
    const float* q = p.q + (item.t * p.n_head + item.head + i) * dim;
    float* q_round = q16 + i * dim;
    int d = 0;
    for (; d + static_cast<int>(kLanes) <= dim; d += kLanes) hn::StoreU(RoundF16(hn::LoadU(df, q + d)), df, q_round + d);
    for (; d < dim; ++d) q_round[d] = RoundF16(q[d]);
    OneRowPartial& r = item.partials[i];
    r.m = -kInf;
    r.s = 0.0f;
    std::fill(r.vkq, r.vkq + dim, 0.0f);
  }

  const size_t kv_offset = static_cast<size_t>(item.g) * dim;
  const int32_t lo = p.min_position[item.t], hi = p.max_position[item.t];
  OneRowBlock block;
  for (int64_t i = item.begin; i < item.end; ++i) {
    const uint32_t slot = p.slots[i];
    if (!visible(p.slot_positions[slot], lo, hi)) continue;
    block.keys[block.n] = p.k + slot * p.kv_stride + kv_offset;
    block.values[block.n] = p.v + slot * p.kv_stride + kv_offset;
    if (++block.n == kOneRowBlock) {
      ProcessOneRowBlock(block, heads, dim, q16, item.partials, scores, rescale, weight, transposed);
      block.n = 0;
    }
  }
  if (block.n > 0) ProcessOneRowBlock(block, heads, dim, q16, item.partials, scores, rescale, weight, transposed);

  if (item.finish) {
    for (int i = 0; i < heads; ++i) {
      OneRowPartial& r = item.partials[i];
      const VF inv = hn::Set(df, r.s == 0.0f ? 0.0f : 1.0f / r.s);
      int d = 0;
      for (; d + static_cast<int>(kLanes) <= dim; d += kLanes) hn::StoreU(hn::Mul(hn::LoadU(df, r.vkq + d), inv), df, r.vkq + d);
      for (; d < dim; ++d) r.vkq[d] *= hn::GetLane(inv);
    }
  }
}

// ---------------------------------------------------------------------------------- tiled

constexpr size_t kRowVecs = 4;                  // query rows per tile: kRowVecs * kLanes
constexpr size_t kTileRows = kRowVecs * kLanes;
constexpr int kScoreKeys = kLanes >= 16 ? 4 : 2;  // keys per pass of the score kernel
constexpr size_t kValueRows = 4;                // rows x vectors of dimensions per pass of the value kernel
constexpr size_t kValueVecs = kLanes >= 16 ? 4 : 2;

// ggml_v_expf (AVX-512), lane by lane.
HWY_INLINE VF ExpGgml(VF x) {
  const DF df;
  const DI di;
  const VF shift = hn::Set(df, kExpShift);
  const VF z = hn::MulAdd(x, hn::Set(df, kExpLog2e), shift);
  const VF n = hn::Sub(z, shift);
  const VF b = hn::NegMulAdd(n, hn::Set(df, kExpLn2Lo), hn::NegMulAdd(n, hn::Set(df, kExpLn2Hi), x));
  const VF u = hn::Mul(b, b);
  const VF j = hn::MulAdd(
      hn::MulAdd(hn::MulAdd(hn::Set(df, kExpC5), b, hn::Set(df, kExpC4)), u,
                 hn::MulAdd(hn::Set(df, kExpC3), b, hn::Set(df, kExpC2))),
      u, hn::MulAdd(hn::Set(df, kExpC1), b, hn::Set(df, 1.0f)));
  // j * 2^n in two steps, the first exact (see scale_by_pow2); n clamped so that lanes that
  // take the out-of-range value below compute something harmless.
  const VF limit = hn::Set(df, kExpMaxExponent);
  const auto ni = hn::ConvertTo(di, hn::Min(hn::Max(n, hn::Neg(limit)), limit));
  const auto n1 = hn::ShiftRight<1>(ni);
  const auto n2 = hn::Sub(ni, n1);
  const auto bias = hn::Set(di, 127);
  const VF p1 = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(n1, bias)));
  const VF p2 = hn::BitCast(df, hn::ShiftLeft<23>(hn::Add(n2, bias)));
  const VF res = hn::Mul(hn::Mul(j, p1), p2);
  const auto out_of_range = hn::Gt(hn::Abs(n), limit);
  const VF alt = hn::IfThenZeroElse(hn::Le(n, hn::Zero(df)), hn::Set(df, kInf));
  return hn::IfThenElse(out_of_range, alt, res);
}

struct TiledScratch {
  float* qt;       // [dim][kTileRows] queries, transposed
  float* vkq;      // [kTileRows][dim]
  float* keys;     // [kKvTileCells][dim] the tile's keys in f32
  float* values;   // [kKvTileCells][dim]
  float* weights;  // [kKvTileCells][kTileRows] scores, then exp(score - max)
  float* m;        // [kTileRows]
  float* s;
  float* ms;
  int32_t* lo;     // [kTileRows] visible positions
  int32_t* hi;
};

// Scores of kKeys keys (tile cells `cells`) for all rows: fused multiply-add chains over the
// head dimensions, masked to -inf where a row does not see the key.
template <int kKeys>
HWY_INLINE void ScoreKeys(const TiledScratch& ts, int dim, const int* cells, const int32_t* positions) {
  const DF df;
  const DI di;
  VF acc[kKeys][kRowVecs];
  for (int k = 0; k < kKeys; ++k) {
    for (size_t r = 0; r < kRowVecs; ++r) acc[k][r] = hn::Zero(df);
  }
  const float* key[kKeys];
  for (int k = 0; k < kKeys; ++k) key[k] = ts.keys + cells[k] * dim;
  for (int d = 0; d < dim; ++d) {
    VF q[kRowVecs];
    for (size_t r = 0; r < kRowVecs; ++r) q[r] = hn::Load(df, ts.qt + d * kTileRows + r * kLanes);
    for (int k = 0; k < kKeys; ++k) {
      const VF kv = hn::Set(df, key[k][d]);
      for (size_t r = 0; r < kRowVecs; ++r) acc[k][r] = hn::MulAdd(q[r], kv, acc[k][r]);
    }
  }
  const VF neg_inf = hn::Set(df, -kInf);
  for (int k = 0; k < kKeys; ++k) {
    const auto pos = hn::Set(di, positions[k]);
    for (size_t r = 0; r < kRowVecs; ++r) {
      const auto lo = hn::Load(di, ts.lo + r * kLanes);
      const auto hi = hn::Load(di, ts.hi + r * kLanes);
      const auto seen = hn::Not(hn::Or(hn::Gt(lo, pos), hn::Gt(pos, hi)));
      hn::Store(hn::IfThenElse(hn::RebindMask(df, seen), acc[k][r], neg_inf), df,
                ts.weights + cells[k] * kTileRows + r * kLanes);
    }
  }
}

// vkq[row] = vkq[row] * ms[row], then + weight * value over the active cells in order, for
// kRows rows x kVecs vectors of dimensions starting at d0.
template <size_t kRows, size_t kVecs>
HWY_INLINE void AccumulateTile(const TiledScratch& ts, int dim, const int* active, int n_active, size_t row0,
                               size_t d0) {
  const DF df;
  VF acc[kRows][kVecs];
  for (size_t r = 0; r < kRows; ++r) {
    const VF ms = hn::Set(df, ts.ms[row0 + r]);
    for (size_t c = 0; c < kVecs; ++c) acc[r][c] = hn::Mul(hn::Load(df, ts.vkq + (row0 + r) * dim + d0 + c * kLanes), ms);
  }
  for (int a = 0; a < n_active; ++a) {
    const int cell = active[a];
    VF v[kVecs];
    for (size_t c = 0; c < kVecs; ++c) v[c] = hn::Load(df, ts.values + cell * dim + d0 + c * kLanes);
    for (size_t r = 0; r < kRows; ++r) {
      const VF w = hn::Set(df, ts.weights[cell * kTileRows + row0 + r]);
      for (size_t c = 0; c < kVecs; ++c) acc[r][c] = hn::MulAdd(v[c], w, acc[r][c]);
    }
  }
  for (size_t r = 0; r < kRows; ++r) {
    for (size_t c = 0; c < kVecs; ++c) hn::Store(acc[r][c], df, ts.vkq + (row0 + r) * dim + d0 + c * kLanes);
  }
}

template <size_t kRows>
HWY_INLINE void AccumulateTileRows(const TiledScratch& ts, int dim, const int* active, int n_active, size_t row0) {
  size_t d = 0;
  for (; d + kValueVecs * kLanes <= static_cast<size_t>(dim); d += kValueVecs * kLanes) {
    AccumulateTile<kRows, kValueVecs>(ts, dim, active, n_active, row0, d);
  }
  for (; d < static_cast<size_t>(dim); d += kLanes) AccumulateTile<kRows, 1>(ts, dim, active, n_active, row0, d);
}

size_t TiledRowsPerItem() { return kTileRows; }

void ConvertRow(const uint16_t* from, int dim, float* to) {
  const DF df;
  for (int d = 0; d < dim; d += kLanes) hn::Store(LoadF16(from + d), df, to + d);
}

void RunTiled(const AttentionProblem& p, const TiledItem& item) {
  const DF df;
  const int group = p.n_head / p.n_head_kv;
  const int dim = p.head_dim;
  const Geometry geo(p);
  const size_t rows = static_cast<size_t>(item.row_end - item.row_begin);  // <= kTileRows
  const size_t kv_offset = static_cast<size_t>(item.g) * dim;

  const size_t tile_floats = kTileRows * dim;
  float* base = item.scratch->get<float>(2 * tile_floats + 2 * kKvTileCells * dim + kKvTileCells * kTileRows + 5 * kTileRows);
  TiledScratch ts;
  ts.qt = base;
  ts.vkq = ts.qt + tile_floats;
  ts.keys = ts.vkq + tile_floats;
  ts.values = ts.keys + kKvTileCells * dim;
  ts.weights = ts.values + kKvTileCells * dim;
  ts.m = ts.weights + kKvTileCells * kTileRows;
  ts.s = ts.m + kTileRows;
  ts.ms = ts.s + kTileRows;
  ts.lo = reinterpret_cast<int32_t*>(ts.ms + kTileRows);
  ts.hi = ts.lo + kTileRows;

  int32_t lo_all = std::numeric_limits<int32_t>::max(), hi_all = std::numeric_limits<int32_t>::min();
  for (size_t r = 0; r < kTileRows; ++r) {
    ts.m[r] = -kInf;
    ts.s[r] = 0.0f;
    if (r < rows) {
      const int64_t row = item.row_begin + static_cast<int64_t>(r);
      const int64_t t = row / group;
      const int h = item.g * group + static_cast<int>(row % group);
      const float* q = p.q + (t * p.n_head + h) * dim;
      for (int d = 0; d < dim; ++d) ts.qt[d * kTileRows + r] = q[d];
      ts.lo[r] = std::max<int32_t>(p.min_position[t], 0);
      ts.hi[r] = p.max_position[t];
      lo_all = std::min(lo_all, ts.lo[r]);
      hi_all = std::max(hi_all, ts.hi[r]);
    } else {  // padding: sees nothing
      for (int d = 0; d < dim; ++d) ts.qt[d * kTileRows + r] = 0.0f;
      ts.lo[r] = std::numeric_limits<int32_t>::max();
      ts.hi[r] = std::numeric_limits<int32_t>::min();
    }
  }
  std::fill(ts.vkq, ts.vkq + tile_floats, 0.0f);

  const VF neg_inf = hn::Set(df, -kInf);
  int active[kKvTileCells];
  int32_t positions[kKvTileCells];
  for (int64_t tile = geo.first_tile(); tile < geo.end_tile(); ++tile) {
    // Cells some row of the tile may see.
    int n_active = 0;
    bool cell_active[kKvTileCells] = {};
    for (int c = 0; c < kKvTileCells; ++c) {
      const int64_t i = tile * kKvTileCells + c - geo.first_cell;
      if (i < 0 || i >= geo.n_listed) continue;
      const uint32_t slot = p.slots[i];
      const int32_t pos = p.slot_positions[slot];
      if (pos < lo_all || pos > hi_all) continue;
      cell_active[c] = true;
      active[n_active] = c;
      positions[n_active] = pos;
      ++n_active;
      ConvertRow(p.k + slot * p.kv_stride + kv_offset, dim, ts.keys + c * dim);
      ConvertRow(p.v + slot * p.kv_stride + kv_offset, dim, ts.values + c * dim);
    }
    if (n_active == 0) continue;

    // Scores of the active cells (-inf where a row does not see the key); other cells weigh 0.
    int a = 0;
    for (; a + kScoreKeys <= n_active; a += kScoreKeys) ScoreKeys<kScoreKeys>(ts, dim, active + a, positions + a);
    for (; a < n_active; ++a) ScoreKeys<1>(ts, dim, active + a, positions + a);

    for (size_t r = 0; r < kRowVecs; ++r) {
      const size_t row0 = r * kLanes;
      VF tile_max = neg_inf;
      for (int i = 0; i < n_active; ++i) tile_max = hn::Max(tile_max, hn::Load(df, ts.weights + active[i] * kTileRows + row0));
      const auto skip = hn::Eq(tile_max, neg_inf);  // rows that see nothing here: unchanged
      const VF m_old = hn::Load(df, ts.m + row0);
      const VF m_new = hn::Max(m_old, tile_max);
      hn::Store(m_new, df, ts.m + row0);
      // On a new maximum the accumulator and sum are scaled by expf(m_old - m_new) (libm, as
      // llama.cpp calls it); ms stays 1 elsewhere.
      alignas(64) float old_lanes[kLanes], new_lanes[kLanes];
      hn::Store(m_old, df, old_lanes);
      hn::Store(m_new, df, new_lanes);
      for (size_t l = 0; l < kLanes; ++l) {
        ts.ms[row0 + l] = new_lanes[l] > old_lanes[l] ? std::exp(old_lanes[l] - new_lanes[l]) : 1.0f;
      }
      const VF s_scaled = hn::Mul(hn::Load(df, ts.s + row0), hn::Load(df, ts.ms + row0));
      // ggml_vec_soft_max_f32 over the 64 cells: exponentials, then per group of 16 cells a
      // tree of halves, the groups summed in double.
      VF group_sums[kKvTileCells / 16];
      for (int g = 0; g < kKvTileCells / 16; ++g) {
        VF w[16];
        for (int c = 0; c < 16; ++c) {
          if (!cell_active[16 * g + c]) {
            w[c] = hn::Zero(df);
            continue;
          }
          float* cell_weights = ts.weights + (16 * g + c) * kTileRows + row0;
          const VF x = hn::Load(df, cell_weights);
          w[c] = hn::IfThenZeroElse(skip, ExpGgml(hn::Sub(x, m_new)));
          hn::Store(w[c], df, cell_weights);
        }
        for (int n = 8; n >= 1; n /= 2) {
          for (int c = 0; c < n; ++c) w[c] = hn::Add(w[c], w[c + n]);
        }
        group_sums[g] = w[0];
      }
      alignas(64) float sums[kKvTileCells / 16][kLanes], s_lanes[kLanes];
      for (int g = 0; g < kKvTileCells / 16; ++g) hn::Store(group_sums[g], df, sums[g]);
      hn::Store(s_scaled, df, s_lanes);
      for (size_t l = 0; l < kLanes; ++l) {
        double sum = 0.0;
        for (int g = 0; g < kKvTileCells / 16; ++g) sum += static_cast<double>(sums[g][l]);
        ts.s[row0 + l] = static_cast<float>(static_cast<double>(s_lanes[l]) + sum);
      }
    }

    size_t r = 0;
    for (; r + kValueRows <= rows; r += kValueRows) AccumulateTileRows<kValueRows>(ts, dim, active, n_active, r);
    for (; r < rows; ++r) AccumulateTileRows<1>(ts, dim, active, n_active, r);
  }

  for (size_t r = 0; r < rows; ++r) {
    const int64_t row = item.row_begin + static_cast<int64_t>(r);
    const int64_t t = row / group;
    const int h = item.g * group + static_cast<int>(row % group);
    float* out = p.out + (t * p.n_head + h) * dim;
    const VF inv = hn::Set(df, ts.s[r] == 0.0f ? 0.0f : 1.0f / ts.s[r]);
    for (int d = 0; d < dim; d += kLanes) hn::StoreU(hn::Mul(hn::Load(df, ts.vkq + r * dim + d), inv), df, out + d);
  }
}

#endif

}  // namespace HWY_NAMESPACE
}  // namespace channel::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace channel::cpu {

HWY_EXPORT(RunOneRow);
HWY_EXPORT(RunTiled);
HWY_EXPORT(TiledRowsPerItem);

using namespace attention_detail;

namespace {

// Item k of n in an order that interleaves cheap and expensive items (0, n-1, 1, n-2, ...):
// later queries see more keys, and the pool gives each thread a contiguous range of items.
int64_t interleaved(int64_t k, int64_t n) { return k % 2 == 0 ? k / 2 : n - 1 - k / 2; }

// Into how many parts the one-row scheme splits each KV head's group of query heads. One item
// reads a chunk's keys and values once for all the heads of its group, but when the (token,
// chunk, KV head) units that hold keys are fewer than the threads, some threads would idle: with
// the ring full, a sliding layer's window of Gemma 3 1B (one KV head) lies in one of llama.cpp's
// two split-KV chunks, and one thread did the whole layer's attention. Each head's arithmetic
// is the same whichever item computes it.
int one_row_head_parts(const AttentionProblem& p, const Geometry& geo, int64_t n_chunks, bool split, int threads) {
  int64_t chunks_with_keys = 0;
  for (int64_t c = 0; c < n_chunks; ++c) {
    if (!split || geo.chunk_end(c) > geo.chunk_begin(c)) ++chunks_with_keys;
  }
  const int64_t units = p.n_tokens * chunks_with_keys * p.n_head_kv;
  int parts = 1;
  while (units > 0 && units * parts < threads && geo.group % (2 * parts) == 0) parts *= 2;
  return parts;
}

void check(const AttentionProblem& p) {
  if (p.head_dim <= 0 || p.n_head <= 0 || p.n_head_kv <= 0 || p.n_head % p.n_head_kv != 0) {
    fail("attention: bad head geometry ({} heads, {} KV heads, size {})", p.n_head, p.n_head_kv, p.head_dim);
  }
  if (static_cast<int64_t>(p.min_position.size()) < p.n_tokens ||
      static_cast<int64_t>(p.max_position.size()) < p.n_tokens) {
    fail("attention: visible ranges missing for some of the {} queries", p.n_tokens);
  }
  if (attention_scheme(p) == AttentionScheme::kTiled && p.head_dim % 16 != 0) {
    fail("attention: the tiled scheme needs a head size multiple of 16, not {}", p.head_dim);
  }
}

}  // namespace

struct AttentionScratch::State {
  std::vector<Scratch> threads;  // one per pool thread
  std::vector<OneRowPartial> partials;
  std::vector<float> accumulators;  // split-KV: each partial's head_dim values
};

AttentionScratch::AttentionScratch() : state_(std::make_unique<State>()) {}
AttentionScratch::~AttentionScratch() = default;

void attend(const AttentionProblem& p, ThreadPool& pool, AttentionScratch& scratch) {
  check(p);
  AttentionScratch::State& state = *scratch.state_;
  if (state.threads.size() < static_cast<size_t>(pool.size())) state.threads.resize(static_cast<size_t>(pool.size()));
  if (p.n_tokens == 0) return;
  const Geometry geo(p);
  const int dim = p.head_dim;
  const int64_t n_kv_heads = p.n_head_kv;
  const AttentionScheme scheme = attention_scheme(p);

  if (scheme == AttentionScheme::kTiled) {
    const int64_t rows = p.n_tokens * geo.group;  // per KV head
    const int64_t tile_rows = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(TiledRowsPerItem)());
    const int64_t n_items = (rows + tile_rows - 1) / tile_rows * n_kv_heads;
    pool.parallel_for_threads(n_items, [&](int64_t begin, int64_t end, int thread) {
      for (int64_t k = begin; k < end; ++k) {
        const int64_t x = interleaved(k, n_items);
        TiledItem item;
        item.scratch = &state.threads[static_cast<size_t>(thread)];
        item.g = static_cast<int>(x % n_kv_heads);
        item.row_begin = x / n_kv_heads * tile_rows;
        item.row_end = std::min(rows, item.row_begin + tile_rows);
        HWY_DYNAMIC_DISPATCH(RunTiled)(p, item);
      }
    });
    return;
  }

  // One-row (split into chunks of cells or not): partials [token][chunk][query head].
  const bool split = scheme == AttentionScheme::kSplitKv;
  const int64_t n_chunks = split ? geo.n_chunks : 1;
  std::vector<OneRowPartial>& partial_storage = state.partials;
  std::vector<float>& accumulators = state.accumulators;
  partial_storage.resize(static_cast<size_t>(p.n_tokens * n_chunks * p.n_head));
  if (split && accumulators.size() < partial_storage.size() * dim) accumulators.resize(partial_storage.size() * dim);
  OneRowPartial* const partials = partial_storage.data();
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (int64_t c = 0; c < n_chunks; ++c) {
      for (int h = 0; h < p.n_head; ++h) {
        const size_t index = static_cast<size_t>((t * n_chunks + c) * p.n_head + h);
        partials[index].vkq = split ? accumulators.data() + index * dim : p.out + (t * p.n_head + h) * dim;
      }
    }
  }
  const int head_parts = one_row_head_parts(p, geo, n_chunks, split, pool.size());
  const int heads_per_item = geo.group / head_parts;
  const int64_t n_items = p.n_tokens * n_chunks * n_kv_heads * head_parts;
  pool.parallel_for_threads(n_items, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t x = interleaved(k, n_items);
      OneRowItem item;
      item.scratch = &state.threads[static_cast<size_t>(thread)];
      const int64_t unit = x / head_parts;  // (token, chunk, KV head)
      item.g = static_cast<int>(unit % n_kv_heads);
      item.head = item.g * geo.group + static_cast<int>(x % head_parts) * heads_per_item;
      item.n_heads = heads_per_item;
      const int64_t c = unit / n_kv_heads % n_chunks;
      item.t = unit / n_kv_heads / n_chunks;
      item.begin = split ? geo.chunk_begin(c) : 0;
      item.end = split ? geo.chunk_end(c) : geo.n_listed;
      item.partials = &partials[static_cast<size_t>((item.t * n_chunks + c) * p.n_head + item.head)];
      item.finish = !split;
      HWY_DYNAMIC_DISPATCH(RunOneRow)(p, item);
    }
  });
  if (split) {
    for (int64_t t = 0; t < p.n_tokens; ++t) {
      for (int h = 0; h < p.n_head; ++h) {
        combine_partials(&partials[static_cast<size_t>(t * n_chunks * p.n_head + h)], p.n_head, n_chunks, dim,
                         p.out + (t * p.n_head + h) * dim);
      }
    }
  }
}

}  // namespace channel::cpu
#endif
