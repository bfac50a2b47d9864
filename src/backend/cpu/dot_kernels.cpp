#include "backend/cpu/dot_kernels.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>

#include "backend/cpu/dot_reference.h"
#include "backend/cpu/row_group_kernels.h"
#include "backend/cpu/weight_values.h"

// Highway compiles this file once per SIMD target and dispatches at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/dot_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace channel::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Weight row of output row i.
inline const uint8_t* WeightRow(const DotRowsJob& job, int64_t i) {
  const int64_t row = job.row_ids.empty() ? i : job.row_ids[i];
  return job.weights->data + row * job.weights->row_bytes;
}

#if HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE

// Highway's single-lane fallback target (CPUs without SSSE3; with GCC < 12.3 it replaces EMU128)
// lacks the ops of the tile kernels, and those size their tiles by vector lengths known at
// compile time, which SVE and RVV lack: these targets run the scalar reference for each output.
void DotRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  const WeightMatrix& w = *job.weights;
  const PreparedActivations& x = *job.activations;
  const bool quantized = is_quantized(w.type);
  for (int64_t i = begin; i < end; ++i) {
    const uint8_t* row = WeightRow(job, i);
    for (int64_t t = 0; t < x.n_tokens(); ++t) {
      float& out = job.out[t * job.out_stride + i];
      if (quantized) {
        out = dot_quant_reference(w.type, row, x.q8_blocks(t), w.cols / kQuantBlock, job.accumulation);
      } else if (w.type == GgmlType::BF16 && job.bf16_accumulation != Bf16Accumulation::kVectorLanes) {
        out = dot_bf16_pairs_reference(row, x.values(t), w.cols, job.bf16_accumulation);
      } else {
        out = dot_float_reference(w.type, row, x.values(t), w.cols);
      }
    }
  }
}

#else  // fixed-width SIMD targets

// ============================================================================ tiles

// kRows weight rows computed together. The last tile of a range may have fewer valid rows
// (`count`); its other slots repeat the last valid row so that kernels always run full tiles,
// and their results are dropped.
template <int64_t kRows>
struct RowTile {
  static constexpr int64_t kSize = kRows;
  const uint8_t* rows[kRows];
  const uint8_t* next_rows[kRows];  // the next tile's rows, to prefetch (the last tile: its own)
  int64_t first_output;             // output row index of rows[0]
  int64_t count;
};

template <int64_t kRows, class TileFn>
void ForEachRowTile(const DotRowsJob& job, int64_t begin, int64_t end, const TileFn& tile_fn) {
  static_assert(kDotRowGrain % kRows == 0, "row ranges must split into whole tiles");
  for (int64_t first = begin; first < end; first += kRows) {
    RowTile<kRows> tile;
    tile.first_output = first;
    tile.count = std::min(kRows, end - first);
    const int64_t next = first + kRows < end ? first + kRows : first;
    for (int64_t r = 0; r < kRows; ++r) {
      tile.rows[r] = WeightRow(job, std::min(first + r, end - 1));
      tile.next_rows[r] = WeightRow(job, std::min(next + r, end - 1));
    }
    tile_fn(tile);
  }
}

// Calls token_tile_fn(std::integral_constant<size_t, T>(), t0) on token tiles [t0, t0 + T)
// covering [0, n_tokens): T = kMaxTokens, then one smaller tile for the rest.
template <size_t T, class TokenTileFn>
void RunTokenTail(int64_t remaining, int64_t t0, const TokenTileFn& token_tile_fn) {
  if (remaining == static_cast<int64_t>(T)) return token_tile_fn(std::integral_constant<size_t, T>(), t0);
  if constexpr (T > 1) RunTokenTail<T - 1>(remaining, t0, token_tile_fn);
}

template <size_t kMaxTokens, class TokenTileFn>
void ForEachTokenTile(int64_t n_tokens, const TokenTileFn& token_tile_fn) {
  int64_t t0 = 0;
  for (; t0 + static_cast<int64_t>(kMaxTokens) <= n_tokens; t0 += kMaxTokens) {
    token_tile_fn(std::integral_constant<size_t, kMaxTokens>(), t0);
  }
  if (t0 < n_tokens) RunTokenTail<kMaxTokens>(n_tokens - t0, t0, token_tile_fn);
}

// Writes the valid rows of a tile's results for `token`.
template <class Tile>
void StoreTileResults(const DotRowsJob& job, const Tile& tile, int64_t token, const float (&results)[Tile::kSize]) {
  float* out = job.out + token * job.out_stride + tile.first_output;
  for (int64_t r = 0; r < tile.count; ++r) out[r] = results[r];
}

// ============================================================================ Q4_0 / Q8_0

// Two kernels, with the same integer sums and the same f32 operations: for decode and small
// batches, each row's block products fill int32 lanes that are reduced block by block; for
// batches, one row per int32 lane over a transposed copy of a row tile (below).
//
// A block's 32 products are int16 multiply-adds (ReorderWidenMulAccumulate: pmaddwd on x86) of
// its even elements (0, 2, .., 30) and of its odd elements, both widened to int16. Pairing them
// this way puts elements 4j..4j+3 into int32 lane j: the 8 partial sums of ggml's maddubs+madd
// (or VNNI) kernels, which kEightLanes accumulates lane by lane. A block takes kParts vectors:
// one on 256-bit targets (AVX2, and AVX-512 capped at 256 bits so that the lanes line up), two
// on 128-bit targets (lanes 0-3, then 4-7).
using D16 = hn::CappedTag<int16_t, kQuantBlock / 2>;
using D32 = hn::Repartition<int32_t, D16>;
using DF = hn::Repartition<float, D16>;
using V16 = hn::Vec<D16>;
using V32 = hn::Vec<D32>;
using VF = hn::Vec<DF>;
using D128F = hn::Full128<float>;  // one lane per row of a tile
constexpr size_t kParts = kQuantBlock / 2 / hn::MaxLanes(D16());

// One weight block as int16 values, in the layout of WideQ8Block.
struct UnpackedBlock {
  V16 even[kParts];
  V16 odd[kParts];
};

