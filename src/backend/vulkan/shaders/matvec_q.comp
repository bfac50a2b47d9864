#version 460
// Q4_0 / Q8_0 matrix times a few activation vectors (decode: 1 token; small batches), with the
// weights in the split-block layout (device_matrix.h). Memory-bound: the aim is to stream the
// quants at the memory's bandwidth, so
//   - a subgroup computes ROWS rows together, its lanes striding over the blocks of the rows:
//     lane l reads block l, l + subgroup size, ... (one or two aligned 16-byte loads each), so a
//     subgroup's loads cover consecutive memory;
//   - each lane issues the loads of BLOCKS blocks before using any (more bytes in flight: with
//     4, a 3840-wide row's 120 blocks are all requested at once by a subgroup of 32);
//   - partial sums are added with one subgroupAdd per output: no shared memory, no barrier;
//   - Q4_0 nibbles (0..15) are multiplied as they are and the offset of 8 taken out once per
//     block: sum((n - 8) x) = sum(n x) - 8 sum(x), exact in int32, the sums of x shared by the rows.
// Block sums are exact int32 as in the CPU backend; f32 adds happen in lane order and then in the
// subgroup reduction's order (the only difference from the CPU).
//
// A workgroup covers ROWS_PER_WORKGROUP consecutive rows; its subgroups take groups of ROWS rows
// in turn, so every row is computed whatever subgroup size the device uses. With SPLIT > 1, teams
// of SPLIT subgroups take the groups of rows instead, a team's subgroups striding over the blocks
// together (more threads on a row: more loads in flight where a product has few rows for the
// device, as llama.cpp's CUDA mmvq gives a row a whole block of warps); each subgroup's sum then
// goes through shared memory and the team's first subgroup adds them in subgroup order.
//
// GATED_OUTPUT (matvec_gated_*): the FFN's gate and up products of the same activations, GEGLU
// and the Q8_0 quantization of the result (the down product's input) in one dispatch, so that
// decode has one dependent dispatch and barrier fewer per layer. A workgroup computes 64 rows:
// rows 32w .. 32w + 31 of the gate matrix, then the same of up (ROWS_PER_WORKGROUP is 64), each
// row's sum as the plain kernel forms it; the sums meet in shared memory, and each token's 32
// gated values become one Q8_0 block (geglu_quantize.comp's values and blocks, bit for bit).
// There p.dst and p.dst_stride are the Q8_0 values and their bytes per token, and p.n_out the
// FFN width (a multiple of 32; the rows of each matrix).
//
// HEAD_INPUTS (matvec_heads_*): a layer's stacked Q/K/V product (rows: the query heads, the key
// heads, then the value heads, head_dim rows each) and the attention inputs of each head
// (attention_inputs.glsl: QK-norm, RoPE, the KV write) in one dispatch: every workgroup counts
// itself in its head's arrival count once its rows are written, and the head's last workgroup
// prepares that head for every token (on a V = K layer, a key head's value too). Only the last
// head to finish adds its chain to the product; the other heads' chains run beside the product's
// remaining rows. Bit-identical to the product then attention_inputs.comp. Needs head_dim a
// multiple of ROWS_PER_WORKGROUP (a workgroup's rows in one head). The host runs it for single
// tokens: a chain per token in one workgroup outgrows the separate dispatch with more.
//
// Defines: TYPE_Q8_0 | TYPE_Q4_0, USE_INTEGER_DOT, GATED_OUTPUT | HEAD_INPUTS. Specialization
// constants: 0 workgroup size, 1 ROWS_PER_WORKGROUP, 2 ROWS, 3 TOKENS, 4 BLOCKS, 5 SPLIT (a power of
// two; the workgroup's subgroups if it has fewer); HEAD_INPUTS: 6 MAX_SUBGROUPS (workgroup size /
// smallest subgroup size), 7 MAX_HEAD_DIM.
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "matmul_params.glsl"
#include "quant.glsl"
#ifdef GATED_OUTPUT
#include "gelu.glsl"
#include "quantize_block.glsl"
#define QUANTIZE_CAPACITY 32
#include "quantize_workgroup.glsl"
const uint kGatedRows = SHARED_GATED_ROWS;  // a block of 32 gate rows, then the same 32 rows of up
shared float gated_sums[SHARED_GATED_SUMS];
#endif

layout(local_size_x_id = 0) in;
#ifdef HEAD_INPUTS
layout(constant_id = 6) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 7) const uint MAX_HEAD_DIM = 512;
#include "reduce.glsl"
#include "attention_inputs.glsl"
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer InputsParamsPtr { InputsParams v; };
shared bool prepares_head;
// The product's outputs, read by the head's last workgroup.
#define OutputPtr CoherentF32
#else
#define OutputPtr F32Ptr
#endif
layout(constant_id = 1) const uint ROWS_PER_WORKGROUP = 8;
layout(constant_id = 2) const uint ROWS = 2;
layout(constant_id = 3) const uint TOKENS = 1;
layout(constant_id = 4) const uint BLOCKS = 2;
layout(constant_id = 5) const uint SPLIT = 1;

