#version 460
// y[i] = gelu(gate[i]) * up[i] (gelu.glsl). Specialization constant 0: workgroup size;
// one invocation per element.
#include "common.glsl"
#include "gelu.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform GegluParams {
  uint64_t gate;  // f32 [n]
  uint64_t up;    // f32 [n]
  uint64_t dst;   // f32 [n] (may be gate)
  uint64_t gelu_table;  // f16 bits [65536]: GELU of every f16 input (gelu.glsl)
  uint n;
  uint pad;
} p;

void main() {
  const uint i = flat_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n) return;
  F32Ptr(p.dst).v[i] = geglu_value(F32Ptr(p.gate).v[i], F32Ptr(p.up).v[i], p.gelu_table);
}