struct Q8_0Rows {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0);

  static HWY_INLINE UnpackedBlock Unpack(const uint8_t* block) {
    const D16 d16;
    const hn::Repartition<int8_t, D16> d8;
    const auto* qs = reinterpret_cast<const int8_t*>(block + offsetof(BlockQ8_0, qs));
    UnpackedBlock out;
    for (size_t p = 0; p < kParts; ++p) {
      // Each int16 lane holds an (even, odd) pair of int8 values: low byte, high byte.
      const V16 pairs = hn::BitCast(d16, hn::LoadU(d8, qs + p * hn::Lanes(d8)));
      out.even[p] = hn::ShiftRight<8>(hn::ShiftLeft<8>(pairs));
      out.odd[p] = hn::ShiftRight<8>(pairs);
    }
    return out;
  }
};

// `low` / `high` hold the nibbles of elements 0-15 / 16-31 in the bit positions described in
// Q4_0Rows::Unpack. A template so that only the branch for this target's width is instantiated.
template <class D, class V128U16>
HWY_INLINE UnpackedBlock UnpackNibbles(D d16, V128U16 low, V128U16 high) {
  V16 nibbles[kParts];
  if constexpr (kParts == 1) {
    nibbles[0] = hn::BitCast(d16, hn::Combine(hn::Repartition<uint16_t, D>(), high, low));
  } else {
    nibbles[0] = hn::BitCast(d16, low);
    nibbles[1] = hn::BitCast(d16, high);
  }
  const V16 mask = hn::Set(d16, 0x0f);
  const V16 offset = hn::Set(d16, 8);
  UnpackedBlock out;
  for (size_t p = 0; p < kParts; ++p) {
    out.even[p] = hn::Sub(hn::And(nibbles[p], mask), offset);
    out.odd[p] = hn::Sub(hn::And(hn::ShiftRight<8>(nibbles[p]), mask), offset);
  }
  return out;
}

struct Q4_0Rows {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0);

  static HWY_INLINE UnpackedBlock Unpack(const uint8_t* block) {
    // Byte i holds element i (low nibble) and i + 16 (high nibble). Read as u16 lanes, lane k
    // holds element 2k in bits 0-3, 2k+1 in bits 8-11, 2k+16 in bits 4-7 and 2k+17 in 12-15;
    // shifting right by 4 moves the last two where the first two were.
    const hn::Full128<uint16_t> du16;
    const auto packed = hn::BitCast(du16, hn::LoadU(hn::Full128<uint8_t>(), block + offsetof(BlockQ4_0, qs)));
    return UnpackNibbles(D16(), packed, hn::ShiftRight<4>(packed));
  }
};

// ---------------------------------------------------------------------------- small batches

constexpr int64_t kSmallBatchRows = 4;  // rows per tile
using SmallBatchTile = RowTile<kSmallBatchRows>;

// The fp16 scales of block b of a tile's rows, as f32 (lane r: row r), and the same as scalars.
struct TileScales {
  hn::Vec<D128F> vec;
  float lane[kSmallBatchRows];
};

template <class Rows>
HWY_INLINE TileScales LoadTileScales(const SmallBatchTile& tile, int64_t b) {
  static_assert(kSmallBatchRows == 4, "four fp16 scales fill one u64");
  uint64_t packed = 0;
  for (int64_t r = 0; r < kSmallBatchRows; ++r) {
    uint16_t scale;
    std::memcpy(&scale, tile.rows[r] + b * Rows::kBlockBytes, sizeof(scale));  // d comes first
    packed |= uint64_t{scale} << (16 * r);
  }
  const hn::Full64<uint64_t> du64;
  const hn::Full64<hwy::float16_t> df16;
  TileScales scales;
  scales.vec = hn::PromoteTo(D128F(), hn::BitCast(df16, hn::Set(du64, packed)));
  hn::StoreU(scales.vec, D128F(), scales.lane);
  return scales;
}

// Int32 lane j: the sum of the products of elements 4j..4j+3 (of this part), exact.
HWY_INLINE V32 BlockPartials(V16 w_even, V16 w_odd, V16 x_even, V16 x_odd) {
  const D32 d32;
  V32 odd_products = hn::Zero(d32);
  V32 sums = hn::ReorderWidenMulAccumulate(d32, w_even, x_even, hn::Zero(d32), odd_products);
  sums = hn::ReorderWidenMulAccumulate(d32, w_odd, x_odd, sums, odd_products);
  return hn::RearrangeToOddPlusEven(sums, odd_products);
}

// Sum over the 128-bit blocks of v (a no-op on 128-bit targets).
template <class V>
HWY_INLINE hn::Vec<hn::Full128<int32_t>> Add128BitBlocks(V v) {
  if constexpr (kParts == 1) {
    return hn::Add(hn::LowerHalf(v), hn::UpperHalf(hn::Half<D32>(), v));
  } else {
    return v;
  }
}

// {sum of the lanes of v[0], .., sum of the lanes of v[3]}.
HWY_INLINE hn::Vec<hn::Full128<int32_t>> SumsOf4(const V32 (&v)[4]) {
  const D32 d32;
  const hn::Repartition<int64_t, D32> d64;
  // Per 128-bit block: {v0[0]+v0[2], v1[0]+v1[2], v0[1]+v0[3], v1[1]+v1[3]}, same for v2, v3.
  const V32 sums01 = hn::Add(hn::InterleaveLower(d32, v[0], v[1]), hn::InterleaveUpper(d32, v[0], v[1]));
  const V32 sums23 = hn::Add(hn::InterleaveLower(d32, v[2], v[3]), hn::InterleaveUpper(d32, v[2], v[3]));
  // Per 128-bit block: {v0, v1, v2, v3} summed.
  const auto sums01_64 = hn::BitCast(d64, sums01);
  const auto sums23_64 = hn::BitCast(d64, sums23);
  const V32 sums = hn::Add(hn::BitCast(d32, hn::InterleaveLower(d64, sums01_64, sums23_64)),
                           hn::BitCast(d32, hn::InterleaveUpper(d64, sums01_64, sums23_64)));
  return Add128BitBlocks(sums);
}

// The f32 accumulators of a tile in QuantAccumulation order; Add takes the integer partials of
// one block for token t and each row's scale d_w * d_x.
template <QuantAccumulation kOrder, size_t kTokens>
class SmallBatchSums;

template <size_t kTokens>
class SmallBatchSums<QuantAccumulation::kEightLanes, kTokens> {
 public:
  SmallBatchSums() {
    for (auto& row : acc_)
      for (auto& token : row)
        for (auto& part : token) part = hn::Zero(DF());
  }

