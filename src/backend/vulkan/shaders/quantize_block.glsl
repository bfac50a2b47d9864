// The pieces of Q8_0 quantization, bit-exact with the CPU backend (backend/cpu/activation_quant.h,
// as llama.cpp's x86 build), for blocks of 32 f32 values:
//   amax = max |x| over the block, d = fp16(amax / 127), id = amax != 0 ? 127 / amax : 0,
//   q = round-to-nearest-even(x * id), the scale kept as the f32 value of fp16(d).
// The divisions and the fp16 rounding are exact (common.glsl); the product x * id is a correctly
// rounded f32 multiply on every Vulkan device. quantize_workgroup.glsl and norm_quantize.comp pack
// a block's 32 int8 into 8 uints (element 4j + k in byte k of word j).
// The block's scale d (as the f32 value of fp16(amax / 127)) and the factor 127 / amax.
void q8_scales(float amax, out float scale, out float inverse_scale) {
  inverse_scale = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
  scale = amax != 0.0 ? f16_bits_to_f32(f32_to_f16_bits(div_rn(amax, 127.0))) : 0.0;
}

// A value's int8 as the low byte of a uint.
uint q8_byte(float value, float inverse_scale) { return uint(int(roundEven(value * inverse_scale))) & 0xffu; }

