// Float accumulation orders of the Q4_0/Q8_0 dot products. The per-block integer sums are
// exact, so only the order in which the f32 block terms are added decides the last bits; these
// are the two orders llama.cpp's x86 CPU backend (AVX2 / AVX-512 builds) uses, reproduced so that
// results match it bit for bit where the same order applies.
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

// hsum_float_8 of ggml (x86 quants.c): ((l0+l4) + (l2+l6)) + ((l1+l5) + (l3+l7)).
inline float sum_lanes_in_ggml_order(const float (&lanes)[8]) {
  const float s0 = lanes[0] + lanes[4], s1 = lanes[1] + lanes[5];
  const float s2 = lanes[2] + lanes[6], s3 = lanes[3] + lanes[7];
  return (s0 + s2) + (s1 + s3);
}

}  // namespace channel::cpu
