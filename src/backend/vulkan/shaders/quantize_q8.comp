#version 460
// f32 activations -> Q8_0 blocks for the Q4_0 / Q8_0 matrix kernels, bit-exact with the CPU
// backend (quantize_block.glsl). One invocation per value, 256 per workgroup
// (quantize_workgroup.glsl): at decode the attention output (a few thousand values) was 128
// blocks, two workgroups of one thread per block, 6.3 us a layer on the H200.
// Output: token t's values, 4 int8 per uint, at q + t * cols bytes; its scales at d + t * cols / 32 floats.
#include "common.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 256) in;
#define QUANTIZE_CAPACITY 256
#include "quantize_workgroup.glsl"

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
  const uint n = p.n_tokens * p.cols, first = flat_workgroup_index() * 256u;
  if (first >= n) return;  // the whole workgroup (the grid may be folded), before any barrier
  const uint e = first + gl_LocalInvocationID.x, t = e / p.cols, c = e % p.cols;
  quantize_values[gl_LocalInvocationID.x] = e < n ? F32Ptr(p.x + (uint64_t(t) * p.x_stride + c) * 4u).v[0] : 0.0;
  // Whole blocks: cols and 256 are multiples of 32.
  quantize_shared_q8(min(256u, n - first), p.q + first, p.d + first / 32u * 4u);
}
