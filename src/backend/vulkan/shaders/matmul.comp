#version 460
// Matrix times many activation vectors (prefill): a workgroup computes a tile of BM output rows
// times BN tokens, stepping through the columns; each step loads a slice of BM weight rows and
// of BN token rows into shared memory once and every thread multiplies a 4 x 4 sub-tile from it,
// so each weight is read from memory once per BN tokens instead of once per token.
//
// Each output is accumulated by one thread in column order, with no reduction afterwards:
// for Q4_0 / Q8_0 block after block, acc = fma(float(exact block sum), d_w * d_x, acc), the
// CPU backend's block-sequential order; for f32 / f16 / bf16 value after value, acc = fma(w, x, acc),
// the order of its scalar reference.
//
// Defines as matvec.comp. 256 threads: thread (tr, tc) = (id % 16, id / 16) owns rows
// tr + 16 m and tokens tc + 16 n of the tile, m < TM, n < 4 (the 16 threads of a row group read
// distinct shared-memory banks). Specialization constants: 0 TM, rows per thread (the tile has
// BM = 16 TM rows: more rows per thread, fewer shared-memory reads per product); 1 K_BLOCKS,
// Q4_0 / Q8_0 blocks of 32 values per step (more blocks, fewer barriers per row).
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "matmul_params.glsl"
#if defined(TYPE_Q4_0) || defined(TYPE_Q8_0)
#define QUANTIZED 1
#include "quant.glsl"
#endif

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TM = 4;        // rows per thread
layout(constant_id = 1) const uint K_BLOCKS = 2;  // Q4_0 / Q8_0: blocks per step

const uint BM = 16u * TM;  // rows per tile
const uint BN = 64;        // tokens per tile
const uint TN = 4;         // tokens per thread

#ifdef QUANTIZED
// Per step K_BLOCKS blocks of 32 values; shared rows of 8 packed words padded to 9 so that the
// 16 row groups of a tile hit distinct banks: K_BLOCKS * (BM + BN) * 40 bytes (TM 4 with 2 blocks:
// 10 KiB, under the 16 KiB every Vulkan device has; matmul_kernels.cpp checks the device's limit
// with shared_memory.glsl's SHARED_MATMUL_WORDS).
#include "shared_memory.glsl"
const uint STRIDE = SHARED_MATMUL_STRIDE;
shared uint w_tile[SHARED_MATMUL_TILE(K_BLOCKS, BM)];
shared float w_scale[SHARED_MATMUL_SCALES(K_BLOCKS, BM)];
shared uint x_tile[SHARED_MATMUL_TILE(K_BLOCKS, BN)];
shared float x_scale[SHARED_MATMUL_SCALES(K_BLOCKS, BN)];
// Block `block` of line `line` of a tile of `lines` rows or tokens: the step's blocks one after the
// other, each [line][word].
uint tile_word(uint line, uint block, uint lines) { return (block * lines + line) * STRIDE; }
const uint TILE_THREADS = 256;
#include "tile_loads.glsl"
#else
const uint BK = 16;  // values per step
shared float w_tile[BK * BM];  // [k][row]
shared float x_tile[BK * BN];  // [k][token]

float weight_value(uint64_t row, uint c) {
#if defined(TYPE_F32)
  return F32Ptr(row).v[c];
#elif defined(TYPE_F16)
  return float(F16Ptr(row).v[c]);
#else
  return bf16_bits_to_f32(uint(U16Ptr(row).v[c]));
#endif
}

float activation_value(uint t, uint c) {
  const uint64_t index = uint64_t(t) * p.x_stride + c;
#if defined(TYPE_F32)
  return F32Ptr(p.x + index * 4u).v[0];
#elif defined(TYPE_F16)
  return float(F16Ptr(p.x + index * 2u).v[0]);
#else
  return bf16_bits_to_f32(uint(U16Ptr(p.x + index * 2u).v[0]));
#endif
}
#endif

