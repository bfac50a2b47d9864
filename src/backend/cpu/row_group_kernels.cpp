#include "backend/cpu/row_group_kernels.h"

#include <cstring>

#include <hwy/aligned_allocator.h>
#include <hwy/cache_control.h>

#include "backend/cpu/amx_support.h"
#include "backend/cpu/row_groups.h"

// Highway compiles this file once per SIMD target and dispatches at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/row_group_kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace channel::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The activations of a tile's tokens, as the kernels read them per block.
template <size_t kTokens>
struct TokenTile {
  TokenTile(const PreparedActivations& x, int64_t t0) : first(t0) {
    for (size_t t = 0; t < kTokens; ++t) {
      blocks[t] = x.q8_blocks(t0 + t);
      wide[t] = x.wide_blocks(t0 + t);
      scales[t] = x.q8_scales(t0 + t);
      sums[t] = x.q8_sums(t0 + t);
    }
  }
  int64_t first;
  const BlockQ8_0* blocks[kTokens];
  const WideQ8Block* wide[kTokens];
  const float* scales[kTokens];
  const int32_t* sums[kTokens];
};

// Four bytes of a block's activations as one int32 (to broadcast to every lane).
HWY_INLINE int32_t Word(const void* bytes, size_t word) {
  int32_t value;
  std::memcpy(&value, static_cast<const uint8_t*>(bytes) + word * sizeof(value), sizeof(value));
  return value;
}

#if HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE

// Without fixed-width vectors (see dot_kernels.cpp): the scalar reference, output by output.
void RowGroupRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  const PreparedActivations& x = *job.activations;
  for (int64_t row = begin; row < end; ++row) {
    for (int64_t t = 0; t < x.n_tokens(); ++t) {
      job.out[t * job.out_stride + row] = dot_row_group_reference(*job.weights, row, x.q8_blocks(t));
    }
  }
}

#else  // fixed-width SIMD targets

using DU8 = hn::ScalableTag<uint8_t>;
using DU16 = hn::Repartition<uint16_t, DU8>;
using DI16 = hn::Repartition<int16_t, DU8>;
using DI32 = hn::Repartition<int32_t, DU8>;
using DF = hn::Repartition<float, DU8>;
using VF = hn::Vec<DF>;
using VI32 = hn::Vec<DI32>;
constexpr int64_t kLaneRows = hn::MaxLanes(DI32());  // rows per vector
constexpr int64_t kGroupVectors = kRowGroupRows / kLaneRows;
static_assert(kGroupVectors * kLaneRows == kRowGroupRows, "vectors of 4, 8 or 16 int32 lanes");
constexpr int64_t kQ4Units = Q4_0RowGroupBlock::kUnits;
constexpr int64_t kQ8Units = Q8_0RowGroupBlock::kUnits;

// Functions that use AVX512-VNNI on AVX3_DL (every CPU Highway runs that target on has it).
#undef CHANNEL_VNNI_ATTR
#if HWY_TARGET == HWY_AVX3_DL
#define CHANNEL_VNNI_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
#else
#define CHANNEL_VNNI_ATTR
#endif

// f32 accumulators of a group's rows for each token (vector s: rows s * kLaneRows ..), adding
// each block's exact integer sums times d_w * d_x, block after block.
template <size_t kTokens>
class GroupAccumulators {
 public:
  GroupAccumulators() {
    for (auto& vectors : acc_)
      for (VF& v : vectors) v = hn::Zero(DF());
  }

  HWY_INLINE void Add(int64_t s, size_t t, VI32 block_sums, VF w_scales, float x_scale) {
    const DF df;
    acc_[s][t] = hn::MulAdd(hn::ConvertTo(df, block_sums), hn::Mul(w_scales, hn::Set(df, x_scale)), acc_[s][t]);
  }

  HWY_INLINE void Store(const DotRowsJob& job, int64_t first_row, int64_t t0) const {
    for (size_t t = 0; t < kTokens; ++t) {
      float* out = job.out + (t0 + static_cast<int64_t>(t)) * job.out_stride + first_row;
      for (int64_t s = 0; s < kGroupVectors; ++s) hn::StoreU(acc_[s][t], DF(), out + s * kLaneRows);
    }
  }

 private:
  VF acc_[kGroupVectors][kTokens];
};

// A thread streams its groups' blocks in order, yet the hardware prefetcher alone leaves decode
// short of the read bandwidth with two threads: fetching four blocks ahead made it 5% faster on
// the Xeon build machine (gemma3-1b preset; two, eight or sixteen blocks ahead no better there),
// and eight another 5.6% on the AMD Zen 5 one (six alternating pairs, each faster; sixteen no
// better than eight). Past a matrix's end it touches the next allocation or nothing; prefetches
// do not fault.
constexpr int64_t kPrefetchBlocks = 8;
template <class Block>
HWY_INLINE void PrefetchAhead(const Block* block) {
  const auto* ahead = reinterpret_cast<const uint8_t*>(block + kPrefetchBlocks);
  for (size_t line = 0; line < sizeof(*block); line += 64) hwy::Prefetch(ahead + line);
}