  HWY_INLINE void Add(size_t t, const V32 (&partials)[kSmallBatchRows][kParts], const TileScales& w_scales,
                      float x_scale) {
    const DF df;
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      const VF scale = hn::Set(df, w_scales.lane[r] * x_scale);
      for (size_t p = 0; p < kParts; ++p) {
        acc_[r][t][p] = hn::MulAdd(hn::ConvertTo(df, partials[r][p]), scale, acc_[r][t][p]);
      }
    }
  }

  void Results(size_t t, float (&results)[kSmallBatchRows]) const {
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      float lanes[8];
      for (size_t p = 0; p < kParts; ++p) hn::StoreU(acc_[r][t][p], DF(), lanes + p * hn::Lanes(DF()));
      results[r] = sum_lanes_in_ggml_order(lanes);
    }
  }

 private:
  VF acc_[kSmallBatchRows][kTokens][kParts];
};

template <size_t kTokens>
class SmallBatchSums<QuantAccumulation::kBlockSequential, kTokens> {
 public:
  SmallBatchSums() {
    for (auto& token : acc_) token = hn::Zero(D128F());
  }

  HWY_INLINE void Add(size_t t, const V32 (&partials)[kSmallBatchRows][kParts], const TileScales& w_scales,
                      float x_scale) {
    V32 block_sums[kSmallBatchRows];
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      block_sums[r] = partials[r][0];
      for (size_t p = 1; p < kParts; ++p) block_sums[r] = hn::Add(block_sums[r], partials[r][p]);
    }
    const D128F df;
    const auto scales = hn::Mul(w_scales.vec, hn::Set(df, x_scale));
    acc_[t] = hn::MulAdd(hn::ConvertTo(df, SumsOf4(block_sums)), scales, acc_[t]);
  }

  void Results(size_t t, float (&results)[kSmallBatchRows]) const { hn::StoreU(acc_[t], D128F(), results); }

 private:
  hn::Vec<D128F> acc_[kTokens];  // lane r: row r
};

// Tokens per tile: enough to reuse each unpacked weight block, few enough for the accumulators
// to stay in registers (kEightLanes keeps 8 lanes per output, kBlockSequential one).
template <QuantAccumulation kOrder>
constexpr size_t kSmallBatchTokens = kOrder == QuantAccumulation::kEightLanes ? 2 : 4;

// Weight rows are short streams (a 2560-column Q4_0 row is 1440 bytes) that a tile reads four
// at a time, too briefly for the hardware prefetcher to ramp up: prefetch this far ahead, going
// on into the next tile's rows.
constexpr int64_t kPrefetchBlocks = 16;

// The int32 partials of one block of a tile's rows with each token's activations (lane j of row
// r: the sum of the products of elements 4j..4j+3), for SmallBatchTokens. Exact integers: how
// they are computed does not change a result bit.
template <class Rows, size_t kTokens>
class BlockProducts {
 public:
  BlockProducts(const PreparedActivations& x, int64_t t0) {
    for (size_t t = 0; t < kTokens; ++t) x_blocks_[t] = x.wide_blocks(t0 + t);
  }

  // Unpacks block b of every row of the tile once, for all the tokens.
  HWY_INLINE void LoadWeights(const SmallBatchTile& tile, int64_t b) {
    b_ = b;
    for (int64_t r = 0; r < kSmallBatchRows; ++r) w_[r] = Rows::Unpack(tile.rows[r] + b * Rows::kBlockBytes);
  }

  HWY_INLINE void Partials(size_t t, V32 (&partials)[kSmallBatchRows][kParts]) const {
    const D16 d16;
    const WideQ8Block& xb = x_blocks_[t][b_];
    for (size_t p = 0; p < kParts; ++p) {
      const V16 x_even = hn::LoadU(d16, xb.even + p * hn::Lanes(d16));
      const V16 x_odd = hn::LoadU(d16, xb.odd + p * hn::Lanes(d16));
      for (int64_t r = 0; r < kSmallBatchRows; ++r) {
        partials[r][p] = BlockPartials(w_[r].even[p], w_[r].odd[p], x_even, x_odd);
      }
    }
  }

 private:
  const WideQ8Block* x_blocks_[kTokens];
  UnpackedBlock w_[kSmallBatchRows];
  int64_t b_ = 0;
};

#if HWY_TARGET == HWY_AVX3_DL
// AVX512-VNNI (every CPU Highway runs its AVX3_DL target on has it): VPDPBUSD multiplies 32
// unsigned bytes by 32 signed ones and adds each group of four products into its int32 lane,
// which is the lane layout above, in one instruction where the int16 path takes several. Its
// first operand must be unsigned: Q4_0's nibbles are (0..15), the -8 of every weight added as
// 8 x (-x) (activations are within +-127, so -x is a byte); Q8_0 weights enter as |w| with the
// activation's sign flipped where w < 0 (ggml's trick for its own VNNI kernels).
#define CHANNEL_VNNI_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
static_assert(kParts == 1, "a block's 32 bytes are one 256-bit vector");

// acc + the four-byte dot products of unsigned `u` and signed `s` (_mm256_dpbusd_epi32), in
// VPDPBUSD's EVEX encoding (AVX512-VNNI + AVX512VL). Highway's AVX3_DL target string also names
// AVX-VNNI, so GCC encodes the intrinsic in AVX-VNNI's VEX form, which CPUs with AVX512-VNNI but
// without AVX-VNNI lack (Ice Lake; Zen 4 and Zen 5 guests whose hypervisor hides it): SIGILL there.
// A test checks that no VEX-encoded VNNI instruction is left in the binaries (tests/isa).
HWY_INLINE __m256i DotBytesEvex(__m256i acc, __m256i u, __m256i s) {
  asm("%{evex%} vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
}

template <size_t kTokens>
class VnniBlockProducts {
 public:
  VnniBlockProducts(const PreparedActivations& x, int64_t t0) {
    for (size_t t = 0; t < kTokens; ++t) x_blocks_[t] = x.q8_blocks(t0 + t);
  }

 protected:
  HWY_INLINE __m256i Activations(size_t t) const {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x_blocks_[t][b_].qs));
  }

  // The quants of block b of the tile's row r, in blocks of type Block.
  template <class Block>
  static HWY_INLINE const uint8_t* Quants(const SmallBatchTile& tile, int64_t r, int64_t b) {
    return tile.rows[r] + b * static_cast<int64_t>(sizeof(Block)) + offsetof(Block, qs);
  }

  const BlockQ8_0* x_blocks_[kTokens];
  int64_t b_ = 0;
  __m256i w_[kSmallBatchRows];  // the current block of each row, as the derived class loads it
};

