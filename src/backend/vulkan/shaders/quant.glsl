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

#if defined(TYPE_Q4_0)
const uint kBlockBytes = 18;  // fp16 d, 16 bytes: byte i = element i (low nibble), i + 16 (high)
#elif defined(TYPE_Q8_0)
const uint kBlockBytes = 34;  // fp16 d, 32 int8
#endif

// Four nibbles (one per byte, 0..15) to the packed int8 values nibble - 8: n ^ 8 is n - 8 as a
// 4-bit two's-complement number; multiplying its sign bits by 0x1e fills bits 4-7 of each byte
// (0x08 * 0x1e = 0xf0, no carry into the next byte).
uint nibbles_to_int8(uint n) {
  const uint v = n ^ 0x08080808u;
  return v | ((v & 0x08080808u) * 0x1eu);
}

// Block b of the row at `row`: its 32 values as 8 words of packed int8, and its scale d.
float load_weight_block(uint64_t row, uint b, out uint q[8]) {
  U16Ptr block = U16Ptr(row + uint64_t(b) * kBlockBytes);
  // unpackHalf2x16 is the hardware f16 decode, exact for every finite f16 value.
  const float d = unpackHalf2x16(uint(block.v[0])).x;
#if defined(TYPE_Q4_0)
  for (uint j = 0; j < 4; ++j) {
    const uint bytes = uint(block.v[1 + 2 * j]) | (uint(block.v[2 + 2 * j]) << 16);  // qs[4j .. 4j+3]
    q[j] = nibbles_to_int8(bytes & 0x0f0f0f0fu);             // elements 4j .. 4j+3
    q[j + 4] = nibbles_to_int8((bytes >> 4) & 0x0f0f0f0fu);  // elements 16+4j .. 16+4j+3
  }
#else
  for (uint j = 0; j < 8; ++j) q[j] = uint(block.v[1 + 2 * j]) | (uint(block.v[2 + 2 * j]) << 16);
#endif
  return d;
}

// Token t's activation block b: 8 words of packed int8 and the f32 scale.
float load_activation_block(uint t, uint b, out uint q[8]) {
  U32Ptr words = U32Ptr(p.x + uint64_t(t) * p.x_stride + uint64_t(b) * 32u);
  for (uint j = 0; j < 8; ++j) q[j] = words.v[j];
  return F32Ptr(p.x_scales + (uint64_t(t) * (p.x_stride / 32u) + b) * 4u).v[0];
}

int block_dot(const uint w[8], const uint x[8]) {
  int sum = 0;
  for (uint j = 0; j < 8; ++j) sum += dot4(w[j], x[j]);
  return sum;
}
