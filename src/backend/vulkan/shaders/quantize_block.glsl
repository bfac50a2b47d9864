// One block of 32 f32 values to Q8_0, bit-exact with the CPU backend (backend/cpu/activation_quant.h,
// as llama.cpp's x86 build):
//   amax = max |x| over the block, d = fp16(amax / 127), id = amax != 0 ? 127 / amax : 0,
//   q = round-to-nearest-even(x * id), the scale kept as the f32 value of fp16(d).
// The divisions and the fp16 rounding are done exactly in integers (common.glsl); the product
// x * id is a correctly rounded f32 multiply on every Vulkan device. The 32 int8 go to `q` as 8
// uints (element 4j + k in byte k of word j), the scale to `d`.
// The block's scale d (as the f32 value of fp16(amax / 127)) and the factor 127 / amax.
void q8_scales(float amax, out float scale, out float inverse_scale) {
  inverse_scale = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
  scale = amax != 0.0 ? f16_bits_to_f32(f32_to_f16_bits(div_rn(amax, 127.0))) : 0.0;
}

// A value's int8 as the low byte of a uint.
uint q8_byte(float value, float inverse_scale) { return uint(int(roundEven(value * inverse_scale))) & 0xffu; }

void quantize_block_q8(const float values[32], uint64_t q, uint64_t d) {
  float amax = 0.0;
  for (uint i = 0; i < 32; ++i) amax = max(amax, abs(values[i]));
  float scale, inverse_scale;
  q8_scales(amax, scale, inverse_scale);
  U32Ptr words = U32Ptr(q);
  for (uint j = 0; j < 8; ++j) {
    uint word = 0u;
    for (uint k = 0; k < 4; ++k) word |= q8_byte(values[4 * j + k], inverse_scale) << (8u * k);
    words.v[j] = word;
  }
  F32Ptr(d).v[0] = scale;
}
