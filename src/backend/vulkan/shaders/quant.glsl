// Q4_0 / Q8_0 weight blocks times Q8_0 activations, as integer dot products: a block's 32
// products are summed exactly in int32, then scaled by d_w * d_x in f32 (as the CPU backend and
// llama.cpp). Both operands are handled as 8 uints of 4 packed int8 values, element 4j in the low
// byte of word j, so one dot of 4 packed bytes covers 4 elements.
//
// USE_INTEGER_DOT selects OpSDot (VK_KHR_shader_integer_dot_product, core in Vulkan 1.3: dp4a on
// NVIDIA, dot4 on AMD and Intel); without it, plain int arithmetic on the extracted bytes. The two
// give identical sums. glslang 11 has no GLSL builtin for it, so it is declared as a SPIR-V
// intrinsic: OpSDot = 4450, capabilities DotProduct = 6019 and DotProductInput4x8BitPacked = 6018,
// packed vector format 0 = PackedVectorFormat4x8Bit.
#ifdef USE_INTEGER_DOT
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot_packed_4x8(uint a, uint b, spirv_literal int packed_vector_format);
int dot4(uint a, uint b) { return sdot_packed_4x8(a, b, 0); }
#else
int dot4(uint a, uint b) {
  const int ia = int(a), ib = int(b);
  return bitfieldExtract(ia, 0, 8) * bitfieldExtract(ib, 0, 8) + bitfieldExtract(ia, 8, 8) * bitfieldExtract(ib, 8, 8) +
         bitfieldExtract(ia, 16, 8) * bitfieldExtract(ib, 16, 8) + bitfieldExtract(ia, 24, 8) * bitfieldExtract(ib, 24, 8);
}
#endif

// Weight blocks are in the split layout (device_matrix.h): quants and f16 scales in two arrays.
#if defined(TYPE_Q4_0)
const uint kQuantVectors = 1;  // 16 bytes: byte i = element i (low nibble), i + 16 (high)
#elif defined(TYPE_Q8_0)
const uint kQuantVectors = 2;  // 32 int8
#endif

// Four nibbles (one per byte, 0..15) to the packed int8 values nibble - 8: n ^ 8 is n - 8 as a
// 4-bit two's-complement number; multiplying its sign bits by 0x1e fills bits 4-7 of each byte
// (0x08 * 0x1e = 0xf0, no carry into the next byte).
uint nibbles_to_int8(uint n) {
  const uint v = n ^ 0x08080808u;
  return v | ((v & 0x08080808u) * 0x1eu);
}

// The f16 scale of block b of a row whose scales start at `scales`.
float load_weight_scale(uint64_t scales, uint b) {
  // unpackHalf2x16 is the hardware f16 decode, exact for every finite f16 value.
  return unpackHalf2x16(uint(U16Ptr(scales).v[b])).x;
}

// A block's quants as stored: Q4_0 4 words of nibbles, Q8_0 8 words of int8.
const uint kBlockWords = 4u * kQuantVectors;

// Block b of the row whose quants start at `quants` and scales at `scales`: its words as stored
// (unpack_weight_block makes them packed int8), its scale d returned. Blocks read ahead are held
// in this form: half the registers of unpacked ones for Q4_0.
float load_weight_block_words(uint64_t quants, uint64_t scales, uint b, out uint words[kBlockWords]) {
  U128Ptr block = U128Ptr(quants + uint64_t(b) * (16u * kQuantVectors));
  for (uint v = 0; v < kQuantVectors; ++v) {
    const uvec4 vector = block.v[v];
    for (uint j = 0; j < 4; ++j) words[4 * v + j] = vector[j];
  }
  return load_weight_scale(scales, b);
}

// A block's stored words as its 32 values in 8 words of packed int8.
void unpack_weight_block(const uint words[kBlockWords], out uint q[8]) {
#if defined(TYPE_Q4_0)
  for (uint j = 0; j < 4; ++j) {
    q[j] = nibbles_to_int8(words[j] & 0x0f0f0f0fu);             // elements 4j .. 4j+3 (byte i: element i, low nibble)
    q[j + 4] = nibbles_to_int8((words[j] >> 4) & 0x0f0f0f0fu);  // elements 16+4j .. 16+4j+3 (high nibble)
  }
#else
  for (uint j = 0; j < 8; ++j) q[j] = words[j];
#endif
}

// Token t's activation block b: 8 words of packed int8 and the f32 scale (prepared activations
// start 16-byte aligned and their stride is a multiple of 32 bytes).
float load_activation_block(uint t, uint b, out uint q[8]) {
  U128Ptr words = U128Ptr(p.x + uint64_t(t) * p.x_stride + uint64_t(b) * 32u);
  const uvec4 lo = words.v[0], hi = words.v[1];
  for (uint j = 0; j < 4; ++j) {
    q[j] = lo[j];
    q[j + 4] = hi[j];
  }
  return F32Ptr(p.x_scales + (uint64_t(t) * (p.x_stride / 32u) + b) * 4u).v[0];
}

int block_dot(const uint w[8], const uint x[8]) {
  int sum = 0;
  for (uint j = 0; j < 8; ++j) sum += dot4(w[j], x[j]);
  return sum;
}