void main() {
  const uint id = gl_LocalInvocationID.x;
  const uint tr = id % 16u, tc = id / 16u;
  const uint row0 = gl_WorkGroupID.x * BM;
  const uint tok0 = gl_WorkGroupID.y * BN;

  float acc[TM][TN];
  for (uint m = 0; m < TM; ++m)
    for (uint n = 0; n < TN; ++n) acc[m][n] = 0.0;

#ifdef QUANTIZED
  plan_tile_loads(row0);

  const uint n_blocks = p.cols / 32u;
  for (uint b0 = 0; b0 < n_blocks; b0 += K_BLOCKS) {
    fetch_tile_blocks(b0, tok0, n_blocks);
    stage_tile_blocks();
    barrier();

    for (uint kb = 0; kb < K_BLOCKS && b0 + kb < n_blocks; ++kb) {
      int sums[TM][TN];
      for (uint m = 0; m < TM; ++m)
        for (uint n = 0; n < TN; ++n) sums[m][n] = 0;
      for (uint j = 0; j < 8; ++j) {
        uint wq[TM], xq[TN];
        for (uint m = 0; m < TM; ++m) wq[m] = w_tile[(kb * BM + tr + 16u * m) * STRIDE + j];
        for (uint n = 0; n < TN; ++n) xq[n] = x_tile[(kb * BN + tc + 16u * n) * STRIDE + j];
        for (uint m = 0; m < TM; ++m)
          for (uint n = 0; n < TN; ++n) sums[m][n] += dot4(wq[m], xq[n]);
      }
      for (uint m = 0; m < TM; ++m) {
        const float wd = w_scale[kb * BM + tr + 16u * m];
        for (uint n = 0; n < TN; ++n) {
          acc[m][n] = fma(float(sums[m][n]), wd * x_scale[kb * BN + tc + 16u * n], acc[m][n]);
        }
      }
    }
    barrier();
  }
#else
  // Each thread loads TM weights (rows id / 16 + 16 e, column id % 16 of the step: 16 threads
  // read 16 consecutive values of a row) and TN activations the same way.
  const uint load_k = id % BK;
  uint64_t load_rows[TM];
  bool load_valid[TM];
  for (uint e = 0; e < TM; ++e) {
    const uint line = id / BK + 16u * e;
    bool id_valid = false;
    const uint row = row0 + line < p.n_out ? weight_row(row0 + line, id_valid) : 0u;
    load_valid[e] = row0 + line < p.n_out && id_valid;
    load_rows[e] = weight_row_address(row);
  }

  for (uint k0 = 0; k0 < p.cols; k0 += BK) {
    const uint c = k0 + load_k;
    for (uint e = 0; e < TM; ++e) {
      const uint line = id / BK + 16u * e;
      w_tile[load_k * BM + line] = load_valid[e] && c < p.cols ? weight_value(load_rows[e], c) : 0.0;
    }
    for (uint e = 0; e < TN; ++e) {
      const uint line = id / BK + 16u * e;
      x_tile[load_k * BN + line] = tok0 + line < p.n_tokens && c < p.cols ? activation_value(tok0 + line, c) : 0.0;
    }
    barrier();
    const uint k_end = min(BK, p.cols - k0);
    for (uint k = 0; k < k_end; ++k) {
      float wv[TM], xv[TN];
      for (uint m = 0; m < TM; ++m) wv[m] = w_tile[k * BM + tr + 16u * m];
      for (uint n = 0; n < TN; ++n) xv[n] = x_tile[k * BN + tc + 16u * n];
      for (uint m = 0; m < TM; ++m)
        for (uint n = 0; n < TN; ++n) acc[m][n] = fma(wv[m], xv[n], acc[m][n]);
    }
    barrier();
  }
#endif

  for (uint m = 0; m < TM; ++m) {
    const uint i = row0 + tr + 16u * m;
    if (i >= p.n_out) continue;
    bool valid = false;
    weight_row(i, valid);
    for (uint n = 0; n < TN; ++n) {
      const uint t = tok0 + tc + 16u * n;
      if (t < p.n_tokens) F32Ptr(p.dst + (uint64_t(t) * p.dst_stride + i) * 4u).v[0] = valid ? acc[m][n] : nan_value();
    }
  }
}