// Scales of block `block`'s rows s * kLaneRows .., as f32.
template <class Block>
HWY_INLINE VF RowScales(const Block& block, int64_t s) {
  const hn::Rebind<hwy::float16_t, DF> df16;
  return hn::PromoteTo(DF(), hn::LoadU(df16, reinterpret_cast<const hwy::float16_t*>(block.d) + s * kLaneRows));
}

using VI16 = hn::Vec<DI16>;

#if !HWY_ARCH_X86
// Int16 multiply-adds, for targets without a byte multiply-add (x86 has PMADDUBSW or VPDPBUSD,
// below). A unit's 32-bit lane r holds row r's four stored nibbles (elements e0..e3 of a unit)
// as bytes; read as u16 lanes and masked, they give int16 pairs (e0, e2) and (e1, e3), which meet
// the activations' matching pairs in WideQ8Block (its even values x0, x2, .. and odd values x1,
// x3, ..) broadcast to every lane.
constexpr int64_t kPairsPerUnit = 4;  // (e0, e2) and (e1, e3) of the low nibbles, then of the high

// Unit j's int16 pairs for vector s of a block: elements 4j.. (low nibbles) and 16+4j.. (high).
HWY_INLINE void UnpackPairs(const Q4_0RowGroupBlock& block, int64_t s, int64_t j, VI16 (&pairs)[kPairsPerUnit]) {
  const DU16 du16;
  const DI16 di16;
  const auto nibbles = hn::Set(du16, 0x0f0f);
  const auto low_bytes = hn::Set(du16, 0x00ff);
  const auto packed = hn::BitCast(du16, hn::LoadU(DU8(), block.qs[j] + s * 4 * kLaneRows));
  const auto low = hn::And(packed, nibbles);
  const auto high = hn::And(hn::ShiftRight<4>(packed), nibbles);
  pairs[0] = hn::BitCast(di16, hn::And(low, low_bytes));
  pairs[1] = hn::BitCast(di16, hn::ShiftRight<8>(low));
  pairs[2] = hn::BitCast(di16, hn::And(high, low_bytes));
  pairs[3] = hn::BitCast(di16, hn::ShiftRight<8>(high));
}

// Where GroupTokens gets a block's pairs: unpacked as it goes (a decode step reads each block
// once), or from a copy of the whole group unpacked once for a batch's token tiles (unpacking is
// as much work as a tile of tokens: doing it per tile made AVX2 prefill 30% slower).
struct PairsOnTheFly {
  const Q4_0RowGroupBlock* group;
  HWY_INLINE void Get(int64_t b, int64_t s, int64_t j, VI16 (&pairs)[kPairsPerUnit]) const {
    UnpackPairs(group[b], s, j, pairs);
  }
};
constexpr size_t kPairVectorsPerBlock = kGroupVectors * kQ4Units * kPairsPerUnit;
struct UnpackedPairs {
  const int16_t* vectors;  // kPairVectorsPerBlock per block, in Get's order
  HWY_INLINE void Get(int64_t b, int64_t s, int64_t j, VI16 (&pairs)[kPairsPerUnit]) const {
    const DI16 di16;
    const int16_t* first = vectors + ((b * kGroupVectors + s) * kQ4Units + j) * kPairsPerUnit * hn::Lanes(di16);
    for (int64_t p = 0; p < kPairsPerUnit; ++p) pairs[p] = hn::Load(di16, first + p * hn::Lanes(di16));
  }
};

void UnpackGroupPairs(const Q4_0RowGroupBlock* group, int64_t n_blocks, int16_t* out) {
  const DI16 di16;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t s = 0; s < kGroupVectors; ++s) {
      for (int64_t j = 0; j < kQ4Units; ++j) {
        VI16 pairs[kPairsPerUnit];
        UnpackPairs(group[b], s, j, pairs);
        for (const VI16& p : pairs) {
          hn::Store(p, di16, out);
          out += hn::Lanes(di16);
        }
      }
    }
  }
}

template <size_t kTokens, class Pairs>
HWY_NOINLINE void GroupTokens(const DotRowsJob& job, const Q4_0RowGroupBlock* group, const Pairs& weights,
                              int64_t first_row, const TokenTile<kTokens>& x) {
  const DI16 di16;
  const DI32 di32;
  GroupAccumulators<kTokens> acc;
  for (int64_t b = 0; b < job.activations->cols() / kQuantBlock; ++b) {
    const Q4_0RowGroupBlock& block = group[b];
    PrefetchAhead(group + b);
    for (int64_t s = 0; s < kGroupVectors; ++s) {
      VI32 sums[kTokens], odd_products[kTokens];
      for (size_t t = 0; t < kTokens; ++t) sums[t] = odd_products[t] = hn::Zero(di32);
      for (int64_t j = 0; j < kQ4Units; ++j) {
        VI16 w[kPairsPerUnit];
        weights.Get(b, s, j, w);
        for (size_t t = 0; t < kTokens; ++t) {
          const WideQ8Block& xw = x.wide[t][b];
          const auto pair = [&](const int16_t* values, int64_t unit) {
            return hn::BitCast(di16, hn::Set(di32, Word(values, static_cast<size_t>(unit))));
          };
          sums[t] = hn::ReorderWidenMulAccumulate(di32, w[0], pair(xw.even, j), sums[t], odd_products[t]);
          sums[t] = hn::ReorderWidenMulAccumulate(di32, w[1], pair(xw.odd, j), sums[t], odd_products[t]);
          sums[t] = hn::ReorderWidenMulAccumulate(di32, w[2], pair(xw.even, j + 4), sums[t], odd_products[t]);
          sums[t] = hn::ReorderWidenMulAccumulate(di32, w[3], pair(xw.odd, j + 4), sums[t], odd_products[t]);
        }
      }
      const VF w_scales = RowScales(block, s);
      for (size_t t = 0; t < kTokens; ++t) {
        const VI32 offset = hn::Set(di32, -8 * x.sums[t][b]);  // the nibbles are q + 8
        acc.Add(s, t, hn::Add(hn::RearrangeToOddPlusEven(sums[t], odd_products[t]), offset), w_scales,
                x.scales[t][b]);
      }
    }
  }
  acc.Store(job, first_row, x.first);
}
#endif  // !HWY_ARCH_X86