template <size_t kTokens>
class BlockProducts<Q4_0Rows, kTokens> : public VnniBlockProducts<kTokens> {
 public:
  using VnniBlockProducts<kTokens>::VnniBlockProducts;

  CHANNEL_VNNI_ATTR HWY_INLINE void LoadWeights(const SmallBatchTile& tile, int64_t b) {
    this->b_ = b;
    const __m256i low_nibbles = _mm256_set1_epi8(0x0f);
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      // Byte i holds element i (low nibble) and element i + 16 (high nibble).
      const auto* quants = reinterpret_cast<const __m128i*>(this->template Quants<BlockQ4_0>(tile, r, b));
      const __m128i packed = _mm_loadu_si128(quants);
      this->w_[r] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low_nibbles);
    }
  }

  CHANNEL_VNNI_ATTR HWY_INLINE void Partials(size_t t, V32 (&partials)[kSmallBatchRows][kParts]) const {
    const __m256i x = this->Activations(t);
    const __m256i offsets =
        DotBytesEvex(_mm256_setzero_si256(), _mm256_set1_epi8(8), _mm256_sub_epi8(_mm256_setzero_si256(), x));
    for (int64_t r = 0; r < kSmallBatchRows; ++r) partials[r][0] = V32{DotBytesEvex(offsets, this->w_[r], x)};
  }
};

template <size_t kTokens>
class BlockProducts<Q8_0Rows, kTokens> : public VnniBlockProducts<kTokens> {
 public:
  using VnniBlockProducts<kTokens>::VnniBlockProducts;

  CHANNEL_VNNI_ATTR HWY_INLINE void LoadWeights(const SmallBatchTile& tile, int64_t b) {
    this->b_ = b;
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      const auto* quants = reinterpret_cast<const __m256i*>(this->template Quants<BlockQ8_0>(tile, r, b));
      this->w_[r] = _mm256_loadu_si256(quants);
    }
  }

  CHANNEL_VNNI_ATTR HWY_INLINE void Partials(size_t t, V32 (&partials)[kSmallBatchRows][kParts]) const {
    const __m256i x = this->Activations(t);
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      const __m256i w = this->w_[r];
      partials[r][0] = V32{DotBytesEvex(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(x, w))};
    }
  }
};
#else
#define CHANNEL_VNNI_ATTR
#endif

template <class Rows, QuantAccumulation kOrder, size_t kTokens>
CHANNEL_VNNI_ATTR HWY_NOINLINE void SmallBatchTokens(const DotRowsJob& job, const SmallBatchTile& tile,
                                                            int64_t t0) {
  const PreparedActivations& x = *job.activations;
  const float* x_scales[kTokens];
  for (size_t t = 0; t < kTokens; ++t) x_scales[t] = x.q8_scales(t0 + t);
  BlockProducts<Rows, kTokens> products(x, t0);
  SmallBatchSums<kOrder, kTokens> sums;
  const int64_t n_blocks = x.cols() / kQuantBlock;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t ahead = b + kPrefetchBlocks;
    for (int64_t r = 0; r < kSmallBatchRows; ++r) {
      hwy::Prefetch(ahead < n_blocks ? tile.rows[r] + ahead * Rows::kBlockBytes
                                     : tile.next_rows[r] + (ahead - n_blocks) * Rows::kBlockBytes);
    }
    const TileScales w_scales = LoadTileScales<Rows>(tile, b);
    products.LoadWeights(tile, b);
    for (size_t t = 0; t < kTokens; ++t) {
      V32 partials[kSmallBatchRows][kParts];
      products.Partials(t, partials);
      sums.Add(t, partials, w_scales, x_scales[t][b]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    float results[kSmallBatchRows];
    sums.Results(t, results);
    StoreTileResults(job, tile, t0 + t, results);
  }
}

template <class Rows, QuantAccumulation kOrder>
void SmallBatchQuantRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  ForEachRowTile<kSmallBatchRows>(job, begin, end, [&](const SmallBatchTile& tile) {
    ForEachTokenTile<kSmallBatchTokens<kOrder>>(job.activations->n_tokens(), [&](auto tokens, int64_t t0) {
      SmallBatchTokens<Rows, kOrder, decltype(tokens)::value>(job, tile, t0);
    });
  });
}

// ---------------------------------------------------------------------------- batches

// Batches give each row its own int32 lane instead. A tile of kLaneRows rows is unpacked once
// into "units", int16 pairs (unit m < 8: elements 4m and 4m+2 of a block, from its even half;
// unit 8 + m: elements 4m+1 and 4m+3), transposed so that lane r holds row r's unit. Multiply-
// adding a unit vector with the activations' matching unit, broadcast to all lanes, adds to every
// row's exact sums at once: no horizontal reductions, and the f32 operations of SmallBatchTokens.
// These vectors have the full width (16 rows on AVX-512); the transposes work on groups of
// kGroupRows rows, one block-width vector each.
using DL16 = hn::ScalableTag<int16_t>;
using DL32 = hn::Repartition<int32_t, DL16>;
using DLF = hn::Repartition<float, DL16>;
constexpr int64_t kLaneRows = hn::MaxLanes(DL32());
constexpr int64_t kGroupRows = hn::MaxLanes(D32());
static_assert(kGroupRows == 4 || kGroupRows == 8, "128- or 256-bit block vectors");
constexpr size_t kUnitsPerBlock = kQuantBlock / 2;
static_assert(sizeof(WideQ8Block) == kUnitsPerBlock * sizeof(int32_t), "activation units are the block's int32s");
using LaneRowTile = RowTile<kLaneRows>;
// Unpacking and transposing a tile costs about as much as computing it for a few tokens: below
// this many, the kernels above are faster (measured on Zen 4 with AVX-512 and with AVX2).
constexpr int64_t kLaneRowsMinTokens = kLaneRows >= 16 ? 4 : 8;

