#version 460
// Q4_0 / Q8_0 weights times many Q8_0 activation vectors (prefill) with the block sums on the
// matrix units (VK_NV_cooperative_matrix, int8 x int8 -> int32): matmul.comp's arithmetic, so its
// results bit for bit. Per output, block after block, acc = fma(float(exact block sum), d_w * d_x,
// acc): the CPU backend's block-sequential order.
//
// A workgroup of 4 subgroups (of 32) computes 64 rows x 64 tokens, each subgroup a 32 x 32
// quarter. Each step stages K_BLOCKS blocks of the 64 weight rows (nibbles unpacked to int8) and
// of the 64 token rows in shared memory, while the next step's blocks are read from memory into
// registers. For each block, the subgroup's cooperative products give the exact int32 sums of its
// quarter, which it stores to shared memory; once the step's blocks are all multiplied, each lane
// scales the sums of its 8 rows x 4 tokens into its 32 accumulators, block by block. (The scales vary
// per row and per token, and VK_NV_cooperative_matrix has no element-wise product of two
// matrices, so the sums cannot be scaled in the matrix registers; Debian 12's glslang 11 has no
// VK_KHR_cooperative_matrix, which has.)
//
// Specialization constants: 0 K_BLOCKS, blocks per step; 1 MMA_N, the N of the device's
// 16 x N x 32 int8 products (16 or 8; DeviceFeatures::int8_matrix_n).
#extension GL_NV_cooperative_matrix : require
#extension GL_NV_integer_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#include "common.glsl"
#include "matmul_params.glsl"
#include "quant.glsl"

layout(local_size_x = 128) in;
layout(constant_id = 0) const uint K_BLOCKS = 2;
layout(constant_id = 1) const uint MMA_N = 16;

const uint BM = 64;   // rows per tile
const uint BN = 64;   // tokens per tile
const uint SUB = 32;  // rows and tokens of a subgroup's quarter
// Words per staged row: K_BLOCKS blocks of 8 words, padded by 4 so that rows start 16-byte
// aligned (the matrix loads need it) and 4 banks apart.
const uint STRIDE = K_BLOCKS * 8u + 4u;
shared uint w_tile[BM * STRIDE];
shared uint x_tile[BN * STRIDE];
shared vec4 w_scale[K_BLOCKS * BM / 4u];  // [block][row], 4 per vec4
shared vec4 x_scale[K_BLOCKS * BN / 4u];  // [block][token]
// Each subgroup's 32 x 32 int32 sums of each block of the step, row-major, 4 per ivec4.
shared ivec4 block_sums[4u * K_BLOCKS * SUB * SUB / 4u];

// Each thread stages K_BLOCKS of the step's (BM + BN) * K_BLOCKS blocks: slots id, id + 128, ...;
// slot s < BM * K_BLOCKS is weight row s / K_BLOCKS, block s % K_BLOCKS of the step, the others
// the activation blocks the same way.
const uint W_SLOTS = BM * K_BLOCKS;
bool loads_weights[K_BLOCKS], load_valid[K_BLOCKS];
uint load_line[K_BLOCKS], load_block[K_BLOCKS];
uint64_t load_quants[K_BLOCKS], load_scales[K_BLOCKS];
// The blocks of the next step, read ahead.
uint fetched_q[K_BLOCKS][8];
float fetched_d[K_BLOCKS];

void plan_loads(uint id, uint row0, uint tok0) {
  for (uint l = 0; l < K_BLOCKS; ++l) {
    const uint slot = id + 128u * l;
    loads_weights[l] = slot < W_SLOTS;
    const uint s = loads_weights[l] ? slot : slot - W_SLOTS;
    load_line[l] = s / K_BLOCKS;
    load_block[l] = s % K_BLOCKS;
    load_quants[l] = load_scales[l] = 0;
    if (loads_weights[l]) {
      bool id_valid = false;
      const uint row = row0 + load_line[l] < p.n_out ? weight_row(row0 + load_line[l], id_valid) : 0u;
      load_valid[l] = row0 + load_line[l] < p.n_out && id_valid;
      load_quants[l] = weight_row_address(row);
      load_scales[l] = weight_scales_address(row);
    } else {
      load_valid[l] = tok0 + load_line[l] < p.n_tokens;
    }
  }
}

void fetch(uint b0, uint tok0, uint n_blocks) {
  for (uint l = 0; l < K_BLOCKS; ++l) {
    const uint b = b0 + load_block[l];
    fetched_d[l] = 0.0;
    if (load_valid[l] && b < n_blocks) {
      fetched_d[l] = loads_weights[l] ? load_weight_block(load_quants[l], load_scales[l], b, fetched_q[l])
                                      : load_activation_block(tok0 + load_line[l], b, fetched_q[l]);
    } else {
      for (uint j = 0; j < 8; ++j) fetched_q[l][j] = 0u;
    }
  }
}