#if HWY_TARGET == HWY_AVX3_DL
// VPDPBUSD (AVX512-VNNI) multiplies a unit's 64 unsigned bytes, the nibbles as stored, by the
// activations' four signed bytes broadcast to every lane and adds each lane's four products: a
// block is eight instructions per token. Exact integers, so the results are those of the int16
// path.
static_assert(kGroupVectors == 1, "AVX3_DL's 512-bit vectors hold a whole group");

// Block `block`'s eight units, as unsigned bytes (the nibbles as stored): unit u holds elements
// 4u..4u+3 of every row.
CHANNEL_VNNI_ATTR HWY_INLINE void UnpackUnits(const Q4_0RowGroupBlock& block, __m512i (&units)[2 * kQ4Units]) {
  const __m512i nibble_mask = _mm512_set1_epi8(0x0f);
  for (int64_t j = 0; j < kQ4Units; ++j) {
    const __m512i packed = _mm512_loadu_si512(block.qs[j]);
    units[j] = _mm512_and_si512(packed, nibble_mask);
    units[j + kQ4Units] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), nibble_mask);
  }
}

// Decode (one token) reads each weight once, so its speed is the read bandwidth a thread gets,
// and some CPUs give a thread more of it over several sequential streams than over one: the H100
// host's Xeon read 26.6 GB/s with two threads of one stream each, 31.6 with two streams each and
// 42.0 with eight (bench/read_bandwidth.cpp), where the Zen 5 build machine read 52.8 and 54.0.
// So a decode product takes kDecodeStreams consecutive groups together, block by block: each
// group is its own stream (groups are tens of KiB apart, in other 4 KiB pages, where the hardware
// prefetchers keep a stream each). A batch's tiles take one group at a time (their tokens already
// reuse each load). Each group's sums are formed alike either way.
constexpr int64_t kDecodeStreams = 2;

// The products of kGroups consecutive row groups, the first at `group` (holding `first_row`),
// with a tile of kTokens tokens.
template <int64_t kGroups, size_t kTokens>
CHANNEL_VNNI_ATTR HWY_NOINLINE void VnniGroupsTokens(const DotRowsJob& job, const Q4_0RowGroupBlock* group,
                                                     int64_t first_row, const TokenTile<kTokens>& x) {
  const int64_t n_blocks = job.activations->cols() / kQuantBlock;
  GroupAccumulators<kTokens> acc[kGroups];
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t g = 0; g < kGroups; ++g) {
      const Q4_0RowGroupBlock* blocks = group + g * n_blocks;  // groups lie one after another
      PrefetchAhead(blocks + b);
      __m512i units[2 * kQ4Units];
      UnpackUnits(blocks[b], units);
      const VF w_scales = RowScales(blocks[b], 0);
      for (size_t t = 0; t < kTokens; ++t) {
        __m512i sums = _mm512_set1_epi32(-8 * x.sums[t][b]);  // the nibbles are q + 8
        for (size_t u = 0; u < 2 * kQ4Units; ++u) {
          sums = _mm512_dpbusd_epi32(sums, units[u], _mm512_set1_epi32(Word(x.blocks[t][b].qs, u)));
        }
        acc[g].Add(0, t, VI32{sums}, w_scales, x.scales[t][b]);
      }
    }
  }
  for (int64_t g = 0; g < kGroups; ++g) acc[g].Store(job, first_row + g * kRowGroupRows, x.first);
}

// One token's rows [begin, end): kDecodeStreams groups at a time, the rest one by one.
void VnniRowsOneToken(const DotRowsJob& job, int64_t begin, int64_t end) {
  const TokenTile<1> x(*job.activations, 0);
  int64_t first_row = begin;
  for (; first_row + kDecodeStreams * kRowGroupRows <= end; first_row += kDecodeStreams * kRowGroupRows) {
    VnniGroupsTokens<kDecodeStreams, 1>(job, row_group<Q4_0RowGroupBlock>(*job.weights, first_row), first_row, x);
  }
  for (; first_row < end; first_row += kRowGroupRows) {
    VnniGroupsTokens<1, 1>(job, row_group<Q4_0RowGroupBlock>(*job.weights, first_row), first_row, x);
  }
}
#endif

