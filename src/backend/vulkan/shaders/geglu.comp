#version 460
// y[i] = gelu_tanh(gate[i]) * up[i], with GELU as llama.cpp's CPU backend evaluates it (through a
// table of f16 inputs and f16 outputs, ops.cpp geglu): the gate rounded to f16, GELU in f32,
// the result rounded to f16; beyond +-10 the identity and zero. Specialization constant 0:
// workgroup size; one invocation per element.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform GegluParams {
  uint64_t gate;  // f32 [n]
  uint64_t up;    // f32 [n]
  uint64_t dst;   // f32 [n] (may be gate)
  uint n;
  uint pad;
} p;

// As the CPU's, operation for operation (precise: no fused multiply-adds the CPU does not make).
float gelu_tanh(float x) {
  const float a = 0.044715, sqrt_2_over_pi = 0.79788456080286535587989211986876;
  precise float inner = sqrt_2_over_pi * x * (1.0 + a * x * x);
  precise float result = 0.5 * x * (1.0 + tanh(inner));
  return result;
}

void main() {
  const uint i = flat_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n) return;
  const float g = F32Ptr(p.gate).v[i];
  float activated;
  if (g <= -10.0) {
    activated = 0.0;
  } else if (g >= 10.0) {
    activated = g;
  } else {
    const float rounded = f16_bits_to_f32(f32_to_f16_bits(g));
    activated = f16_bits_to_f32(f32_to_f16_bits(gelu_tanh(rounded)));
  }
  F32Ptr(p.dst).v[i] = activated * F32Ptr(p.up).v[i];
}