// SPLIT > 1: each subgroup's sums of a group of rows (subgroups are at least 4 invocations wide:
// device_info.cpp requires it).
const uint kSplitSums = SPLIT > 1u ? (gl_WorkGroupSize.x / 4u) * ROWS * TOKENS : 1u;
shared float split_sums[kSplitSums];

// Token t's block b: packed int8 in x, the scale, and (Q4_0) the sum of its 32 values.
struct ActivationBlock {
  uint q[8];
  float d;
  int sum;
};

ActivationBlock activation_block(uint t, uint b) {
  ActivationBlock a;
  a.d = load_activation_block(t, b, a.q);
  a.sum = 0;
#if defined(TYPE_Q4_0)
  for (uint j = 0; j < 8; ++j) a.sum += dot4(a.q[j], 0x01010101u);
#endif
  return a;
}

// Exact int32 dot product of a weight block's quants (as loaded) with an activation block.
int quant_dot(const uvec4 lo, const uvec4 hi, const ActivationBlock a) {
  int sum = 0;
#if defined(TYPE_Q4_0)
  [[unroll]] for (uint j = 0; j < 4; ++j) {
    sum += dot4(lo[j] & 0x0f0f0f0fu, a.q[j]);
    sum += dot4((lo[j] >> 4) & 0x0f0f0f0fu, a.q[j + 4]);
  }
  return sum - 8 * a.sum;
#else
  [[unroll]] for (uint j = 0; j < 4; ++j) sum += dot4(lo[j], a.q[j]) + dot4(hi[j], a.q[j + 4]);
  return sum;
#endif
}

#ifdef GATED_OUTPUT
// Row i of the workgroup's 64: gate row 32w + i, or up row 32w + i - 32.
void gated_row(uint i, out uint64_t quants, out uint64_t scales) {
  const uint row = flat_workgroup_index() * 32u + (i & 31u);
  quants = (i < 32u ? p.w : p.up) + uint64_t(row) * uint64_t(p.w_row_bytes);
  scales = (i < 32u ? p.w_scales : p.up_scales) + uint64_t(row) * uint64_t(p.cols / 32u) * 2u;
}

// Each token's 32 gated values as one Q8_0 block of the down product's input.
void write_gated_blocks() {
  const uint lane = gl_LocalInvocationID.x, block = flat_workgroup_index();
  for (uint t = 0; t < p.n_tokens; ++t) {
    barrier();  // the sums are in place; the previous token's quantization has read its values
    for (uint i = lane; i < 32u; i += gl_WorkGroupSize.x) {
      quantize_values[i] = geglu_value(gated_sums[t * kGatedRows + i], gated_sums[t * kGatedRows + 32u + i], p.gelu_table);
    }
    quantize_shared_q8(32u, p.dst + uint64_t(t) * p.dst_stride + block * 32u,
                       p.out_scales + (uint64_t(t) * (p.dst_stride / 32u) + block) * 4u);
  }
}
#endif

#ifdef HEAD_INPUTS
// Counts this workgroup's rows (from `first`) as written; the last workgroup of their head
// prepares its attention inputs for every token. Only that one reads the whole parameter block.
void prepare_finished_head(uint first) {
  const uint head_dim = InputsParamsPtr(p.inputs).v.head_dim, row_head = first / head_dim;
  memoryBarrierBuffer();  // this invocation's outputs before the count
  barrier();
  if (gl_LocalInvocationIndex == 0u) {
    CoherentU32 arrivals = CoherentU32(p.arrivals);
    prepares_head = atomicAdd(arrivals.v[row_head], 1u) + 1u == head_dim / ROWS_PER_WORKGROUP;
    if (prepares_head) arrivals.v[row_head] = 0u;
    memoryBarrierBuffer();  // the head's other rows after their counts
  }
  barrier();
  if (!prepares_head) return;
  const InputsParams inputs = InputsParamsPtr(p.inputs).v;
  // A V = K layer's values are its keys' projections (attention_inputs.glsl's value heads read v).
  const bool values_of_keys = inputs.v == inputs.k && row_head >= inputs.n_head;
  for (uint t = 0; t < p.n_tokens; ++t) {
    prepare_attention_input(inputs, t, row_head);
    if (values_of_keys) prepare_attention_input(inputs, t, row_head + inputs.n_head_kv);
  }
}
#endif