#if HWY_ARCH_X86 && HWY_TARGET != HWY_AVX3_DL
// PMADDUBSW (SSSE3 and later) multiplies a unit's unsigned bytes, the nibbles as stored (0..15),
// by the activations' four signed bytes broadcast to every lane and adds adjacent products into
// int16 lanes; the eight units of a block add into the same lanes (16 products of at most
// 15 x 128 each: exact in int16), and PMADDWD with ones adds each row's two int16 lanes into its
// int32 lane: the block's exact sum, as VPDPBUSD gives it, at half the instructions of the int16
// pairs below (AVX2 and SSE4 have no VNNI; nor have AVX-512 CPUs before Ice Lake).
using VU8 = hn::Vec<DU8>;
HWY_INLINE VI16 MulAddBytePairs(VU8 unsigned_bytes, VI32 signed_bytes) {
#if HWY_TARGET == HWY_AVX3
  return VI16{_mm512_maddubs_epi16(unsigned_bytes.raw, signed_bytes.raw)};
#elif HWY_TARGET == HWY_AVX2
  return VI16{_mm256_maddubs_epi16(unsigned_bytes.raw, signed_bytes.raw)};
#else
  return VI16{_mm_maddubs_epi16(unsigned_bytes.raw, signed_bytes.raw)};
#endif
}
HWY_INLINE VI32 AddInt16Pairs(VI16 values) {
#if HWY_TARGET == HWY_AVX3
  return VI32{_mm512_madd_epi16(values.raw, _mm512_set1_epi16(1))};
#elif HWY_TARGET == HWY_AVX2
  return VI32{_mm256_madd_epi16(values.raw, _mm256_set1_epi16(1))};
#else
  return VI32{_mm_madd_epi16(values.raw, _mm_set1_epi16(1))};
#endif
}

template <size_t kTokens>
HWY_NOINLINE void ByteGroupTokens(const DotRowsJob& job, const Q4_0RowGroupBlock* group, int64_t first_row,
                                  const TokenTile<kTokens>& x) {
  const DU8 du8;
  const DI32 di32;
  const VU8 nibble_mask = hn::Set(du8, 0x0f);
  GroupAccumulators<kTokens> acc;
  for (int64_t b = 0; b < job.activations->cols() / kQuantBlock; ++b) {
    const Q4_0RowGroupBlock& block = group[b];
    PrefetchAhead(group + b);
    for (int64_t s = 0; s < kGroupVectors; ++s) {
      // Unit u holds elements 4u..4u+3 of each row: low nibbles for u < 4, high ones above.
      VU8 units[2 * kQ4Units];
      for (int64_t j = 0; j < kQ4Units; ++j) {
        const VU8 packed = hn::LoadU(du8, block.qs[j] + s * 4 * kLaneRows);
        units[j] = hn::And(packed, nibble_mask);
        units[j + kQ4Units] = hn::And(hn::BitCast(du8, hn::ShiftRight<4>(hn::BitCast(DU16(), packed))), nibble_mask);
      }
      const VF w_scales = RowScales(block, s);
      for (size_t t = 0; t < kTokens; ++t) {
        const int8_t* quants = x.blocks[t][b].qs;
        VI16 pairs = MulAddBytePairs(units[0], hn::Set(di32, Word(quants, 0)));
        for (size_t u = 1; u < 2 * kQ4Units; ++u) {
          pairs = hn::Add(pairs, MulAddBytePairs(units[u], hn::Set(di32, Word(quants, u))));
        }
        const VI32 offset = hn::Set(di32, -8 * x.sums[t][b]);  // the nibbles are q + 8
        acc.Add(s, t, hn::Add(AddInt16Pairs(pairs), offset), w_scales, x.scales[t][b]);
      }
    }
  }
  acc.Store(job, first_row, x.first);
}
#endif

// Tokens per tile: as many as the accumulators leave registers for (AVX-512: 8 of 32 registers;
// AVX2 with PMADDUBSW: 8 was 4% faster than 4, pp128 194-198 against 186 tok/s on gemma3-1b;
// SSE4's four vectors per group spill them at any count, and 2 or 4 ran alike).
constexpr size_t kTileTokens = HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_SSSE3 ? 4 : 8;

// The kernel of this target for one tile of tokens; `pairs` (targets without a byte multiply-add,
// batches): the group unpacked by UnpackGroupPairs.
template <size_t kTokens>
void TokenTileOfGroup(const DotRowsJob& job, const Q4_0RowGroupBlock* group, const int16_t* pairs,
                      int64_t first_row, int64_t t0) {
  const TokenTile<kTokens> x(*job.activations, t0);
#if HWY_TARGET == HWY_AVX3_DL
  VnniGroupsTokens<1, kTokens>(job, group, first_row, x);
#elif HWY_ARCH_X86
  (void)pairs;
  ByteGroupTokens<kTokens>(job, group, first_row, x);
#else
  if (pairs) return GroupTokens<kTokens>(job, group, UnpackedPairs{pairs}, first_row, x);
  GroupTokens<kTokens>(job, group, PairsOnTheFly{group}, first_row, x);
#endif
}

