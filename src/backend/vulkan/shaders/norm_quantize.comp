#version 460
// RMSNorm of rows straight into the Q8_0 activations of the Q4_0 / Q8_0 matrix kernels: one
// dispatch (and one barrier) instead of rms_norm.comp + quantize_q8.comp, with their results bit
// for bit (the same sums in the same order, the same per-block quantization):
//   residual == 0:  y = x / sqrt(mean(x^2) + eps) * weight, quantized;
//   residual != 0:  Gemma's sandwich norm and the next norm at once:
//                   residual = (residual + rms_norm(x) * weight) * out_scale   (written back),
//                   y = rms_norm(residual) * next_weight, quantized.
// weight == 0 / next_weight == 0 mean unweighted. One workgroup per row; after the norm each
// invocation quantizes whole blocks. Specialization constants: 0 workgroup size, 1 MAX_SUBGROUPS.
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

float weighted(float value, float scale, uint64_t weight, uint i) {
  return weight != 0ul ? value * scale * F32Ptr(weight).v[i] : value * scale;
}

float row_scale(F32Ptr row) {
  double squares = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
    precise float square = row.v[i] * row.v[i];
    squares += double(square);
  }
  return rms_scale(workgroup_sum_f64(squares), p.n, p.eps);
}

void main() {
  const uint r = flat_workgroup_index();
  if (r >= p.n_rows) return;  // the whole workgroup, before any barrier
  F32Ptr x = F32Ptr(p.x + uint64_t(r) * p.n * 4u);
  float scale = row_scale(x);
  F32Ptr source = x;
  uint64_t weight = p.weight;
  if (p.residual != 0ul) {
    F32Ptr res = F32Ptr(p.residual + uint64_t(r) * p.n * 4u);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
      precise float y = weighted(x.v[i], scale, p.weight, i);  // not fused into the add
      precise float sum = res.v[i] + y;
      res.v[i] = sum * p.out_scale;
    }
    memoryBarrierBuffer();  // the new residual row, for the workgroup's other invocations
    barrier();
    scale = row_scale(res);
    source = res;
    weight = p.next_weight;
  }
  const uint blocks = p.n / 32u;
  for (uint b = gl_LocalInvocationID.x; b < blocks; b += gl_WorkGroupSize.x) {
    float values[32];
    for (uint i = 0; i < 32; ++i) values[i] = weighted(source.v[32u * b + i], scale, weight, 32u * b + i);
    const uint block = r * blocks + b;
    quantize_block_q8(values, p.q + uint64_t(block) * 32u, p.d + uint64_t(block) * 4u);
  }
}
