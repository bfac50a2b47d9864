#version 460
// GEGLU straight into the Q8_0 activations of the Q4_0 / Q8_0 down projection: geglu.comp's
// values, then quantize_q8.comp's blocks, bit for bit, in one dispatch. One invocation per value,
// 256 per workgroup.
#include "common.glsl"
#include "gelu.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 256) in;
#define QUANTIZE_CAPACITY 256
#include "quantize_workgroup.glsl"

layout(push_constant, std430) uniform GegluQuantizeParams {
  uint64_t gate;  // f32 [n]
  uint64_t up;    // f32 [n]
  uint64_t q;     // packed int8 [n / 4] uints
  uint64_t d;     // f32 scales [n / 32]
  uint64_t gelu_table;  // f16 bits [65536]: GELU of every f16 input (gelu.glsl)
  uint n;         // a multiple of 32 (rows of n_ff values one after another)
  uint pad;
} p;

void main() {
  const uint first = flat_workgroup_index() * 256u;
  if (first >= p.n) return;  // the whole workgroup (the grid may be folded), before any barrier
  const uint e = first + gl_LocalInvocationID.x;
  quantize_values[gl_LocalInvocationID.x] =
      e < p.n ? geglu_value(F32Ptr(p.gate).v[e], F32Ptr(p.up).v[e], p.gelu_table) : 0.0;
  // Whole blocks: n is a multiple of 32.
  quantize_shared_q8(min(256u, p.n - first), p.q + first, p.d + first / 32u * 4u);
}