// Calls TokenTileOfGroup for tokens [t0, n_tokens), fewer than T of them, as one tile.
template <size_t T>
void LastTokenTile(const DotRowsJob& job, const Q4_0RowGroupBlock* group, const int16_t* pairs, int64_t first_row,
                   int64_t t0, int64_t remaining) {
  if (remaining == static_cast<int64_t>(T)) return TokenTileOfGroup<T>(job, group, pairs, first_row, t0);
  if constexpr (T > 1) LastTokenTile<T - 1>(job, group, pairs, first_row, t0, remaining);
}

// One group's rows for tokens [t0, n_tokens).
void GroupRowsFrom(const DotRowsJob& job, int64_t first_row, int64_t t0, const int16_t* pairs = nullptr) {
  const Q4_0RowGroupBlock* group = row_group<Q4_0RowGroupBlock>(*job.weights, first_row);
  const int64_t n_tokens = job.activations->n_tokens();
  for (; t0 + static_cast<int64_t>(kTileTokens) <= n_tokens; t0 += kTileTokens) {
    TokenTileOfGroup<kTileTokens>(job, group, pairs, first_row, t0);
  }
  if (t0 < n_tokens) LastTokenTile<kTileTokens - 1>(job, group, pairs, first_row, t0, n_tokens - t0);
}

#if HWY_TARGET == HWY_AVX3_DL
// Intel AMX (amx_support.h): TDPBSSD multiplies a tile of 16 tokens' 32 activations by a tile of
// the group's eight units (as signed weights, unpacked once per group), four bytes at a time,
// into 16 x 16 int32 sums: a whole block of 16 tokens and 16 rows in one instruction, where VNNI
// takes 128. The sums are the same exact integers and GroupAccumulators takes them through the
// same f32 steps, so results are bit-identical to the VNNI path's. Tokens past the last whole
// tile of 16 go to the VNNI kernel.
#define CHANNEL_AMX_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni,amx-tile,amx-int8")))
constexpr int64_t kAmxTokens = 16;
constexpr size_t kUnitsBytes = 2 * kQ4Units * 64;  // a block's units: one weight tile

// The tile palette, two sets so that one block's product runs while the other's sums are read:
// tiles 0 / 3 the sums (16 tokens x 16 int32), 1 / 4 the activations (16 tokens x 32 bytes),
// 2 / 5 the weights (8 units x 16 rows x 4 bytes).
struct AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {64, 32, 64, 64, 32, 64};
  uint8_t rows[16] = {16, 16, 8, 16, 16, 8};
};
static_assert(sizeof(AmxTileConfig) == 64, "LDTILECFG reads 64 bytes");

// The units of every block of a group as signed weights (q, the stored nibble - 8), for tile loads.
CHANNEL_VNNI_ATTR void UnpackGroupWeights(const Q4_0RowGroupBlock* group, int64_t n_blocks, int8_t* out) {
  const __m512i eight = _mm512_set1_epi8(8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    __m512i units[2 * kQ4Units];
    UnpackUnits(group[b], units);
    for (size_t u = 0; u < 2 * kQ4Units; ++u) {
      _mm512_store_si512(out + b * kUnitsBytes + u * 64, _mm512_sub_epi8(units[u], eight));
    }
  }
}

// Not inlined: GCC's tile loads are asm statements that do not name the memory they read, and a
// call is what keeps the unpacked weights' stores before them.
CHANNEL_AMX_ATTR HWY_NOINLINE void AmxGroupTokens(const DotRowsJob& job, const Q4_0RowGroupBlock* group,
                                                  const int8_t* weights, int64_t first_row, int64_t t0) {
  const PreparedActivations& x = *job.activations;
  const int64_t n_blocks = x.cols() / kQuantBlock;
  const BlockQ8_0* x_blocks = x.q8_blocks(t0);
  const float* x_scales = x.q8_scales(t0);  // token t's at t * n_blocks: tokens are contiguous
  const size_t token_stride = static_cast<size_t>(n_blocks) * sizeof(BlockQ8_0);
  GroupAccumulators<kAmxTokens> acc;
  alignas(64) int32_t sums[kAmxTokens][kRowGroupRows];
  const auto add_block = [&](int64_t b) {
    const VF w_scales = RowScales(group[b], 0);
    for (size_t t = 0; t < kAmxTokens; ++t) {
      acc.Add(0, t, VI32{_mm512_load_si512(sums[t])}, w_scales, x_scales[static_cast<int64_t>(t) * n_blocks + b]);
    }
  };
  // Block b's product of 16 tokens and the weights goes into tile 0 (even b) or 3 (odd b), its
  // operands into the next two tiles. The tile intrinsics take literal tile numbers, hence a macro.
  const auto quants = [&](int64_t b) { return x_blocks[b].qs; };  // token t's: token_stride further
  const auto weight_tile = [&](int64_t b) { return weights + b * kUnitsBytes; };
#define CHANNEL_AMX_BLOCK_PRODUCT(sums_tile, x_tile, w_tile, b) \
  do {                                                         \
    _tile_zero(sums_tile);                                     \
    _tile_loadd(x_tile, quants(b), token_stride);              \
    _tile_loadd(w_tile, weight_tile(b), 64);                   \
    _tile_dpbssd(sums_tile, x_tile, w_tile);                   \
  } while (false)
  CHANNEL_AMX_BLOCK_PRODUCT(0, 1, 2, 0);
  for (int64_t b = 0; b < n_blocks; b += 2) {
    if (b + 1 < n_blocks) CHANNEL_AMX_BLOCK_PRODUCT(3, 4, 5, b + 1);
    _tile_stored(0, sums, sizeof(sums[0]));
    add_block(b);
    if (b + 1 == n_blocks) break;
    if (b + 2 < n_blocks) CHANNEL_AMX_BLOCK_PRODUCT(0, 1, 2, b + 2);
    _tile_stored(3, sums, sizeof(sums[0]));
    add_block(b + 1);
  }
#undef CHANNEL_AMX_BLOCK_PRODUCT
  acc.Store(job, first_row, t0);
}

