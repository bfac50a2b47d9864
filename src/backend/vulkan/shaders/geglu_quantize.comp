#version 460
// GEGLU straight into the Q8_0 activations of the Q4_0 / Q8_0 down projection: geglu.comp's
// values, then quantize_q8.comp's blocks, bit for bit, in one dispatch. One invocation per value
// (GELU is the expensive part), 256 per workgroup = 8 blocks: the values meet in shared memory,
// where every invocation finds its block's maximum, and every fourth one packs a word.
#include "common.glsl"
#include "gelu.glsl"
#include "quantize_block.glsl"

layout(local_size_x = 256) in;

layout(push_constant, std430) uniform GegluQuantizeParams {
  uint64_t gate;  // f32 [n]
  uint64_t up;    // f32 [n]
  uint64_t q;     // packed int8 [n / 4] uints
  uint64_t d;     // f32 scales [n / 32]
  uint n;         // a multiple of 32 (rows of n_ff values one after another)
  uint pad;
} p;

shared float values[256];
shared uint bytes[256];

void main() {
  const uint lane = gl_LocalInvocationID.x;
  const uint e = flat_workgroup_index() * 256u + lane;
  const bool in_range = e < p.n;  // whole blocks: n and 256 are multiples of 32
  values[lane] = in_range ? geglu_value(F32Ptr(p.gate).v[e], F32Ptr(p.up).v[e]) : 0.0;
  barrier();
  const uint first = lane & ~31u;  // the block's first value in the workgroup
  float amax = 0.0;
  for (uint i = 0; i < 32; ++i) amax = max(amax, abs(values[first + i]));
  float scale, inverse_scale;
  q8_scales(amax, scale, inverse_scale);
  bytes[lane] = q8_byte(values[lane], inverse_scale);
  barrier();
  if (!in_range) return;
  if (lane % 4u == 0u) {
    const uint word = bytes[lane] | (bytes[lane + 1u] << 8) | (bytes[lane + 2u] << 16) | (bytes[lane + 3u] << 24);
    U32Ptr(p.q).v[e / 4u] = word;
  }
  if (lane % 32u == 0u) F32Ptr(p.d).v[e / 32u] = scale;
}
