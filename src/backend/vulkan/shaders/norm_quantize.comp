#version 460
// RMSNorm of rows straight into the Q8_0 activations of the Q4_0 / Q8_0 matrix kernels: one
// dispatch (and one barrier) instead of rms_norm.comp + quantize_q8.comp, with the same
// per-block quantization:
//   residual == 0:  y = x / sqrt(mean(x^2) + eps) * weight, quantized;
//   residual != 0:  Gemma's sandwich norm and the next norm at once:
//                   residual = (residual + rms_norm(x) * weight) * out_scale   (written back),
//                   y = rms_norm(residual) * next_weight, quantized.
// weight == 0 / next_weight == 0 mean unweighted. One workgroup per row, each invocation holding
// whole blocks (so the row is read once; the sums of squares are added in another order than
// rms_norm.comp's, in double). Specialization constants: 0 workgroup size, 1 MAX_SUBGROUPS.
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require
#include "common.glsl"
#include "quantize_block.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
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

// Each invocation holds whole blocks of 32 values (block b in invocation b % size, slot
// b / size): a row is read once into registers, and the residual and the quantization need no
// further memory round trip. Rows of up to kMaxSlots * size blocks (the host checks).
const uint kMaxSlots = 2;

float weighted(float value, float scale, uint64_t weight, uint i) {
  return weight != 0ul ? value * scale * F32Ptr(weight).v[i] : value * scale;
}

// The 32 values of block b of a row.
void load_block(uint64_t row, uint b, out float values[32]) {
  U128Ptr words = U128Ptr(row + uint64_t(b) * 128u);
  for (uint j = 0; j < 8; ++j) {
    const uvec4 w = words.v[j];
    for (uint k = 0; k < 4; ++k) values[4 * j + k] = uintBitsToFloat(w[k]);
  }
}

void store_block(uint64_t row, uint b, const float values[32]) {
  U128Ptr words = U128Ptr(row + uint64_t(b) * 128u);
  for (uint j = 0; j < 8; ++j) {
    words.v[j] = uvec4(floatBitsToUint(values[4 * j]), floatBitsToUint(values[4 * j + 1]),
                       floatBitsToUint(values[4 * j + 2]), floatBitsToUint(values[4 * j + 3]));
  }
}

// 1 / sqrt(mean(x^2) + eps) of the row whose blocks the invocations hold.
float row_scale(const float blocks[kMaxSlots][32], uint n_blocks) {
  double squares = 0.0;
  for (uint slot = 0; slot < kMaxSlots; ++slot) {
    if (gl_LocalInvocationID.x + slot * gl_WorkGroupSize.x >= n_blocks) continue;
    for (uint i = 0; i < 32; ++i) {
      precise float square = blocks[slot][i] * blocks[slot][i];
      squares += double(square);
    }
  }
  return rms_scale(workgroup_sum_f64(squares), p.n, p.eps);
}

void main() {
  const uint r = flat_workgroup_index();
  if (r >= p.n_rows) return;  // the whole workgroup, before any barrier
  const uint n_blocks = p.n / 32u, lane = gl_LocalInvocationID.x, size = gl_WorkGroupSize.x;
  const uint64_t x_row = p.x + uint64_t(r) * p.n * 4u;
  const uint64_t residual_row = p.residual + uint64_t(r) * p.n * 4u;
  float blocks[kMaxSlots][32];
  float residual[kMaxSlots][32];
  for (uint slot = 0; slot < kMaxSlots; ++slot) {
    const uint b = lane + slot * size;
    if (b >= n_blocks) continue;
    load_block(x_row, b, blocks[slot]);
    if (p.residual != 0ul) load_block(residual_row, b, residual[slot]);
  }
  float scale = row_scale(blocks, n_blocks);
  uint64_t weight = p.weight;
  if (p.residual != 0ul) {
    for (uint slot = 0; slot < kMaxSlots; ++slot) {
      const uint b = lane + slot * size;
      if (b >= n_blocks) continue;
      for (uint i = 0; i < 32; ++i) {
        precise float y = weighted(blocks[slot][i], scale, p.weight, 32u * b + i);  // not fused into the add
        precise float sum = residual[slot][i] + y;
        blocks[slot][i] = sum * p.out_scale;
      }
      store_block(residual_row, b, blocks[slot]);
    }
    scale = row_scale(blocks, n_blocks);
    weight = p.next_weight;
  }
  for (uint slot = 0; slot < kMaxSlots; ++slot) {
    const uint b = lane + slot * size;
    if (b >= n_blocks) continue;
    float values[32];
    for (uint i = 0; i < 32; ++i) values[i] = weighted(blocks[slot][i], scale, weight, 32u * b + i);
    const uint block = r * n_blocks + b;
    quantize_block_q8(values, p.q + uint64_t(block) * 32u, p.d + uint64_t(block) * 4u);
  }
}