CHANNEL_AMX_ATTR void AmxRowGroupRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  const int64_t n_blocks = job.activations->cols() / kQuantBlock;
  const int64_t amx_tokens = job.activations->n_tokens() / kAmxTokens * kAmxTokens;
  const auto weights = hwy::AllocateAligned<int8_t>(static_cast<size_t>(n_blocks) * kUnitsBytes);
  static constexpr AmxTileConfig kConfig;
  _tile_loadconfig(&kConfig);  // per thread, like the tile registers
  for (int64_t first_row = begin; first_row < end; first_row += kRowGroupRows) {
    const Q4_0RowGroupBlock* group = row_group<Q4_0RowGroupBlock>(*job.weights, first_row);
    UnpackGroupWeights(group, n_blocks, weights.get());
    for (int64_t t0 = 0; t0 < amx_tokens; t0 += kAmxTokens) AmxGroupTokens(job, group, weights.get(), first_row, t0);
    GroupRowsFrom(job, first_row, amx_tokens);
  }
  _tile_release();
}
#endif

// ---------------------------------------------------------------------------------------- Q8_0
// Q8_0 matrices: the output projection (Q8_0 in Gemma's files, the largest matrix) and Q8_0
// layer matrices. llama.cpp's Q8_0 order (kEightLanes) keeps eight f32 lanes per row, lane j
// adding the sums of elements 4j..4j+3 of every block: here lane j of a row is lane r of
// accumulator vector j, so its final sum of the lanes is vertical. With the signs moved into the
// weights' offset (AVX-512 VNNI, below), two tokens share each unit's load: gemma3-1b preset with
// Q8_0 layers, 2 Zen 5 threads, pp128 125 -> 209 tok/s against one token at a time with ggml's
// sign trick (three tokens spill accumulators: 147-162).

// The eight lanes of a vector of a group's rows, summed as hsum_float_8 sums ggml's lanes.
HWY_INLINE VF SumLanesInGgmlOrder(const VF (&lanes)[kQ8Units]) {
  const VF s0 = hn::Add(lanes[0], lanes[4]), s1 = hn::Add(lanes[1], lanes[5]);
  const VF s2 = hn::Add(lanes[2], lanes[6]), s3 = hn::Add(lanes[3], lanes[7]);
  return hn::Add(hn::Add(s0, s2), hn::Add(s1, s3));
}

#if HWY_TARGET == HWY_AVX3_DL
// VPDPBUSD takes an unsigned first operand: the weights enter as w + 128 (w XOR 0x80), each
// four-quant sum starting from -128 x the activations' sum (q8_unit_offsets), which makes it the
// exact sum of w x (the integer ggml's sign trick gives, at four instructions a unit fewer).
// Tokens go kTokens at a time over a group, sharing each unit's load and XOR; past two tokens
// the 8 x kTokens accumulators no longer fit the 32 registers.
constexpr size_t kQ8TileTokens = 2;

