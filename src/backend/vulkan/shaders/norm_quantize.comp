#version 460
// RMSNorm of rows straight into the Q8_0 activations of the Q4_0 / Q8_0 matrix kernels: one
// dispatch (and one barrier) instead of rms_norm.comp + quantize_q8.comp, with their results bit
// for bit (the same per-value arithmetic, the same per-block quantization):
//   residual == 0:  y = x / sqrt(mean(x^2) + eps) * weight, quantized;
//   residual != 0:  Gemma's sandwich norm and the next norm at once:
//                   residual = (residual + rms_norm(x) * weight) * out_scale   (written back),
//                   y = rms_norm(residual) * next_weight, quantized.
// weight == 0 / next_weight == 0 mean unweighted.
//
// One workgroup per row; at decode that is one workgroup on the whole device, so the kernel is a
// chain of memory latencies and its length is what counts. Invocation t holds values t, t + WG,
// t + 2 WG, ... (PER_INVOCATION of them) in registers: the row and its weights are read once, all
// loads before any store (buffer references may alias, so a loop that reads x and writes the
// residual in turn waits on every store), and the new residual is normed without being read back.
// A Q8_0 block of 32 values then lies in 32 consecutive invocations: its maximum is an xor
// butterfly in the subgroup (across subgroups narrower than 32 through shared memory), its
// 4-value words two more shuffles. (The form before this one read back the residual and quantized
// a block per invocation: 18 us a row on the H200.) Subgroups are taken to be consecutive
// invocations of at least 4 (device_info.cpp requires it).
// Specialization constants: 0 workgroup size (a multiple of 32), 1 MAX_SUBGROUPS (workgroup size
// / smallest subgroup size), 2 PER_INVOCATION (>= n / workgroup size).
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#include "quantize_block.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
layout(constant_id = 2) const uint PER_INVOCATION = 16;
#include "reduce.glsl"

layout(push_constant, std430) uniform NormQuantizeParams {
  uint64_t x;            // f32 [n_rows][n]
  uint64_t weight;       // f32 [n], or 0
  uint64_t residual;     // f32 [n_rows][n], or 0
  uint64_t next_weight;  // f32 [n], or 0 (with a residual)
  uint64_t q;            // packed int8 [n_rows][n / 4] uints
  uint64_t d;            // f32 scales [n_rows][n / 32]
  uint n;                // values per row, a multiple of 32
  float eps;
  float out_scale;
  uint n_rows;
} p;

// Maxima of narrow subgroups, combined into block maxima.
shared float subgroup_max[PER_INVOCATION * MAX_SUBGROUPS];
// Each block's 127 / amax: round k's blocks are values k * WG .. k * WG + WG - 1.
const uint kBlocksPerRound = gl_WorkGroupSize.x / 32u;
shared float block_inverse_scales[PER_INVOCATION * kBlocksPerRound];

uint value_index(uint k) { return k * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }

void load_row(uint64_t address, out float values[PER_INVOCATION]) {
  F32Ptr row = F32Ptr(address);
  for (uint k = 0; k < PER_INVOCATION; ++k) values[k] = value_index(k) < p.n ? row.v[value_index(k)] : 0.0;
}

// A weight vector's values, or ones (x * 1.0 is exact: the same as the unweighted product).
void load_weights(uint64_t weight, out float values[PER_INVOCATION]) {
  if (weight != 0ul) {
    load_row(weight, values);
  } else {
    for (uint k = 0; k < PER_INVOCATION; ++k) values[k] = 1.0;
  }
}

float row_scale(const float values[PER_INVOCATION]) {
  double squares = 0.0;
  for (uint k = 0; k < PER_INVOCATION; ++k) {
    precise float square = values[k] * values[k];
    squares += double(square);
  }
  return rms_scale(workgroup_sum_f64(squares), p.n, p.eps);
}