void main() {
#ifdef GATED_OUTPUT
  const uint first = 0u, end = kGatedRows;
  if (flat_workgroup_index() * 32u >= p.n_out) return;  // the whole workgroup, before any barrier
#else
  const uint first = flat_workgroup_index() * ROWS_PER_WORKGROUP;
  if (first >= p.n_out) return;
  const uint end = min(first + ROWS_PER_WORKGROUP, p.n_out);
#endif
  // Subgroup counts and sizes are powers of two, so `split` divides the subgroups into teams.
  const uint split = min(SPLIT, gl_NumSubgroups), teams = gl_NumSubgroups / split;
  const uint team = gl_SubgroupID / split, member = gl_SubgroupID % split;
  const uint width = split * gl_SubgroupSize, lane = member * gl_SubgroupSize + gl_SubgroupInvocationID;
  const uint n_blocks = p.cols / 32u;

  // Every subgroup makes the same number of passes (split > 1 has barriers in them); a team
  // without rows in the last pass only joins its barriers.
  for (uint pass0 = first; pass0 < end; pass0 += teams * ROWS) {
    const uint row0 = pass0 + team * ROWS;
    uint64_t quants[ROWS], scales[ROWS];
    bool valid[ROWS];
    [[unroll]] for (uint r = 0; r < ROWS; ++r) {
#ifdef GATED_OUTPUT
      valid[r] = row0 + r < end;
      gated_row(valid[r] ? row0 + r : 0u, quants[r], scales[r]);
#else
      bool id_valid = false;
      const uint row = row0 + r < end ? weight_row(row0 + r, id_valid) : 0u;
      valid[r] = row0 + r < end && id_valid;
      quants[r] = weight_row_address(row);
      scales[r] = weight_scales_address(row);
#endif
    }

    for (uint t0 = 0; t0 < p.n_tokens; t0 += TOKENS) {
      float acc[ROWS][TOKENS];
      [[unroll]] for (uint r = 0; r < ROWS; ++r)
        [[unroll]] for (uint t = 0; t < TOKENS; ++t) acc[r][t] = 0.0;

      for (uint b0 = row0 < end ? lane : n_blocks; b0 < n_blocks; b0 += BLOCKS * width) {
        // The weight loads of all BLOCKS blocks first, then the arithmetic.
        uvec4 w[BLOCKS][ROWS][2];
        float wd[BLOCKS][ROWS];
        [[unroll]] for (uint k = 0; k < BLOCKS; ++k) {
          const uint b = b0 + k * width;
          if (b >= n_blocks) break;
          [[unroll]] for (uint r = 0; r < ROWS; ++r) {
            if (!valid[r]) continue;
            U128Ptr q = U128Ptr(quants[r] + uint64_t(b) * (16u * kQuantVectors));
            w[k][r][0] = q.v[0];
            w[k][r][1] = kQuantVectors == 2u ? q.v[1] : uvec4(0u);
            wd[k][r] = load_weight_scale(scales[r], b);
          }
        }
        [[unroll]] for (uint k = 0; k < BLOCKS; ++k) {
          const uint b = b0 + k * width;
          if (b >= n_blocks) break;
          [[unroll]] for (uint t = 0; t < TOKENS; ++t) {
            if (t0 + t >= p.n_tokens) break;
            const ActivationBlock a = activation_block(t0 + t, b);
            [[unroll]] for (uint r = 0; r < ROWS; ++r) {
              if (!valid[r]) continue;
              acc[r][t] = fma(float(quant_dot(w[k][r][0], w[k][r][1], a)), wd[k][r] * a.d, acc[r][t]);
            }
          }
        }
      }

      [[unroll]] for (uint r = 0; r < ROWS; ++r) {
        [[unroll]] for (uint t = 0; t < TOKENS; ++t) acc[r][t] = subgroupAdd(acc[r][t]);
      }
      if (split > 1u) {
        barrier();  // the previous pass's sums are read
        if (subgroupElect()) {
          [[unroll]] for (uint r = 0; r < ROWS; ++r)
            [[unroll]] for (uint t = 0; t < TOKENS; ++t) split_sums[(gl_SubgroupID * ROWS + r) * TOKENS + t] = acc[r][t];
        }
        barrier();
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
          [[unroll]] for (uint t = 0; t < TOKENS; ++t) {
            float sum = split_sums[(team * split * ROWS + r) * TOKENS + t];
            for (uint m = 1; m < split; ++m) sum += split_sums[((team * split + m) * ROWS + r) * TOKENS + t];
            acc[r][t] = sum;
          }
        }
      }
      if (member == 0u && subgroupElect()) {
        [[unroll]] for (uint r = 0; r < ROWS; ++r) {
          [[unroll]] for (uint t = 0; t < TOKENS; ++t) {
            if (row0 + r >= end || t0 + t >= p.n_tokens) continue;
#ifdef GATED_OUTPUT
            gated_sums[(t0 + t) * kGatedRows + row0 + r] = acc[r][t];
#else
            OutputPtr(p.dst + (uint64_t(t0 + t) * p.dst_stride + row0 + r) * 4u).v[0] = valid[r] ? acc[r][t] : nan_value();
#endif
          }
        }
      }
    }
  }
#ifdef GATED_OUTPUT
  write_gated_blocks();
#endif
#ifdef HEAD_INPUTS
  prepare_finished_head(first);
#endif
}