// The products of kGroups consecutive row groups, the first at `group` (holding `first_row`), with
// tokens t0 .. t0 + kTokens - 1: decode takes kDecodeStreams groups at once (see
// VnniGroupsTokens), a batch's tiles one group.
template <int64_t kGroups, size_t kTokens>
CHANNEL_VNNI_ATTR HWY_NOINLINE void Q8GroupsTokens(const DotRowsJob& job, const Q8_0RowGroupBlock* group,
                                                   int64_t first_row, int64_t t0) {
  const DF df;
  const PreparedActivations& x = *job.activations;
  const int64_t n_blocks = x.cols() / kQuantBlock;
  const BlockQ8_0* x_blocks[kTokens];
  const float* x_scales[kTokens];
  const int32_t* x_offsets[kTokens];
  for (size_t t = 0; t < kTokens; ++t) {
    x_blocks[t] = x.q8_blocks(t0 + static_cast<int64_t>(t));
    x_scales[t] = x.q8_scales(t0 + static_cast<int64_t>(t));
    x_offsets[t] = x.q8_unit_offsets(t0 + static_cast<int64_t>(t));
  }
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  VF lanes[kGroups][kTokens][kQ8Units];
  for (int64_t g = 0; g < kGroups; ++g)
    for (size_t t = 0; t < kTokens; ++t)
      for (int64_t j = 0; j < kQ8Units; ++j) lanes[g][t][j] = hn::Zero(df);
  for (int64_t b = 0; b < n_blocks; ++b) {
#pragma GCC unroll 2  // constant indices into `lanes` (as below)
    for (int64_t g = 0; g < kGroups; ++g) {
      const Q8_0RowGroupBlock& block = group[g * n_blocks + b];  // groups lie one after another
      if (t0 == 0) PrefetchAhead(&block);  // later tiles find the group in cache
      const VF w_scales = RowScales(block, 0);
      VF d[kTokens];
      for (size_t t = 0; t < kTokens; ++t) d[t] = hn::Mul(w_scales, hn::Set(df, x_scales[t][b]));
#pragma GCC unroll 8
      for (int64_t j = 0; j < kQ8Units; ++j) {
        const __m512i w = _mm512_xor_si512(_mm512_loadu_si512(block.qs[j]), bias);
        for (size_t t = 0; t < kTokens; ++t) {
          const __m512i sums = _mm512_dpbusd_epi32(_mm512_set1_epi32(x_offsets[t][b * kQ8Units + j]), w,
                                                   _mm512_set1_epi32(Word(x_blocks[t][b].qs, static_cast<size_t>(j))));
          lanes[g][t][j] = hn::MulAdd(d[t], hn::ConvertTo(df, VI32{sums}), lanes[g][t][j]);
        }
      }
    }
  }
#pragma GCC unroll 2  // constant indices, so that GCC keeps `lanes` in registers (scalar replacement)
  for (int64_t g = 0; g < kGroups; ++g) {
#pragma GCC unroll 4
    for (size_t t = 0; t < kTokens; ++t) {
      hn::StoreU(SumLanesInGgmlOrder(lanes[g][t]), df,
                 job.out + (t0 + static_cast<int64_t>(t)) * job.out_stride + first_row + g * kRowGroupRows);
    }
  }
}

void Q8RowGroupRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  static_assert(kGroupVectors == 1, "a group's rows are one vector on AVX-512");
  static_assert(PreparedActivations::kQ8UnitOffsets == kQ8Units, "one offset per unit");
  const int64_t n_tokens = job.activations->n_tokens();
  if (n_tokens == 1) {
    for (; begin + kDecodeStreams * kRowGroupRows <= end; begin += kDecodeStreams * kRowGroupRows) {
      Q8GroupsTokens<kDecodeStreams, 1>(job, row_group<Q8_0RowGroupBlock>(*job.weights, begin), begin, 0);
    }
  }
  const int64_t tiled = n_tokens / kQ8TileTokens * kQ8TileTokens;
  for (int64_t first_row = begin; first_row < end; first_row += kRowGroupRows) {
    const auto* group = row_group<Q8_0RowGroupBlock>(*job.weights, first_row);
    for (int64_t t = 0; t < tiled; t += kQ8TileTokens) Q8GroupsTokens<1, kQ8TileTokens>(job, group, first_row, t);
    for (int64_t t = tiled; t < n_tokens; ++t) Q8GroupsTokens<1, 1>(job, group, first_row, t);
  }
}
#else
#if HWY_ARCH_X86
// ggml's sign trick for PMADDUBSW, whose first operand is unsigned: |w| times the activations
// with w's sign moved onto them; a unit's 32-bit lane r holds row r's elements e0..e3, so
// PMADDUBSW and PMADDWD with ones give each row's exact four-product sum (pairs of at most
// 2 x 128 x 127: no saturation), the int32 the int16 pairs below give, in five instructions a
// unit (six on AVX-512, which has no VPSIGNB) instead of eight.
using DI8 = hn::Repartition<int8_t, DU8>;
using VI8 = hn::Vec<DI8>;

// x negated in the lanes where w is negative (where w is zero the product is zero either way).
HWY_INLINE VI8 WithSignsOf(VI8 x, VI8 w) {
#if HWY_TARGET == HWY_AVX3  // AVX-512BW has no VPSIGNB
  return VI8{_mm512_mask_sub_epi8(x.raw, _mm512_movepi8_mask(w.raw), _mm512_setzero_si512(), x.raw)};
#elif HWY_TARGET == HWY_AVX2
  return VI8{_mm256_sign_epi8(x.raw, w.raw)};
#else
  return VI8{_mm_sign_epi8(x.raw, w.raw)};
#endif
}