// Transposes a square of 32-bit lanes: afterwards lane r of v[i] is what lane i of v[r] was.
template <class D>
HWY_INLINE void TransposeSquare(D d32, hn::Vec<D> (&v)[kGroupRows]) {
  const hn::Repartition<int64_t, D> d64;
  const auto interleave64 = [&](hn::Vec<D> a, hn::Vec<D> b, bool upper) {
    const auto a64 = hn::BitCast(d64, a), b64 = hn::BitCast(d64, b);
    return hn::BitCast(d32, upper ? hn::InterleaveUpper(d64, a64, b64) : hn::InterleaveLower(d64, a64, b64));
  };
  // 4x4 transposes within each 128-bit block, of rows 0-3 (and 4-7).
  hn::Vec<D> quads[kGroupRows];
  for (size_t g = 0; g < kGroupRows; g += 4) {
    const auto lo01 = hn::InterleaveLower(d32, v[g], v[g + 1]), hi01 = hn::InterleaveUpper(d32, v[g], v[g + 1]);
    const auto lo23 = hn::InterleaveLower(d32, v[g + 2], v[g + 3]), hi23 = hn::InterleaveUpper(d32, v[g + 2], v[g + 3]);
    quads[g + 0] = interleave64(lo01, lo23, false);
    quads[g + 1] = interleave64(lo01, lo23, true);
    quads[g + 2] = interleave64(hi01, hi23, false);
    quads[g + 3] = interleave64(hi01, hi23, true);
  }
  if constexpr (kGroupRows == 8) {  // lane i (lower blocks) and i + 4 (upper blocks) of rows 0-3 and 4-7
    for (size_t i = 0; i < 4; ++i) {
      v[i] = hn::ConcatLowerLower(d32, quads[i + 4], quads[i]);
      v[i + 4] = hn::ConcatUpperUpper(d32, quads[i + 4], quads[i]);
    }
  } else {
    for (size_t i = 0; i < 4; ++i) v[i] = quads[i];
  }
}

// Writes the units of a tile's blocks (kUnitsPerBlock vectors of kLaneRows lanes per block) and
// the blocks' scales (kLaneRows per block).
template <class Rows>
void UnpackLaneRowTile(const LaneRowTile& tile, int64_t n_blocks, int32_t* HWY_RESTRICT units,
                       float* HWY_RESTRICT scales) {
  const D32 d32;
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32_t* block_units = units + b * kUnitsPerBlock * kLaneRows;
    for (int64_t group = 0; group < kLaneRows; group += kGroupRows) {
      UnpackedBlock w[kGroupRows];
      for (int64_t r = 0; r < kGroupRows; ++r) {
        const uint8_t* block = tile.rows[group + r] + b * Rows::kBlockBytes;
        w[r] = Rows::Unpack(block);
        uint16_t scale;
        std::memcpy(&scale, block, sizeof(scale));  // d comes first
        scales[b * kLaneRows + group + r] = f16_to_f32(scale);
      }
      for (size_t p = 0; p < kParts; ++p) {
        V32 even[kGroupRows], odd[kGroupRows];
        for (int64_t r = 0; r < kGroupRows; ++r) {
          even[r] = hn::BitCast(d32, w[r].even[p]);
          odd[r] = hn::BitCast(d32, w[r].odd[p]);
        }
        TransposeSquare(d32, even);
        TransposeSquare(d32, odd);
        for (int64_t i = 0; i < kGroupRows; ++i) {
          const size_t unit = p * kGroupRows + i;
          hn::Store(even[i], d32, block_units + unit * kLaneRows + group);
          hn::Store(odd[i], d32, block_units + (kUnitsPerBlock / 2 + unit) * kLaneRows + group);
        }
      }
    }
  }
}

// The f32 accumulators of each (row, token) in kOrder: kGroups per token, each adding the block
// sum of its units (group g: units g, g + kGroups, ..): one group of all 16 units for
// kBlockSequential, ggml's 8 lanes for kEightLanes (lane j: elements 4j..4j+3 = units j, 8 + j).
template <QuantAccumulation kOrder>
constexpr size_t kLaneGroups = kOrder == QuantAccumulation::kEightLanes ? 8 : 1;
// Tokens per tile: as many as the accumulators leave registers for (AVX-512 has 32, not 16).
template <QuantAccumulation kOrder>
constexpr size_t kLaneRowTileTokens =
    kOrder == QuantAccumulation::kEightLanes ? (kLaneRows >= 16 ? 2 : 1) : 4;

// What the lane-row kernels keep for each token of a tile: its activations' block scales and
// kGroups f32 accumulators (lane r: row r), stored at the end as the tile's results (ggml's eight
// lanes summed in its order, or the one group as it is).
template <size_t kTokens, size_t kGroups>
class LaneRowAccumulators {
 public:
  LaneRowAccumulators(const PreparedActivations& x, int64_t t0) {
    for (size_t t = 0; t < kTokens; ++t) {
      x_scales_[t] = x.q8_scales(t0 + t);
      for (auto& group : acc_[t]) group = hn::Zero(DLF());
    }
  }

  // Block b's scale of each token times the rows' block scales (kLaneRows of them).
  HWY_INLINE void BlockScales(const float* row_scales, int64_t b, hn::Vec<DLF> (&out)[kTokens]) const {
    const DLF df;
    const auto w_scales = hn::Load(df, row_scales);
    for (size_t t = 0; t < kTokens; ++t) out[t] = hn::Mul(w_scales, hn::Set(df, x_scales_[t][b]));
  }

  // Adds group g's exact int32 sums of token t, times the block's scale.
  HWY_INLINE void Add(size_t t, size_t g, hn::Vec<DL32> sums, hn::Vec<DLF> block_scale) {
    acc_[t][g] = hn::MulAdd(hn::ConvertTo(DLF(), sums), block_scale, acc_[t][g]);
  }

  HWY_INLINE void Store(const DotRowsJob& job, const LaneRowTile& tile, int64_t t0) const {
    for (size_t t = 0; t < kTokens; ++t) {
      float group_results[kGroups][kLaneRows];
      for (size_t g = 0; g < kGroups; ++g) hn::StoreU(acc_[t][g], DLF(), group_results[g]);
      float results[kLaneRows];
      for (int64_t r = 0; r < kLaneRows; ++r) {
        if constexpr (kGroups == 8) {
          float lanes[8];
          for (size_t g = 0; g < kGroups; ++g) lanes[g] = group_results[g][r];
          results[r] = sum_lanes_in_ggml_order(lanes);
        } else {
          results[r] = group_results[0][r];
        }
      }
      StoreTileResults(job, tile, t0 + t, results);
    }
  }

 private:
  const float* x_scales_[kTokens];
  hn::Vec<DLF> acc_[kTokens][kGroups];
};

