// Float accumulation orders of the Q4_0/Q8_0 dot products. The per-block integer sums are
// exact, so only the order in which the f32 block terms are added decides the last bits; these
// are the two orders llama.cpp's x86 CPU backend (AVX2 / AVX-512 builds) uses, reproduced so that
// results match it bit for bit where the same order applies. Also the order of BF16 dot
// products on CPUs with AVX512_BF16, where llama.cpp's order differs from its F32/F16 one.
#pragma once

#include "backend/cpu/matmul.h"

namespace channel::cpu {

enum class QuantAccumulation {
  // ggml_vec_dot_q{4,8}_0_q8_0 and llamafile's tinyBLAS_Q0_AVX: 8 f32 lanes, lane j adds
  // fma(d_w * d_x, sum of elements 4j..4j+3 of the block) over the blocks; the lanes are then
  // summed by sum_lanes_in_ggml_order.
  kEightLanes,
  // The Q4_0 8x8 repacked GEMV/GEMM (ggml-cpu/arch/x86/repack.cpp): one f32 accumulator per
  // output, acc = fma(float(block integer sum), d_w * d_x, acc) block after block.
  kBlockSequential,
};

// The order llama.cpp uses for `w`: on AVX2 machines it repacks Q4_0 matrices whose row count is
// a multiple of 8 (all of Gemma's), and leaves Q8_0 and other Q4_0 matrices to vec_dot/tinyBLAS.
// Not modelled: a Q4_0 token embedding reused as the output projection stays un-repacked there.
inline QuantAccumulation quant_accumulation(const WeightMatrix& w) {
  return w.type == GgmlType::Q4_0 && w.rows % 8 == 0 ? QuantAccumulation::kBlockSequential
                                                     : QuantAccumulation::kEightLanes;
}

// BF16 weights times BF16-rounded activations. llama.cpp's builds for CPUs with AVX512_BF16
// (zen4, cooperlake, sapphirerapids: the reference variant on such a CPU, see
// tests/parity/logits/cpu_variants.h) multiply with VDPBF16PS: each of 16 f32 lanes adds, for
// every 32 values, the product of its pair's odd value and then of its even one (lane j: values
// 2j+1, 2j), each addition rounded (a product of two bf16 values is exact in f32); the lanes are
// then summed as _mm512_reduce_add_ps does (sum_16_lanes_in_reduce_order). The pair order moves
// BF16 logits by up to ~5e-3 (rel L2) from the plain lane order: bf16 rounding of the next
// layer's activations turns last-bit differences into 2^-9 ones.
enum class Bf16Accumulation {
  kVectorLanes,  // as F32/F16 weights: f32 FMA over the target's vector lanes (llama.cpp's other builds)
  kPairsTiled,   // tinyBLAS (llamafile sgemm), for 2+ tokens and rows of a multiple of 32: one set of lanes
  // ggml_vec_dot_bf16 otherwise: two sets of lanes take alternate 32-value chunks of the whole
  // 64-value pieces; their sums and then the remaining products add up in double.
  kPairsVecDot,
};

// This CPU has AVX512_BF16 (the only condition of llama.cpp's pair order: it is compiled in).
inline bool cpu_has_avx512_bf16() {
#if defined(__x86_64__) || defined(__i386__)
  static const bool has = __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}

inline Bf16Accumulation bf16_accumulation(const WeightMatrix& w, int64_t n_tokens) {
  if (!cpu_has_avx512_bf16()) return Bf16Accumulation::kVectorLanes;
  return n_tokens >= 2 && w.cols % 32 == 0 ? Bf16Accumulation::kPairsTiled : Bf16Accumulation::kPairsVecDot;
}

// ggml's mul_mat_id (MoE experts) never takes the tinyBLAS path: ggml_vec_dot_bf16 for any tokens.
inline Bf16Accumulation bf16_vec_dot_accumulation() {
  return cpu_has_avx512_bf16() ? Bf16Accumulation::kPairsVecDot : Bf16Accumulation::kVectorLanes;
}

// _mm512_reduce_add_ps: halves added lane by lane, 16 -> 8 -> 4 -> 2 -> 1.
inline float sum_16_lanes_in_reduce_order(const float (&lanes)[16]) {
  float s[8];
  for (int i = 0; i < 8; ++i) s[i] = lanes[i] + lanes[i + 8];
  for (int i = 0; i < 4; ++i) s[i] = s[i] + s[i + 4];
  for (int i = 0; i < 2; ++i) s[i] = s[i] + s[i + 2];
  return s[0] + s[1];
}

// hsum_float_8 of ggml (x86 quants.c): ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
inline float sum_lanes_in_ggml_order(const float (&lanes)[8]) {
  const float s0 = lanes[0] + lanes[4], s1 = lanes[1] + lanes[5];
  const float s2 = lanes[2] + lanes[6], s3 = lanes[3] + lanes[7];
  return (s0 + s2) + (s1 + s3);
}

}  // namespace channel::cpu