HWY_INLINE VI32 Q8UnitSums(const Q8_0RowGroupBlock& block, int64_t s, int64_t j, const BlockQ8_0& x) {
  const DI8 di8;
  const VI8 w = hn::LoadU(di8, block.qs[j] + s * 4 * kLaneRows);
  const VI8 quants = hn::BitCast(di8, hn::Set(DI32(), Word(x.qs, static_cast<size_t>(j))));
  return AddInt16Pairs(MulAddBytePairs(hn::BitCast(DU8(), hn::Abs(w)), hn::BitCast(DI32(), WithSignsOf(quants, w))));
}
HWY_INLINE const BlockQ8_0& Q8UnitActivations(const PreparedActivations& x, int64_t t, int64_t b) {
  return x.q8_blocks(t)[b];
}
#else
// Int16 multiply-adds: a unit's 32-bit lane r holds row r's elements e0..e3; read as int16 lanes,
// their low bytes (e0, e2) meet the activations' even pair and their high bytes (e1, e3) the odd
// one (WideQ8Block), sign-extended by arithmetic shifts.
HWY_INLINE VI32 Q8UnitSums(const Q8_0RowGroupBlock& block, int64_t s, int64_t j, const WideQ8Block& x) {
  const DI16 di16;
  const DI32 di32;
  const auto packed = hn::BitCast(di16, hn::LoadU(DU8(), reinterpret_cast<const uint8_t*>(block.qs[j]) + s * 4 * kLaneRows));
  const auto pair = [&](const int16_t* values) {
    return hn::BitCast(di16, hn::Set(di32, Word(values, static_cast<size_t>(j))));
  };
  VI32 odd_products = hn::Zero(di32);
  VI32 sums = hn::ReorderWidenMulAccumulate(di32, hn::ShiftRight<8>(hn::ShiftLeft<8>(packed)), pair(x.even),
                                            hn::Zero(di32), odd_products);
  sums = hn::ReorderWidenMulAccumulate(di32, hn::ShiftRight<8>(packed), pair(x.odd), sums, odd_products);
  return hn::RearrangeToOddPlusEven(sums, odd_products);
}
HWY_INLINE const WideQ8Block& Q8UnitActivations(const PreparedActivations& x, int64_t t, int64_t b) {
  return x.wide_blocks(t)[b];
}
#endif

// Token t's products with vector s of the group's rows, into the job's output.
HWY_NOINLINE void Q8GroupToken(const DotRowsJob& job, const Q8_0RowGroupBlock* group, int64_t s, int64_t first_row,
                               int64_t t) {
  const DF df;
  const PreparedActivations& x = *job.activations;
  const float* x_scales = x.q8_scales(t);
  VF lanes[kQ8Units];
  for (VF& lane : lanes) lane = hn::Zero(df);
  for (int64_t b = 0; b < x.cols() / kQuantBlock; ++b) {
    const Q8_0RowGroupBlock& block = group[b];
    if (s == 0) PrefetchAhead(group + b);  // later vectors find the group in cache
    const VF d = hn::Mul(RowScales(block, s), hn::Set(df, x_scales[b]));
    const auto& activations = Q8UnitActivations(x, t, b);
    for (int64_t j = 0; j < kQ8Units; ++j) {
      const VI32 sums = Q8UnitSums(block, s, j, activations);
      lanes[j] = hn::MulAdd(d, hn::ConvertTo(df, sums), lanes[j]);
    }
  }
  hn::StoreU(SumLanesInGgmlOrder(lanes), df, job.out + t * job.out_stride + first_row + s * kLaneRows);
}

void Q8RowGroupRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  for (int64_t first_row = begin; first_row < end; first_row += kRowGroupRows) {
    const auto* group = row_group<Q8_0RowGroupBlock>(*job.weights, first_row);
    for (int64_t t = 0; t < job.activations->n_tokens(); ++t) {
      for (int64_t s = 0; s < kGroupVectors; ++s) Q8GroupToken(job, group, s, first_row, t);
    }
  }
}
#endif

void RowGroupRows(const DotRowsJob& job, int64_t begin, int64_t end) {
  if (job.weights->type == GgmlType::Q8_0) return Q8RowGroupRows(job, begin, end);
  const int64_t n_tokens = job.activations->n_tokens();
#if HWY_TARGET == HWY_AVX3_DL
  if (n_tokens == 1) return VnniRowsOneToken(job, begin, end);
  if (n_tokens >= kAmxTokens && amx_int8_ready()) return AmxRowGroupRows(job, begin, end);
#elif !HWY_ARCH_X86
  if (n_tokens > static_cast<int64_t>(kTileTokens)) {  // several token tiles share each group's pairs
    const int64_t n_blocks = job.activations->cols() / kQuantBlock;
    const auto pairs = hwy::AllocateAligned<int16_t>(n_blocks * kPairVectorsPerBlock * hn::Lanes(DI16()));
    for (int64_t first_row = begin; first_row < end; first_row += kRowGroupRows) {
      UnpackGroupPairs(row_group<Q4_0RowGroupBlock>(*job.weights, first_row), n_blocks, pairs.get());
      GroupRowsFrom(job, first_row, 0, pairs.get());
    }
    return;
  }
#endif
  for (int64_t first_row = begin; first_row < end; first_row += kRowGroupRows) GroupRowsFrom(job, first_row, 0);
}

#endif  // HWY_TARGET == HWY_SCALAR || HWY_HAVE_SCALABLE

}  // namespace HWY_NAMESPACE
}  // namespace channel::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace channel::cpu {

HWY_EXPORT(RowGroupRows);

void dot_row_groups(const DotRowsJob& job, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(RowGroupRows)(job, begin, end);
}

}  // namespace channel::cpu
#endif  // HWY_ONCE