template <QuantAccumulation kOrder, size_t kTokens>
HWY_NOINLINE void LaneRowTokens(const DotRowsJob& job, const LaneRowTile& tile, const int32_t* units,
                                const float* scales, int64_t t0) {
  constexpr size_t kGroups = kLaneGroups<kOrder>;
  const PreparedActivations& x = *job.activations;
  const DL16 d16;
  const DL32 d32;
  const WideQ8Block* x_blocks[kTokens];
  for (size_t t = 0; t < kTokens; ++t) x_blocks[t] = x.wide_blocks(t0 + t);
  LaneRowAccumulators<kTokens, kGroups> acc(x, t0);
  for (int64_t b = 0; b < x.cols() / kQuantBlock; ++b) {
    const int32_t* block_units = units + b * kUnitsPerBlock * kLaneRows;
    hn::Vec<DLF> block_scales[kTokens];
    acc.BlockScales(scales + b * kLaneRows, b, block_scales);
    for (size_t g = 0; g < kGroups; ++g) {
      hn::Vec<DL32> sums[kTokens], odd_products[kTokens];
      for (size_t t = 0; t < kTokens; ++t) sums[t] = odd_products[t] = hn::Zero(d32);
      for (size_t u = g; u < kUnitsPerBlock; u += kGroups) {
        const auto w = hn::BitCast(d16, hn::Load(d32, block_units + u * kLaneRows));
        for (size_t t = 0; t < kTokens; ++t) {
          int32_t x_unit;
          std::memcpy(&x_unit, reinterpret_cast<const uint8_t*>(&x_blocks[t][b]) + u * sizeof(x_unit), sizeof(x_unit));
          const auto x_units = hn::BitCast(d16, hn::Set(d32, x_unit));
          sums[t] = hn::ReorderWidenMulAccumulate(d32, w, x_units, sums[t], odd_products[t]);
        }
      }
      for (size_t t = 0; t < kTokens; ++t) acc.Add(t, g, hn::RearrangeToOddPlusEven(sums[t], odd_products[t]), block_scales[t]);
    }
  }
  acc.Store(job, tile, t0);
}

#if HWY_TARGET == HWY_AVX3_DL
// The lane-row kernel with VNNI (VPDPBUSD: 64 unsigned bytes times 64 signed ones, each four
// products summed into an int32 lane). A unit is four consecutive elements of a row, a block's
// eight units are ggml's eight lanes (unit g: elements 4g..4g+3). The weights stay signed and the
// activations enter unsigned as x + 128; the extra 128 x Σw of each unit is the row's own, taken
// off once per tile at unpacking (the sums start from -128 x Σw), so tokens pay nothing for it.
// The int32 sums are the exact integers the int16 path computes, so results are bit-identical.
static_assert(kLaneRows == 16, "AVX3_DL's 512-bit vectors hold 16 rows of int32");
constexpr int64_t kVnniUnitsPerBlock = kQuantBlock / 4;

// A tile unpacked for VnniLaneRowTokens: per block, each unit's signed weights (unit u: lane r
// holds row r's four bytes), each unit's start value -128 x Σw (lane r: row r), the same summed
// over the block, and the rows' scales.
struct VnniLaneRowTile {
  int32_t* units;
  int32_t* unit_starts;
  int32_t* block_starts;
  float* scales;
};

// Block b of a row as 32 signed weights in element order.
template <class Rows>
CHANNEL_VNNI_ATTR HWY_INLINE __m256i SignedWeights(const uint8_t* block);
template <>
CHANNEL_VNNI_ATTR HWY_INLINE __m256i SignedWeights<Q4_0Rows>(const uint8_t* block) {
  // Byte i holds element i (low nibble) and element i + 16 (high nibble); each is stored + 8.
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(BlockQ4_0, qs)));
  const __m256i nibbles =
      _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), _mm256_set1_epi8(0x0f));
  return _mm256_sub_epi8(nibbles, _mm256_set1_epi8(8));
}
template <>
CHANNEL_VNNI_ATTR HWY_INLINE __m256i SignedWeights<Q8_0Rows>(const uint8_t* block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_0, qs)));
}

template <class Rows>
CHANNEL_VNNI_ATTR void UnpackVnniLaneRowTile(const LaneRowTile& tile, int64_t n_blocks, const VnniLaneRowTile& out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < kLaneRows; ++r) {
      const uint8_t* block = tile.rows[r] + b * Rows::kBlockBytes;
      uint16_t scale;
      std::memcpy(&scale, block, sizeof(scale));  // d comes first
      out.scales[b * kLaneRows + r] = f16_to_f32(scale);
      const __m256i w = SignedWeights<Rows>(block);
      // Σw of each unit (ones times w, four to a lane), times -128.
      const __m256i unit_sums = DotBytesEvex(_mm256_setzero_si256(), _mm256_set1_epi8(1), w);
      alignas(32) int32_t words[kVnniUnitsPerBlock], starts[kVnniUnitsPerBlock];
      _mm256_store_si256(reinterpret_cast<__m256i*>(words), w);
      _mm256_store_si256(reinterpret_cast<__m256i*>(starts), _mm256_slli_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), unit_sums), 7));
      int32_t block_start = 0;
      for (int64_t u = 0; u < kVnniUnitsPerBlock; ++u) {
        out.units[(b * kVnniUnitsPerBlock + u) * kLaneRows + r] = words[u];
        out.unit_starts[(b * kVnniUnitsPerBlock + u) * kLaneRows + r] = starts[u];
        block_start += starts[u];
      }
      out.block_starts[b * kLaneRows + r] = block_start;
    }
  }
}

template <QuantAccumulation kOrder, size_t kTokens>
CHANNEL_VNNI_ATTR HWY_NOINLINE void VnniLaneRowTokens(const DotRowsJob& job, const LaneRowTile& tile,
                                                      const VnniLaneRowTile& unpacked, int64_t t0) {
  constexpr size_t kGroups = kLaneGroups<kOrder>;
  constexpr int64_t kUnitsPerGroup = kVnniUnitsPerBlock / static_cast<int64_t>(kGroups);
  const PreparedActivations& x = *job.activations;
  const BlockQ8_0* x_blocks[kTokens];
  for (size_t t = 0; t < kTokens; ++t) x_blocks[t] = x.q8_blocks(t0 + t);
  LaneRowAccumulators<kTokens, kGroups> acc(x, t0);
  for (int64_t b = 0; b < x.cols() / kQuantBlock; ++b) {
    hn::Vec<DLF> block_scales[kTokens];
    acc.BlockScales(unpacked.scales + b * kLaneRows, b, block_scales);
    for (size_t g = 0; g < kGroups; ++g) {
      const int32_t* starts = kGroups == 1 ? unpacked.block_starts + b * kLaneRows
                                           : unpacked.unit_starts + (b * kVnniUnitsPerBlock + g) * kLaneRows;
      __m512i sums[kTokens];
      for (size_t t = 0; t < kTokens; ++t) sums[t] = _mm512_load_si512(starts);
      for (int64_t i = 0; i < kUnitsPerGroup; ++i) {
        const int64_t u = static_cast<int64_t>(g) * kUnitsPerGroup + i;
        const __m512i w = _mm512_load_si512(unpacked.units + (b * kVnniUnitsPerBlock + u) * kLaneRows);
        for (size_t t = 0; t < kTokens; ++t) {
          uint32_t x_unit;
          std::memcpy(&x_unit, x_blocks[t][b].qs + u * 4, sizeof(x_unit));
          const __m512i x_plus_128 = _mm512_set1_epi32(static_cast<int32_t>(x_unit ^ 0x80808080u));
          sums[t] = _mm512_dpbusd_epi32(sums[t], x_plus_128, w);
        }
      }
      for (size_t t = 0; t < kTokens; ++t) acc.Add(t, g, hn::Vec<DL32>{sums[t]}, block_scales[t]);
    }
  }
  acc.Store(job, tile, t0);
}