void stage() {
  for (uint l = 0; l < K_BLOCKS; ++l) {
    const uint base = load_line[l] * STRIDE + load_block[l] * 8u;
    if (loads_weights[l]) {
      for (uint j = 0; j < 8; ++j) w_tile[base + j] = fetched_q[l][j];
      const uint i = load_block[l] * BM + load_line[l];
      w_scale[i / 4u][i % 4u] = fetched_d[l];
    } else {
      for (uint j = 0; j < 8; ++j) x_tile[base + j] = fetched_q[l][j];
      const uint i = load_block[l] * BN + load_line[l];
      x_scale[i / 4u][i % 4u] = fetched_d[l];
    }
  }
}

void main() {
  const uint id = gl_LocalInvocationID.x;
  const uint row0 = gl_WorkGroupID.x * BM;
  const uint tok0 = gl_WorkGroupID.y * BN;
  const uint sub_row = (gl_SubgroupID & 1u) * SUB;  // the quarter's first row and token in the tile
  const uint sub_tok = (gl_SubgroupID >> 1) * SUB;
  const uint sums = gl_SubgroupID * K_BLOCKS * SUB * SUB;  // int32 index of the subgroup's sums
  // This lane's outputs: rows lane_row .. +7 and tokens lane_tok .. +3 of the quarter.
  const uint lane_row = (gl_SubgroupInvocationID / 8u) * 8u;
  const uint lane_tok = (gl_SubgroupInvocationID % 8u) * 4u;

  float acc[8][4];
  for (uint r = 0; r < 8; ++r)
    for (uint c = 0; c < 4; ++c) acc[r][c] = 0.0;
  const icoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N> zero = icoopmatNV<32, gl_ScopeSubgroup, 16, MMA_N>(0);

  const uint n_blocks = p.cols / 32u;
  plan_loads(id, row0, tok0);
  fetch(0, tok0, n_blocks);
  for (uint b0 = 0; b0 < n_blocks; b0 += K_BLOCKS) {
    stage();
    barrier();
    if (b0 + K_BLOCKS < n_blocks) fetch(b0 + K_BLOCKS, tok0, n_blocks);  // in flight while this step multiplies

    // The quarter's exact block sums: rows sub_row .. +31 (two 16-row halves) times tokens
    // sub_tok .. +31 (SUB / MMA_N column tiles); the tokens' int8 rows are the columns of B.
    const uint step_blocks = min(K_BLOCKS, n_blocks - b0);
    for (uint kb = 0; kb < step_blocks; ++kb) {
      icoopmatNV<8, gl_ScopeSubgroup, 16, 32> w_top, w_bottom;
      coopMatLoadNV(w_top, w_tile, sub_row * STRIDE + kb * 8u, STRIDE, false);
      coopMatLoadNV(w_bottom, w_tile, (sub_row + 16u) * STRIDE + kb * 8u, STRIDE, false);
      const uint block = (sums + kb * SUB * SUB) / 4u;  // in ivec4
      for (uint j = 0; j < SUB / MMA_N; ++j) {
        icoopmatNV<8, gl_ScopeSubgroup, 32, MMA_N> x;
        coopMatLoadNV(x, x_tile, (sub_tok + j * MMA_N) * STRIDE + kb * 8u, STRIDE, true);
        coopMatStoreNV(coopMatMulAddNV(w_top, x, zero), block_sums, block + j * MMA_N / 4u, SUB / 4u, false);
        coopMatStoreNV(coopMatMulAddNV(w_bottom, x, zero), block_sums, block + (16u * SUB + j * MMA_N) / 4u,
                       SUB / 4u, false);
      }
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    for (uint kb = 0; kb < step_blocks; ++kb) {
      const vec4 xd = x_scale[(kb * BN + sub_tok + lane_tok) / 4u];
      const vec4 wd0 = w_scale[(kb * BM + sub_row + lane_row) / 4u];
      const vec4 wd1 = w_scale[(kb * BM + sub_row + lane_row) / 4u + 1u];
      for (uint r = 0; r < 8; ++r) {
        const ivec4 s = block_sums[(sums + kb * SUB * SUB + (lane_row + r) * SUB + lane_tok) / 4u];
        const float wd = r < 4u ? wd0[r] : wd1[r - 4u];
        for (uint c = 0; c < 4; ++c) acc[r][c] = fma(float(s[c]), wd * xd[c], acc[r][c]);
      }
    }
    barrier();  // the tiles and sums are free for the next step
  }

  for (uint c = 0; c < 4; ++c) {
    const uint t = tok0 + sub_tok + lane_tok + c;
    if (t >= p.n_tokens) break;
    for (uint r = 0; r < 8; ++r) {
      const uint i = row0 + sub_row + lane_row + r;
      if (i >= p.n_out) break;
      bool valid = false;
      weight_row(i, valid);
      F32Ptr(p.dst + (uint64_t(t) * p.dst_stride + i) * 4u).v[0] = valid ? acc[r][c] : nan_value();
    }
  }
}
