#version 460
// RMSNorm of rows, optionally added to a residual stream and scaled:
//   y = x / sqrt(mean(x^2) + eps) * weight                  (residual == 0)
//   residual[r] = (residual[r] + y) * out_scale               (residual != 0: Gemma's sandwich
//                                                              norm after attention and FFN)
// weight == 0 means unweighted. One workgroup per row. Specialization constants: 0 workgroup
// size, 1 MAX_SUBGROUPS.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
#include "reduce.glsl"

layout(push_constant, std430) uniform NormParams {
  uint64_t x;         // f32 rows
  uint64_t weight;    // f32 [n], or 0
  uint64_t dst;       // f32 rows (may be x); unused when residual != 0
  uint64_t residual;  // f32 rows, or 0
  uint n;             // values per row
  uint x_stride;      // row strides in values
  uint dst_stride;
  float eps;
  float out_scale;
  uint n_rows;
} p;

void main() {
  const uint r = flat_workgroup_index();
  if (r >= p.n_rows) return;  // the whole workgroup, before any barrier
  F32Ptr x = F32Ptr(p.x + uint64_t(r) * p.x_stride * 4u);
  double squares = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
    precise float square = x.v[i] * x.v[i];
    squares += double(square);
  }
  const float scale = rms_scale(workgroup_sum_f64(squares), p.n, p.eps);
  const bool weighted = p.weight != 0ul;
  F32Ptr w = F32Ptr(p.weight);
  if (p.residual == 0ul) {
    F32Ptr y = F32Ptr(p.dst + uint64_t(r) * p.dst_stride * 4u);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
      y.v[i] = weighted ? x.v[i] * scale * w.v[i] : x.v[i] * scale;
    }
  } else {
    F32Ptr res = F32Ptr(p.residual + uint64_t(r) * p.dst_stride * 4u);
    for (uint i = gl_LocalInvocationID.x; i < p.n; i += gl_WorkGroupSize.x) {
      precise float y = weighted ? x.v[i] * scale * w.v[i] : x.v[i] * scale;  // not fused into the add
      precise float sum = res.v[i] + y;
      res.v[i] = sum * p.out_scale;
    }
  }
}
