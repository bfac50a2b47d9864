#version 460
// f32 activations -> Q8_0 blocks for the Q4_0 / Q8_0 matrix kernels, bit-exact with the CPU
// backend (backend/cpu/activation_quant.h, as llama.cpp's x86 build):
//   amax = max |x| over the block, d = fp16(amax / 127), id = amax != 0 ? 127 / amax : 0,
//   q = round-to-nearest-even(x * id), the scale kept as the f32 value of fp16(d).
// The divisions and the fp16 rounding are done exactly in integers (common.glsl); the product
// x * id is a correctly rounded f32 multiply on every Vulkan device.
// One thread per block of 32 values (activations are small next to the weights).
// Output: token t's values, 4 int8 per uint, at q + t * cols bytes; its scales at d + t * cols / 32 floats.
#include "common.glsl"

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
  float amax = 0.0;
  for (uint i = 0; i < 32; ++i) {
    values[i] = x.v[i];
    amax = max(amax, abs(values[i]));
  }
  const float inverse_scale = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
  const float scale = amax != 0.0 ? f16_bits_to_f32(f32_to_f16_bits(div_rn(amax, 127.0))) : 0.0;

  U32Ptr q = U32Ptr(p.q + uint64_t(block) * 32u);
  for (uint j = 0; j < 8; ++j) {
    uint word = 0u;
    for (uint k = 0; k < 4; ++k) {
      const int v = int(roundEven(values[4 * j + k] * inverse_scale));  // |v| <= 127
      word |= (uint(v) & 0xffu) << (8u * k);
    }
    q.v[j] = word;
  }
  F32Ptr(p.d + uint64_t(block) * 4u).v[0] = scale;
}