template <class Rows, QuantAccumulation kOrder>
void VnniLaneRowQuantRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  const int64_t n_blocks = job.activations->cols() / kQuantBlock;
  const size_t lanes = static_cast<size_t>(n_blocks * kLaneRows);
  const auto units = hwy::AllocateAligned<int32_t>(lanes * kVnniUnitsPerBlock);
  const auto unit_starts = hwy::AllocateAligned<int32_t>(lanes * kVnniUnitsPerBlock);
  const auto block_starts = hwy::AllocateAligned<int32_t>(lanes);
  const auto scales = hwy::AllocateAligned<float>(lanes);
  const VnniLaneRowTile unpacked{units.get(), unit_starts.get(), block_starts.get(), scales.get()};
  ForEachRowTile<kLaneRows>(job, begin, end, [&](const LaneRowTile& tile) {
    UnpackVnniLaneRowTile<Rows>(tile, n_blocks, unpacked);
    ForEachTokenTile<kLaneRowTileTokens<kOrder>>(job.activations->n_tokens(), [&](auto tokens, int64_t t0) {
      VnniLaneRowTokens<kOrder, decltype(tokens)::value>(job, tile, unpacked, t0);
    });
  });
}
#endif

template <class Rows, QuantAccumulation kOrder>
void LaneRowQuantRows(const DotRowsJob& job, int64_t begin, int64_t end) {
#if HWY_TARGET == HWY_AVX3_DL
  VnniLaneRowQuantRows<Rows, kOrder>(job, begin, end);
#else
  const int64_t n_blocks = job.activations->cols() / kQuantBlock;
  const auto units = hwy::AllocateAligned<int32_t>(n_blocks * kUnitsPerBlock * kLaneRows);
  const auto scales = hwy::AllocateAligned<float>(n_blocks * kLaneRows);
  ForEachRowTile<kLaneRows>(job, begin, end, [&](const LaneRowTile& tile) {
    UnpackLaneRowTile<Rows>(tile, n_blocks, units.get(), scales.get());
    ForEachTokenTile<kLaneRowTileTokens<kOrder>>(job.activations->n_tokens(), [&](auto tokens, int64_t t0) {
      LaneRowTokens<kOrder, decltype(tokens)::value>(job, tile, units.get(), scales.get(), t0);
    });
  });
#endif
}

template <class Rows, QuantAccumulation kOrder>
void QuantRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  if (job.activations->n_tokens() >= kLaneRowsMinTokens) {
    LaneRowQuantRows<Rows, kOrder>(job, begin, end);
  } else {
    SmallBatchQuantRows<Rows, kOrder>(job, begin, end);
  }
}

template <class Rows>
void QuantRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  if (job.accumulation == QuantAccumulation::kBlockSequential) {
    QuantRows<Rows, QuantAccumulation::kBlockSequential>(job, begin, end);
  } else {
    QuantRows<Rows, QuantAccumulation::kEightLanes>(job, begin, end);
  }
}

// ============================================================================ F32 / F16 / BF16

// Weights decoded to f32 (exactly), times activations already rounded to the weight's
// activation type; products accumulate in f32 with the full vector width.
struct F32Rows {
  static constexpr GgmlType kType = GgmlType::F32;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D df, const uint8_t* row, int64_t i) {
    return hn::LoadU(df, reinterpret_cast<const float*>(row) + i);
  }
};

template <GgmlType kWeightType, class HalfType>
struct HalfRows {
  static constexpr GgmlType kType = kWeightType;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D df, const uint8_t* row, int64_t i) {
    return hn::PromoteTo(df, hn::LoadU(hn::Rebind<HalfType, D>(), reinterpret_cast<const HalfType*>(row) + i));
  }
};
using F16Rows = HalfRows<GgmlType::F16, hwy::float16_t>;
using BF16Rows = HalfRows<GgmlType::BF16, hwy::bfloat16_t>;

// 4 x 2 accumulators + 4 weight vectors fit the 16 registers of AVX2.
constexpr int64_t kFloatTileRows = 4;
constexpr size_t kFloatTileTokens = 2;
using FloatRowTile = RowTile<kFloatTileRows>;

template <class Rows, size_t kTokens>
HWY_NOINLINE void FloatTokens(const DotRowsJob& job, const FloatRowTile& tile, int64_t t0) {
  const PreparedActivations& x = *job.activations;
  const hn::ScalableTag<float> df;
  using V = hn::Vec<decltype(df)>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(df));
  const int64_t cols = x.cols();
  const float* x_values[kTokens];
  for (size_t t = 0; t < kTokens; ++t) x_values[t] = x.values(t0 + t);
  V acc[kFloatTileRows][kTokens];
  for (auto& row : acc)
    for (auto& token : row) token = hn::Zero(df);
  int64_t i = 0;
  for (; i + lanes <= cols; i += lanes) {
    V w[kFloatTileRows];
    for (int64_t r = 0; r < kFloatTileRows; ++r) w[r] = Rows::Load(df, tile.rows[r], i);
    for (size_t t = 0; t < kTokens; ++t) {
      const V xv = hn::LoadU(df, x_values[t] + i);
      for (int64_t r = 0; r < kFloatTileRows; ++r) acc[r][t] = hn::MulAdd(w[r], xv, acc[r][t]);
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    float results[kFloatTileRows];
    for (int64_t r = 0; r < kFloatTileRows; ++r) {
      float sum = hn::GetLane(hn::SumOfLanes(df, acc[r][t]));
      for (int64_t j = i; j < cols; ++j) sum += decode_float_weight(Rows::kType, tile.rows[r], j) * x_values[t][j];
      results[r] = sum;
    }
    StoreTileResults(job, tile, t0 + t, results);
  }
}

