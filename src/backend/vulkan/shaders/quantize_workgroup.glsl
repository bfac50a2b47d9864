// f32 values, one per invocation and 256 to a workgroup (8 blocks), to Q8_0 blocks bit for bit as
// quantize_block.glsl forms them: the values meet in shared memory, the first invocation of each
// block finds its maximum and scales, and every fourth invocation packs a word. Spread this way,
// the activations of a decode step (a few thousand values) are quantized by many workgroups at
// once instead of a few threads each walking whole blocks. The scales' exact divisions (double
// arithmetic) are formed once per block, not once per value: on the H200 a workgroup's 256
// redundant pairs of them were most of the kernel. Needs local_size_x = 256 and quantize_block.glsl.
shared float quantize_values[256];
shared float quantize_inverse_scales[8];

// This invocation's `value` is value e of the activations, whose Q8_0 blocks go to q (packed int8
// words) and d (f32 scales); in_range is e < n (whole blocks, so a block is in range or not).
// Every invocation of the workgroup must call it (barriers).
void quantize_workgroup_q8(float value, bool in_range, uint e, uint64_t q, uint64_t d) {
  const uint lane = gl_LocalInvocationID.x;
  quantize_values[lane] = in_range ? value : 0.0;
  barrier();
  if (lane % 32u == 0u) {
    float amax = 0.0;
    for (uint i = 0; i < 32; ++i) amax = max(amax, abs(quantize_values[lane + i]));
    float scale, inverse_scale;
    q8_scales(amax, scale, inverse_scale);
    quantize_inverse_scales[lane / 32u] = inverse_scale;
    if (in_range) F32Ptr(d).v[e / 32u] = scale;
  }
  barrier();
  if (!in_range || lane % 4u != 0u) return;
  const float inverse_scale = quantize_inverse_scales[lane / 32u];
  uint word = 0u;
  for (uint k = 0; k < 4; ++k) word |= q8_byte(quantize_values[lane + k], inverse_scale) << (8u * k);
  U32Ptr(q).v[e / 4u] = word;
}
