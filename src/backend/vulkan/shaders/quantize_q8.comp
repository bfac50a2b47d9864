#version 460
// f32 activations -> Q8_0 blocks for the Q4_0 / Q8_0 matrix kernels, bit-exact with the CPU
// backend (quantize_block.glsl). One thread per block of 32 values (activations are small next
// to the weights).
// Output: token t's values, 4 int8 per uint, at q + t * cols bytes; its scales at d + t * cols / 32 floats.
#include "common.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 64) in;

layout(push_constant, std430) uniform QuantizeParams {
  uint64_t x;       // f32 [n_tokens][x_stride]
  uint64_t q;       // packed int8 [n_tokens][cols / 4] uints
  uint64_t d;       // f32 scales [n_tokens][cols / 32]
  uint n_tokens;
  uint cols;        // a multiple of 32
  uint x_stride;    // f32 values from one token to the next
  uint pad;
} p;

void main() {
  const uint blocks_per_token = p.cols / 32u;
  const uint block = flat_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (block >= p.n_tokens * blocks_per_token) return;
  const uint t = block / blocks_per_token, b = block % blocks_per_token;

  F32Ptr x = F32Ptr(p.x + (uint64_t(t) * p.x_stride + uint64_t(b) * 32u) * 4u);
  float values[32];
  for (uint i = 0; i < 32; ++i) values[i] = x.v[i];
  quantize_block_q8(values, p.q + uint64_t(block) * 32u, p.d + uint64_t(block) * 4u);
}
