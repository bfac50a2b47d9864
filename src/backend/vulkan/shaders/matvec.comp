#version 460
// F32 / F16 / BF16 matrix times a few activation vectors (decode: n_tokens = 1; small batches
// up to a few tokens; Q4_0 / Q8_0 have matvec_q.comp): memory-bound, so each workgroup streams
// ROWS weight rows once and applies them to TOKENS tokens at a time, its threads striding over
// the row (one value per thread and step: consecutive threads read consecutive memory).
// Per-thread partial sums are reduced with subgroupAdd and then across subgroups through shared
// memory, which works for any subgroup size (lavapipe 8, NVIDIA 32, AMD 64, Intel 8-32).
//
// Defines: TYPE_F32 | TYPE_F16 | TYPE_BF16. Specialization constants: 0 workgroup size, 1 ROWS,
// 2 TOKENS, 3 MAX_SUBGROUPS (workgroup size / the device's smallest subgroup size, rounded up).
#include "common.glsl"
#include "matmul_params.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ROWS = 2;
layout(constant_id = 2) const uint TOKENS = 1;
layout(constant_id = 3) const uint MAX_SUBGROUPS = 32;

shared float partial[MAX_SUBGROUPS * ROWS * TOKENS];

// Value c of the weight row at `row`, and of token t's prepared activations, as exact f32.
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

void main() {
  const uint first = flat_workgroup_index() * ROWS;
  if (first >= p.n_out) return;  // the whole workgroup: before any barrier
  const uint lane = gl_LocalInvocationID.x;

  uint64_t rows[ROWS];
  bool valid[ROWS];
  for (uint r = 0; r < ROWS; ++r) {
    bool id_valid = false;
    const uint row = first + r < p.n_out ? weight_row(first + r, id_valid) : 0u;
    valid[r] = first + r < p.n_out && id_valid;
    rows[r] = weight_row_address(row);
  }

  for (uint t0 = 0; t0 < p.n_tokens; t0 += TOKENS) {
    float acc[ROWS][TOKENS];
    for (uint r = 0; r < ROWS; ++r)
      for (uint t = 0; t < TOKENS; ++t) acc[r][t] = 0.0;

    for (uint c = lane; c < p.cols; c += gl_WorkGroupSize.x) {
      float xv[TOKENS];
      for (uint t = 0; t < TOKENS; ++t) xv[t] = t0 + t < p.n_tokens ? activation_value(t0 + t, c) : 0.0;
      for (uint r = 0; r < ROWS; ++r) {
        if (!valid[r]) continue;
        const float wv = weight_value(rows[r], c);
        for (uint t = 0; t < TOKENS; ++t) acc[r][t] = fma(wv, xv[t], acc[r][t]);
      }
    }

    // Reduce every (row, token) over the workgroup: within each subgroup, then over subgroups
    // in subgroup order (deterministic for a given device).
    for (uint r = 0; r < ROWS; ++r) {
      for (uint t = 0; t < TOKENS; ++t) {
        const float s = subgroupAdd(acc[r][t]);
        if (subgroupElect()) partial[(gl_SubgroupID * ROWS + r) * TOKENS + t] = s;
      }
    }
    barrier();
    for (uint k = lane; k < ROWS * TOKENS; k += gl_WorkGroupSize.x) {
      const uint r = k / TOKENS, t = k % TOKENS;
      if (first + r < p.n_out && t0 + t < p.n_tokens) {
        float sum = 0.0;
        for (uint s = 0; s < gl_NumSubgroups; ++s) sum += partial[(s * ROWS + r) * TOKENS + t];
        F32Ptr(p.dst + (uint64_t(t0 + t) * p.dst_stride + first + r) * 4u).v[0] = valid[r] ? sum : nan_value();
      }
    }
    barrier();
  }
}
