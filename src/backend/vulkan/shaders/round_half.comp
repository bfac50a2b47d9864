#version 460
// f32 activations rounded to f16 (TYPE_F16) or bf16 (TYPE_BF16), round to nearest even, as the
// CPU backend prepares them for F16 / BF16 weights (core/half.h): the matrix kernels then read
// 16-bit values, and every product they form is the CPU's.
// Output: token t's cols values at dst + t * cols 16-bit words.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant, std430) uniform RoundParams {
  uint64_t x;       // f32 [n_tokens][x_stride]
  uint64_t dst;     // 16-bit [n_tokens][cols]
  uint n_tokens;
  uint cols;
  uint x_stride;
  uint pad;
} p;

void main() {
  const uint i = flat_workgroup_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= p.n_tokens * p.cols) return;
  const uint t = i / p.cols, c = i % p.cols;
  // Read as bits: no float operation touches the value, so no device flushes its subnormals.
  const float v = uintBitsToFloat(U32Ptr(p.x + (uint64_t(t) * p.x_stride + c) * 4u).v[0]);
#if defined(TYPE_F16)
  const uint bits = f32_to_f16_bits(v);
#else
  const uint bits = f32_to_bf16_bits(v);
#endif
  U16Ptr(p.dst + uint64_t(i) * 2u).v[0] = uint16_t(bits);
}
