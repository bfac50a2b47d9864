// Shared by the attention shaders (attention_rows.comp: decode and small batches;
// attention.comp: tiled prefill): their push constants and the pieces of llama.cpp's CPU
// arithmetic both reproduce (backend/cpu/attention_reference.cpp).

layout(push_constant, std430) uniform AttentionParams {
  uint64_t q;               // f32 [n_tokens][n_head * head_dim]
  uint64_t k_cache;         // f16 [slots][n_head_kv * head_dim]
  uint64_t v_cache;
  uint64_t view;            // uint32 [n_view]: slots to read, chronological
  uint64_t slot_positions;  // int32 per physical slot: RoPE position of its key, -1 if empty
  uint64_t positions;       // int32 per token
  uint64_t dst;             // f32 [n_tokens][n_head * head_dim], unless out_q != 0
  uint head_dim;
  uint n_head;
  uint n_head_kv;
  int sliding_window;       // 0: global layer
  uint n_tokens;
  uint pad;
  uint64_t step;            // AttentionStepPtr: this layer's view-dependent parameters
  uint64_t partials;        // split-KV: f32 [n_head][n_chunks][2 + head_dim]: m, s, accumulators
  uint64_t out_q;           // or, when not 0, the output as Q8_0 activations for the wo product:
  uint64_t out_d;           //   packed int8 and f32 scales (MatmulKernels::quantized_layout)
} p;

#include "attention_step.glsl"

// This dispatch's view-dependent parameters: load_attention_step() sets it first thing.
AttentionStep step;
void load_attention_step() { step = AttentionStepPtr(p.step).v; }

#define kMinusInfinity uintBitsToFloat(0xff800000u)

// x rounded to the nearest f16 (ties to even) and back: f16_bits_to_f32(f32_to_f16_bits(x)) in
// three float operations instead of the integer code, since the online softmax rounds twice per
// key in a serial chain. Adding c = +-2^(e + 13), e being x's exponent (at least -14, f16's
// smallest normal one), puts x's f16 quantum 2^(e - 10) at the last bit of the sum, so the add
// rounds as the conversion does; taking c away again is exact. Checked against core/half.h on all
// 2^32 f32 values. Magnitudes that round to infinity, and NaNs, take the integer path.
float round_to_f16(float x) {
  const uint u = floatBitsToUint(x), sign = u & 0x80000000u, a = u & 0x7fffffffu;
  if (a >= 0x477ff000u) return f16_bits_to_f32(f32_to_f16_bits(x));
  const float c = uintBitsToFloat(sign | (max(a & 0x7f800000u, 113u << 23) + (13u << 23)));
  precise float sum = x + c;
  precise float rounded = sum - c;
  return uintBitsToFloat(floatBitsToUint(rounded) | sign);  // a negative x that rounds to 0 gives -0
}

// _mm512_reduce_add_ps as GCC compiles it: halves added, 8, 4, 2, 1 lanes.
float reduce16(float x[16]) {
  float a8[8], a4[4];
  for (uint l = 0; l < 8; ++l) a8[l] = x[l] + x[l + 8];
  for (uint l = 0; l < 4; ++l) a4[l] = a8[l] + a8[l + 4];
  precise float r = (a4[0] + a4[2]) + (a4[1] + a4[3]);
  return r;
}

uint kv_row_offset(uint slot, uint kv_head) { return (slot * p.n_head_kv + kv_head) * p.head_dim; }

// Listed key j: its slot, and whether token t (at `position`, seeing positions from
// `min_position`) attends to it.
bool visible_key(uint j, int position, int min_position, out uint slot) {
  slot = U32Ptr(p.view).v[j];
  const int key_position = I32Ptr(p.slot_positions).v[slot];
  return key_position >= 0 && key_position >= min_position && key_position <= position;
}

// Lowest position a token at `position` sees (sliding layers: its window).
int min_visible_position(int position) { return p.sliding_window > 0 ? position - p.sliding_window + 1 : 0; }
