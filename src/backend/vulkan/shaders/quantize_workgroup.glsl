// f32 values, one per invocation and 256 to a workgroup (8 blocks), to Q8_0 blocks bit for bit as
// quantize_block.glsl forms them: the values meet in shared memory, where every invocation finds
// its block's maximum, and every fourth one packs a word. Spread this way, the activations of a
// decode step (a few thousand values) are quantized by many workgroups at once instead of a few
// threads each walking whole blocks. Needs local_size_x = 256 and quantize_block.glsl.
shared float quantize_values[256];
shared uint quantize_bytes[256];

// This invocation's `value` is value e of the activations, whose Q8_0 blocks go to q (packed int8
// words) and d (f32 scales); in_range is e < n (whole blocks, so a block is in range or not).
// Every invocation of the workgroup must call it (barriers).
void quantize_workgroup_q8(float value, bool in_range, uint e, uint64_t q, uint64_t d) {
  const uint lane = gl_LocalInvocationID.x;
  quantize_values[lane] = in_range ? value : 0.0;
  barrier();
  const uint first = lane & ~31u;  // the block's first value in the workgroup
  float amax = 0.0;
  for (uint i = 0; i < 32; ++i) amax = max(amax, abs(quantize_values[first + i]));
  float scale, inverse_scale;
  q8_scales(amax, scale, inverse_scale);
  quantize_bytes[lane] = q8_byte(quantize_values[lane], inverse_scale);
  barrier();
  if (!in_range) return;
  if (lane % 4u == 0u) {
    const uint word = quantize_bytes[lane] | (quantize_bytes[lane + 1u] << 8) | (quantize_bytes[lane + 2u] << 16) |
                      (quantize_bytes[lane + 3u] << 24);
    U32Ptr(q).v[e / 4u] = word;
  }
  if (lane % 32u == 0u) F32Ptr(d).v[e / 32u] = scale;
}
