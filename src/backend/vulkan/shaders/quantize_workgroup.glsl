// Q8_0 blocks, bit for bit as quantize_block.glsl forms them, of values a workgroup has gathered in
// shared memory: quantize_values[], QUANTIZE_CAPACITY of them (a multiple of 32, defined before
// this file is included). First each block's maximum and scales, one invocation per block (the
// scales' exact divisions are double arithmetic: formed once per block, not once per value, which
// on the H200 was most of the kernel), then one invocation per word of 4 int8. Spread this way,
// the activations of a decode step (a few thousand values) are quantized by many workgroups at
// once, and a kernel that produces whole blocks (an attention head of a multiple of 32 values)
// quantizes its own output instead of leaving it to another dispatch. Needs quantize_block.glsl.
#include "shared_memory.glsl"
shared float quantize_values[SHARED_QUANTIZE_VALUES(QUANTIZE_CAPACITY)];
shared float quantize_inverse_scales[SHARED_QUANTIZE_SCALES(QUANTIZE_CAPACITY)];

// The blocks of quantize_values[0, n) (n a multiple of 32) to q (packed int8 words, element 4j + k
// in byte k of word j) and d (f32 scales), the addresses of the first block's. Every invocation
// of the workgroup calls it once its own values are in place; it begins with the barrier that
// publishes them (and ends without one: a caller that writes quantize_values again needs one).
void quantize_shared_q8(uint n, uint64_t q, uint64_t d) {
  const uint lane = gl_LocalInvocationID.x, stride = gl_WorkGroupSize.x;
  barrier();
  for (uint b = lane; b < n / 32u; b += stride) {
    float amax = 0.0;
    for (uint i = 0; i < 32; ++i) amax = max(amax, abs(quantize_values[32u * b + i]));
    float scale, inverse_scale;
    q8_scales(amax, scale, inverse_scale);
    quantize_inverse_scales[b] = inverse_scale;
    F32Ptr(d).v[b] = scale;
  }
  barrier();
  for (uint w = lane; w < n / 4u; w += stride) {
    const float inverse_scale = quantize_inverse_scales[w / 8u];
    uint word = 0u;
    for (uint k = 0; k < 4; ++k) word |= q8_byte(quantize_values[4u * w + k], inverse_scale) << (8u * k);
    U32Ptr(q).v[w] = word;
  }
}
