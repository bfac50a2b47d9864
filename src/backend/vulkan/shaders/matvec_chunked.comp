#version 460
// Q4_0 / Q8_0 matrix times a few activation vectors, for rows whose bytes are a multiple of 16
// (8-block multiples: every Gemma width) at a 16-byte aligned address. Same results as
// matvec.comp, different memory access: each thread reads a chunk of 8 blocks of a row (Q4_0:
// 144 bytes, Q8_0: 272 bytes) with 16-byte loads, where matvec.comp's threads read one block with
// 2-byte loads. Wide loads move 16 useful bytes per cache sector accessed instead of ~3.5, which
// is what lets a matrix-vector product get near memory bandwidth on large GPUs (the H200); the
// blocks are then cut out of the chunk's registers with constant shifts (block k starts at byte
// 18k or 34k: 4-byte aligned for even k, 2 bytes off for odd k).
//
// Layout: TPR threads per row group stride over the row's chunks (TPR: the smallest power of two
// >= chunks per row, at most the workgroup size, so few threads idle on short rows); each thread
// works on RPT rows at once (sharing its activation loads); the workgroup covers
// (workgroup size / TPR) * RPT rows. A group's partial sums are added in shared memory in thread order.
//
// Defines: TYPE_Q8_0 | TYPE_Q4_0, USE_INTEGER_DOT. Specialization constants: 0 workgroup size,
// 1 TPR, 2 RPT, 3 TOKENS.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "matmul_params.glsl"
#include "quant.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint TPR = 16;
layout(constant_id = 2) const uint RPT = 2;
layout(constant_id = 3) const uint TOKENS = 1;

layout(buffer_reference, std430, buffer_reference_align = 16) buffer U128Ptr { uvec4 v[]; };

const uint kChunkBlocks = 8;
const uint kChunkVectors = kBlockBytes * kChunkBlocks / 16u;  // 9 (Q4_0) or 17 (Q8_0)
const uint kChunkWords = kChunkVectors * 4u;

shared float partial[gl_WorkGroupSize.x * RPT * TOKENS];

// The 4 bytes at (even) byte offset o of the chunk.
#define CHUNK_WORD(w, o) ((((o) & 3u) == 0u) ? w[(o) >> 2] : ((w[(o) >> 2] >> 16) | (w[((o) >> 2) + 1u] << 16)))

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint groups = gl_WorkGroupSize.x / TPR;
  const uint group = lane / TPR, part = lane % TPR;
  const uint first = flat_workgroup_index() * groups * RPT;
  if (first >= p.n_out) return;  // the whole workgroup
  const uint row0 = first + group * RPT;

  uint64_t rows[RPT];
  bool valid[RPT];
  for (uint r = 0; r < RPT; ++r) {
    bool id_valid = false;
    const uint row = row0 + r < p.n_out ? weight_row(row0 + r, id_valid) : 0u;
    valid[r] = row0 + r < p.n_out && id_valid;
    rows[r] = weight_row_address(row);
  }
  const uint n_chunks = p.cols / (32u * kChunkBlocks);

  for (uint t0 = 0; t0 < p.n_tokens; t0 += TOKENS) {
    float acc[RPT][TOKENS];
    for (uint r = 0; r < RPT; ++r)
      for (uint t = 0; t < TOKENS; ++t) acc[r][t] = 0.0;

    for (uint c = part; c < n_chunks; c += TPR) {
      uint w[RPT][kChunkWords];
      [[unroll]] for (uint r = 0; r < RPT; ++r) {
        if (!valid[r]) continue;
        U128Ptr chunk = U128Ptr(rows[r] + uint64_t(c) * (kChunkVectors * 16u));
        [[unroll]] for (uint v = 0; v < kChunkVectors; ++v) {
          const uvec4 q = chunk.v[v];
          w[r][4 * v] = q.x;
          w[r][4 * v + 1] = q.y;
          w[r][4 * v + 2] = q.z;
          w[r][4 * v + 3] = q.w;
        }
      }
      [[unroll]] for (uint k = 0; k < kChunkBlocks; ++k) {
        const uint b = c * kChunkBlocks + k;
        uint xq[TOKENS][8];
        float xd[TOKENS];
        for (uint t = 0; t < TOKENS; ++t) {
          if (t0 + t < p.n_tokens) {
            U128Ptr xb = U128Ptr(p.x + uint64_t(t0 + t) * p.x_stride + uint64_t(b) * 32u);
            const uvec4 lo = xb.v[0], hi = xb.v[1];
            xq[t][0] = lo.x; xq[t][1] = lo.y; xq[t][2] = lo.z; xq[t][3] = lo.w;
            xq[t][4] = hi.x; xq[t][5] = hi.y; xq[t][6] = hi.z; xq[t][7] = hi.w;
            xd[t] = F32Ptr(p.x_scales + (uint64_t(t0 + t) * (p.x_stride / 32u) + b) * 4u).v[0];
          } else {
            xd[t] = 0.0;
            for (uint j = 0; j < 8; ++j) xq[t][j] = 0u;
          }
        }
        const uint base = k * kBlockBytes;  // block k's first byte in the chunk
        [[unroll]] for (uint r = 0; r < RPT; ++r) {
          if (!valid[r]) continue;
          const uint d_word = w[r][base >> 2];
          const float wd = unpackHalf2x16((base & 3u) == 0u ? d_word : d_word >> 16).x;
          uint wq[8];
#if defined(TYPE_Q4_0)
          [[unroll]] for (uint j = 0; j < 4; ++j) {
            const uint bytes = CHUNK_WORD(w[r], base + 2u + 4u * j);
            wq[j] = nibbles_to_int8(bytes & 0x0f0f0f0fu);
            wq[j + 4] = nibbles_to_int8((bytes >> 4) & 0x0f0f0f0fu);
          }
#else
          [[unroll]] for (uint j = 0; j < 8; ++j) wq[j] = CHUNK_WORD(w[r], base + 2u + 4u * j);
#endif
          for (uint t = 0; t < TOKENS; ++t) acc[r][t] = fma(float(block_dot(wq, xq[t])), wd * xd[t], acc[r][t]);
        }
      }
    }

    // Each group's TPR partial sums, added in thread order by the group's first threads.
    for (uint r = 0; r < RPT; ++r)
      for (uint t = 0; t < TOKENS; ++t) partial[(r * TOKENS + t) * gl_WorkGroupSize.x + lane] = acc[r][t];
    barrier();
    for (uint k = part; k < RPT * TOKENS; k += TPR) {
      const uint r = k / TOKENS, t = k % TOKENS;
      if (row0 + r < p.n_out && t0 + t < p.n_tokens) {
        float sum = 0.0;
        for (uint s = 0; s < TPR; ++s) sum += partial[k * gl_WorkGroupSize.x + group * TPR + s];
        F32Ptr(p.dst + (uint64_t(t0 + t) * p.dst_stride + row0 + r) * 4u).v[0] = valid[r] ? sum : nan_value();
      }
    }
    barrier();
  }
}
