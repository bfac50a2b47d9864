#version 460
// Gemma 4 E-models: the inputs of every layer's per-layer embedding block, per (token, layer),
// in the CPU backend's arithmetic (backend/cpu/ops.h per_layer_input, llama.cpp's gemma4 order):
//   projected = per_layer_model_proj . x_emb (already multiplied) * projection_scale
//   dst[layer][token] = (RMSNorm(projected) * norm + token_row * token_scale) * input_scale
// with the norm's squares summed in double and its scale exactly rounded (reduce.glsl), as
// rms_norm.comp. It reads the projection token-major, as the matrix product writes it, and writes
// the inputs layer-major, so that each layer's block reads its tokens' inputs as one array.
// One workgroup per (token, layer): workgroup r is token r / n_layer, layer r % n_layer.
// Specialization constants: 0 workgroup size, 1 MAX_SUBGROUPS.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MAX_SUBGROUPS = 32;
#include "reduce.glsl"

layout(push_constant, std430) uniform PerLayerInputsParams {
  uint64_t projected;   // f32 [n_tokens][n_layer][width]
  uint64_t token_rows;  // f32 [n_tokens][n_layer][width]: each token's per_layer_token_embd row
  uint64_t norm;        // f32 [width]: per_layer_proj_norm
  uint64_t dst;         // f32 [n_layer][n_tokens][width]
  uint width;
  uint n_layer;
  uint n_tokens;
  float eps;
  float projection_scale;
  float token_scale;
  float input_scale;
  uint pad;
} p;

void main() {
  const uint r = flat_workgroup_index();
  if (r >= p.n_tokens * p.n_layer) return;  // the whole workgroup, before any barrier
  const uint t = r / p.n_layer, layer = r % p.n_layer;
  const uint64_t row = uint64_t(r) * p.width * 4u;
  F32Ptr projected = F32Ptr(p.projected + row);
  F32Ptr token_row = F32Ptr(p.token_rows + row);
  F32Ptr norm = F32Ptr(p.norm);
  F32Ptr dst = F32Ptr(p.dst + (uint64_t(layer) * p.n_tokens + t) * p.width * 4u);

  double squares = 0.0;
  for (uint i = gl_LocalInvocationID.x; i < p.width; i += gl_WorkGroupSize.x) {
    precise float x = projected.v[i] * p.projection_scale;
    precise float square = x * x;
    squares += double(square);
  }
  const float scale = rms_scale(workgroup_sum_f64(squares), p.width, p.eps);
  for (uint i = gl_LocalInvocationID.x; i < p.width; i += gl_WorkGroupSize.x) {
    precise float x = projected.v[i] * p.projection_scale;
    precise float normed = x * scale * norm.v[i];
    precise float token = token_row.v[i] * p.token_scale;  // not fused into the add
    precise float sum = normed + token;
    dst.v[i] = sum * p.input_scale;
  }
}
