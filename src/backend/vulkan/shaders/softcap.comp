#version 460
// x[i] = cap * tanh(x[i] / cap), as the CPU backend (multiplied by the host's 1 / cap).
// Specialization constant 0: workgroup size; one invocation per element.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform SoftcapParams {
  uint64_t x;  // f32 [n], in place
  uint n;
  float cap;
  float inverse_cap;
  uint pad;
} p;

void main() {
  const uint i = flat_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n) return;
  F32Ptr x = F32Ptr(p.x);
  x.v[i] = tanh(x.v[i] * p.inverse_cap) * p.cap;
}
