#version 460
// Token embeddings: dst[t][c] = dequantize(table row tokens[t])[c] * scale (the CPU backend's
// embed: the row decoded exactly, then the sqrt(n_embd) input scale in f32).
// One workgroup per token; threads stride over the row. Defines: TYPE_F32 | TYPE_F16 |
// TYPE_BF16 | TYPE_Q8_0 | TYPE_Q4_0. Specialization constant 0: workgroup size.
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(push_constant, std430) uniform EmbedParams {
  uint64_t table;   // token_embd in the device layout (device_matrix.h): rows, or split-block quants
  uint64_t scales;  // Q4_0 / Q8_0: the split blocks' f16 scales
  uint64_t tokens;  // int32 per token
  uint64_t dst;     // f32 [n_tokens][n_embd]
  uint row_bytes;   // bytes per row at `table`
  uint n_embd;
  float scale;
  uint n_tokens;
} p;

// Value c of table row `token`, as exact f32.
float table_value(uint token, uint c) {
  const uint64_t row = p.table + uint64_t(token) * uint64_t(p.row_bytes);
#if defined(TYPE_F32)
  return F32Ptr(row).v[c];
#elif defined(TYPE_F16)
  return f16_bits_to_f32(uint(U16Ptr(row).v[c]));
#elif defined(TYPE_BF16)
  return bf16_bits_to_f32(uint(U16Ptr(row).v[c]));
#else
  const uint b = c / 32u, j = c % 32u;
  const uint blocks = p.n_embd / 32u;
  const float d = f16_bits_to_f32(uint(U16Ptr(p.scales + (uint64_t(token) * blocks + b) * 2u).v[0]));
#if defined(TYPE_Q4_0)
  // Byte i of a block's 16 quant bytes holds element i (low nibble) and element i + 16 (high).
  const uint i = j % 16u;
  const uint byte = (U32Ptr(row + uint64_t(b) * 16u).v[i / 4u] >> (8u * (i % 4u))) & 0xffu;
  const int q = int(j < 16u ? (byte & 0x0fu) : (byte >> 4u)) - 8;
#else
  const int q = bitfieldExtract(int(U32Ptr(row + uint64_t(b) * 32u).v[j / 4u]), int(8u * (j % 4u)), 8);
#endif
  return float(q) * d;
#endif
}

void main() {
  const uint t = flat_workgroup_index();
  if (t >= p.n_tokens) return;
  const int token = I32Ptr(p.tokens).v[t];
  F32Ptr out_row = F32Ptr(p.dst + uint64_t(t) * p.n_embd * 4u);
  for (uint c = gl_LocalInvocationID.x; c < p.n_embd; c += gl_WorkGroupSize.x) {
    out_row.v[c] = table_value(uint(token), c) * p.scale;
  }
}