template <class Rows>
void FloatRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  ForEachRowTile<kFloatTileRows>(job, begin, end, [&](const FloatRowTile& tile) {
    ForEachTokenTile<kFloatTileTokens>(job.activations->n_tokens(), [&](auto tokens, int64_t t0) {
      FloatTokens<Rows, decltype(tokens)::value>(job, tile, t0);
    });
  });
}

// ============================================================================ BF16 pairs

// BF16 rows in the VDPBF16PS order (accumulation.h) on any vector width: a set of 16 lanes is
// kVecsPerSet vectors, and vector v of a set takes the pairs of values [2vL, 2vL + 2L) of each
// 32-value chunk (L lanes): their odd and even values, deinterleaved from two loads.
template <size_t kTokens, Bf16Accumulation kOrder>
HWY_NOINLINE void Bf16PairTokens(const DotRowsJob& job, const FloatRowTile& tile, int64_t t0) {
  using DF = hn::ScalableTag<float>;
  using V = hn::Vec<DF>;
  const DF df;
  constexpr size_t kLanes = hn::MaxLanes(DF());
  constexpr size_t kVecsPerSet = 16 / kLanes;
  constexpr int64_t kSets = kOrder == Bf16Accumulation::kPairsTiled ? 1 : 2;
  const PreparedActivations& x = *job.activations;
  const int64_t cols = x.cols();
  const int64_t paired = kSets == 1 ? cols : cols / 64 * 64;
  const float* x_values[kTokens];
  for (size_t t = 0; t < kTokens; ++t) x_values[t] = x.values(t0 + t);
  V acc[kFloatTileRows][kTokens][kSets][kVecsPerSet];
  for (auto& row : acc)
    for (auto& token : row)
      for (auto& set : token)
        for (V& v : set) v = hn::Zero(df);
  for (int64_t c = 0; c < paired; c += 32) {
    const int64_t set = kSets == 1 ? 0 : (c / 32) % 2;
    for (size_t v = 0; v < kVecsPerSet; ++v) {
      const int64_t i = c + static_cast<int64_t>(2 * v * kLanes);
      V w_odd[kFloatTileRows], w_even[kFloatTileRows];
      for (int64_t r = 0; r < kFloatTileRows; ++r) {
        const V lo = BF16Rows::Load(df, tile.rows[r], i), hi = BF16Rows::Load(df, tile.rows[r], i + kLanes);
        w_odd[r] = hn::ConcatOdd(df, hi, lo);
        w_even[r] = hn::ConcatEven(df, hi, lo);
      }
      for (size_t t = 0; t < kTokens; ++t) {
        const V lo = hn::LoadU(df, x_values[t] + i), hi = hn::LoadU(df, x_values[t] + i + kLanes);
        const V x_odd = hn::ConcatOdd(df, hi, lo), x_even = hn::ConcatEven(df, hi, lo);
        for (int64_t r = 0; r < kFloatTileRows; ++r) {
          V& a = acc[r][t][set][v];
          a = hn::Add(a, hn::Mul(w_odd[r], x_odd));  // exact products: one rounding per addition
          a = hn::Add(a, hn::Mul(w_even[r], x_even));
        }
      }
    }
  }
  for (size_t t = 0; t < kTokens; ++t) {
    float results[kFloatTileRows];
    for (int64_t r = 0; r < kFloatTileRows; ++r) {
      float lanes[kSets][16];
      for (int64_t set = 0; set < kSets; ++set)
        for (size_t v = 0; v < kVecsPerSet; ++v) hn::StoreU(acc[r][t][set][v], df, lanes[set] + v * kLanes);
      if constexpr (kSets == 1) {
        results[r] = sum_16_lanes_in_reduce_order(lanes[0]);
      } else {
        double sum = sum_16_lanes_in_reduce_order(lanes[0]);
        sum += sum_16_lanes_in_reduce_order(lanes[1]);
        for (int64_t j = paired; j < cols; ++j) sum += decode_float_weight(GgmlType::BF16, tile.rows[r], j) * x_values[t][j];
        results[r] = static_cast<float>(sum);
      }
    }
    StoreTileResults(job, tile, t0 + t, results);
  }
}

template <Bf16Accumulation kOrder>
void Bf16PairRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  ForEachRowTile<kFloatTileRows>(job, begin, end, [&](const FloatRowTile& tile) {
    ForEachTokenTile<kFloatTileTokens>(job.activations->n_tokens(), [&](auto tokens, int64_t t0) {
      Bf16PairTokens<decltype(tokens)::value, kOrder>(job, tile, t0);
    });
  });
}

void Bf16Rows(const DotRowsJob& job, int64_t begin, int64_t end) {
  switch (job.bf16_accumulation) {
    case Bf16Accumulation::kVectorLanes: return FloatRows<BF16Rows>(job, begin, end);
    case Bf16Accumulation::kPairsTiled: return Bf16PairRows<Bf16Accumulation::kPairsTiled>(job, begin, end);
    case Bf16Accumulation::kPairsVecDot: return Bf16PairRows<Bf16Accumulation::kPairsVecDot>(job, begin, end);
  }
}

// ============================================================================ entry

void DotRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  switch (job.weights->type) {
    case GgmlType::Q4_0: return QuantRows<Q4_0Rows>(job, begin, end);
    case GgmlType::Q8_0: return QuantRows<Q8_0Rows>(job, begin, end);
    case GgmlType::F16: return FloatRows<F16Rows>(job, begin, end);
    case GgmlType::BF16: return Bf16Rows(job, begin, end);
    case GgmlType::F32: return FloatRows<F32Rows>(job, begin, end);
  }
}

#endif  // HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE

}  // namespace HWY_NAMESPACE
}  // namespace channel::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace channel::cpu {

HWY_EXPORT(DotRows);

void dot_rows(const DotRowsJob& job, int64_t begin, int64_t end) {
  if (job.weights->layout == WeightLayout::kRowGroups) return dot_row_groups(job, begin, end);
  HWY_DYNAMIC_DISPATCH(DotRows)(job, begin, end);
}

}  // namespace channel::cpu
#endif  // HWY_ONCE
