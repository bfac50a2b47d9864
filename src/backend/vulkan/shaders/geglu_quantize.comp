#version 460
// GEGLU straight into the Q8_0 activations of the Q4_0 / Q8_0 down projection: geglu.comp's
// values, then quantize_q8.comp's blocks, bit for bit, in one dispatch. One invocation per value,
// 256 per workgroup.
#include "common.glsl"
#include "gelu.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 256) in;
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
  const uint e = flat_workgroup_index() * 256u + gl_LocalInvocationID.x;
  const bool in_range = e < p.n;  // whole blocks: n and 256 are multiples of 32
  const float value = in_range ? geglu_value(F32Ptr(p.gate).v[e], F32Ptr(p.up).v[e], p.gelu_table) : 0.0;
  quantize_workgroup_q8(value, in_range, e, p.q, p.d);
}