// The maximum of `value` over the 32 consecutive invocations of its Q8_0 block.
void block_maxima(inout float values[PER_INVOCATION]) {
  for (uint k = 0; k < PER_INVOCATION; ++k) {
    for (uint lane = 1; lane < 32u && lane < gl_SubgroupSize; lane <<= 1) {
      values[k] = max(values[k], subgroupShuffleXor(values[k], lane));
    }
  }
  if (gl_SubgroupSize >= 32u) return;  // uniform: the same for every subgroup of the dispatch
  if (subgroupElect()) {
    for (uint k = 0; k < PER_INVOCATION; ++k) subgroup_max[k * MAX_SUBGROUPS + gl_SubgroupID] = values[k];
  }
  barrier();
  const uint first = (gl_LocalInvocationID.x & ~31u) / gl_SubgroupSize;
  for (uint k = 0; k < PER_INVOCATION; ++k) {
    float m = 0.0;
    for (uint s = 0; s < 32u / gl_SubgroupSize; ++s) m = max(m, subgroup_max[k * MAX_SUBGROUPS + first + s]);
    values[k] = m;
  }
}

// Every value's int8 and every block's scale. The scales' exact divisions (double arithmetic) are
// formed once per block and shared: formed by all 32 invocations of the block, they were a third
// of the kernel on the H200. The block's invocation k forms those of its round-k block, so that an
// invocation's PER_INVOCATION blocks have their divisions side by side, not one after another.
void quantize_row(uint r, const float values[PER_INVOCATION]) {
  float maxima[PER_INVOCATION];
  for (uint k = 0; k < PER_INVOCATION; ++k) maxima[k] = abs(values[k]);
  block_maxima(maxima);  // every invocation of a block now holds the block's maximum
  const uint lane = gl_SubgroupInvocationID & 3u, block_in_round = gl_LocalInvocationID.x / 32u;
  const uint first_of_block = gl_LocalInvocationID.x & ~31u;
  for (uint k = gl_LocalInvocationID.x & 31u; k < PER_INVOCATION; k += 32u) {
    float amax = maxima[0];
    for (uint j = 1; j < PER_INVOCATION; ++j) amax = j == k ? maxima[j] : amax;
    float scale, inverse_scale;
    q8_scales(amax, scale, inverse_scale);
    block_inverse_scales[k * kBlocksPerRound + block_in_round] = inverse_scale;
    const uint i = k * gl_WorkGroupSize.x + first_of_block;  // the block's first value
    if (i < p.n) F32Ptr(p.d).v[uint((uint64_t(r) * p.n + i) / 32u)] = scale;
  }
  barrier();
  for (uint k = 0; k < PER_INVOCATION; ++k) {
    const float inverse_scale = block_inverse_scales[k * kBlocksPerRound + block_in_round];
    uint word = q8_byte(values[k], inverse_scale) << (8u * lane);
    word |= subgroupShuffleXor(word, 1u);
    word |= subgroupShuffleXor(word, 2u);
    const uint i = value_index(k);
    if (i >= p.n) continue;
    if (lane == 0u) U32Ptr(p.q).v[uint((uint64_t(r) * p.n + i) / 4u)] = word;
  }
}

void main() {
  const uint r = flat_workgroup_index();
  if (r >= p.n_rows) return;  // the whole workgroup, before any barrier
  const uint64_t row = uint64_t(r) * p.n * 4u;
  float values[PER_INVOCATION], weights[PER_INVOCATION];
  load_row(p.x + row, values);
  load_weights(p.weight, weights);
  if (p.residual != 0ul) {
    float residual[PER_INVOCATION], next_weights[PER_INVOCATION];
    load_row(p.residual + row, residual);
    load_weights(p.next_weight, next_weights);
    const float scale = row_scale(values);
    for (uint k = 0; k < PER_INVOCATION; ++k) {
      precise float y = values[k] * scale * weights[k];  // not fused into the add
      precise float sum = residual[k] + y;
      values[k] = sum * p.out_scale;
      weights[k] = next_weights[k];
    }
    F32Ptr res = F32Ptr(p.residual + row);
    for (uint k = 0; k < PER_INVOCATION; ++k) {
      if (value_index(k) < p.n) res.v[value_index(k)] = values[k];
    }
  }
  const float scale = row_scale(values);
  for (uint k = 0; k < PER_INVOCATION; ++k) values[k] = values[k] * scale * weights[k];
  quantize_row(r, values);
}
