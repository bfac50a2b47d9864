#version 460
// GEGLU straight into the Q8_0 activations of the Q4_0 / Q8_0 down projection: geglu.comp's
// values, then quantize_q8.comp's blocks, bit for bit, in one dispatch. One invocation per block
// of 32 values. Specialization constant 0: workgroup size.
#include "common.glsl"
#include "gelu.glsl"
#include "quantize_block.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform GegluQuantizeParams {
  uint64_t gate;  // f32 [n]
  uint64_t up;    // f32 [n]
  uint64_t q;     // packed int8 [n / 4] uints
  uint64_t d;     // f32 scales [n / 32]
  uint n;         // a multiple of 32 (rows of n_ff values one after another)
  uint pad;
} p;

void main() {
  const uint block = flat_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (block >= p.n / 32u) return;
  float values[32];
  for (uint i = 0; i < 32; ++i) {
    const uint e = 32u * block + i;
    values[i] = geglu_value(F32Ptr(p.gate).v[e], F32Ptr(p.up).v[e]);
  }
  quantize_block_q8(values, p.q + uint64_t(block) * 32u, p.d + uint64_t(block) * 4u);
}
