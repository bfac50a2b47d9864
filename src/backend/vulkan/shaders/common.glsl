// Shared by every Channel compute shader: buffers are reached through buffer device addresses
// (GL_EXT_buffer_reference), passed in push constants. No descriptor sets: a dispatch is fully
// described by its push constants, so recorded command buffers replay without any descriptor
// update, and no descriptor range limit (maxStorageBufferRange: 128 MiB on lavapipe) applies.
// Addresses are 64-bit integers (shaderInt64); every address is computed in uint64 and only
// small, in-row offsets are used as 32-bit array indices (SPIR-V treats indices as signed).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float64 : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

// Typed views of memory. Rows of f16 / bf16 values and the f16 scales of quantized blocks are
// only 2-byte aligned, so they are read as 16-bit words (16-bit storage); f32 and packed int8
// data is 4-byte aligned.
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F32Ptr { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer U32Ptr { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer I32Ptr { int v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer U16Ptr { uint16_t v[]; };
layout(buffer_reference, std430, buffer_reference_align = 2) buffer F16Ptr { float16_t v[]; };
// Four f16 values in one 8-byte load (8-byte aligned), as two words of f16 pairs for
// unpackHalf2x16: held in registers before they are used (f16 locals would need shaderFloat16).
layout(buffer_reference, std430, buffer_reference_align = 8) buffer U32x2Ptr { uvec2 v[]; };
// 16-byte loads: split quantized blocks (device_matrix.h) and packed int8 activations.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer U128Ptr { uvec4 v[]; };

// Memory other workgroups of the same dispatch write and read, ordered by atomics and memory
// barriers: loads that see their stores (no stale L1 lines).
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer CoherentU32 { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer CoherentF32 { float v[]; };

// The value written for outputs that have none (a row id out of range).
float nan_value() { return uintBitsToFloat(0x7fc00000u); }

// Dispatches wider than maxComputeWorkGroupCount[0] (65535 on some devices) are folded into a
// second grid dimension by the host (CommandSequence::dispatch_groups); this is the flat index.
uint flat_workgroup_index() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// ---------------------------------------------------------------------------- exact conversions
// Vulkan lets float division be off by 2.5 ulp and leaves the rounding of f32 -> f16 conversions
// to the implementation. Where the CPU backend's results depend on the exact bits (the Q8_0
// activation scales, activations rounded to f16 / bf16), these versions reproduce
// core/half.h and IEEE division exactly on every device.

float bf16_bits_to_f32(uint h) { return uintBitsToFloat(h << 16); }

// f32 -> bf16 bits, round to nearest even, NaNs kept quiet (core/half.h f32_to_bf16).
uint f32_to_bf16_bits(float f) {
  const uint u = floatBitsToUint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 64u;
  return (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;
}

// f32 -> f16 bits, round to nearest even (core/half.h f32_to_f16; its subnormal branch in integers).
uint f32_to_f16_bits(float f) {
  const uint u = floatBitsToUint(f);
  const uint sign = (u >> 16) & 0x8000u;
  const uint a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | ((a >> 13) & 0x3ffu);  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;                        // rounds to or beyond infinity
  if (a < 0x38800000u) {
    // f16 subnormal or zero: round a * 2^24 to an integer, ties to even.
    const uint e = a >> 23;
    if (e < 102u) return sign;  // below 2^-25: rounds to zero (f32 subnormals included)
    const uint m = (a & 0x7fffffu) | 0x800000u;
    const uint shift = 126u - e;  // 14 .. 24
    uint q = m >> shift;
    const uint rest = m & ((1u << shift) - 1u);
    const uint half_ulp = 1u << (shift - 1u);
    if (rest > half_ulp || (rest == half_ulp && (q & 1u) != 0u)) ++q;
    return sign | q;
  }
  const uint rounded = a + 0xfffu + ((a >> 13) & 1u);
  return sign | ((rounded - 0x38000000u) >> 13);
}

// f16 bits -> f32, exact for every value (core/half.h f16_to_f32).
float f16_bits_to_f32(uint h) {
  const uint sign = (h & 0x8000u) << 16;
  const uint exponent = (h >> 10) & 0x1fu;
  const uint mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0u) {
    const float magnitude = float(mantissa) * uintBitsToFloat(0x33800000u);  // * 2^-24, exact
    return sign != 0u ? -magnitude : magnitude;
  }
  return uintBitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// a / b rounded to nearest even, for finite a > 0 and b > 0 whose quotient is a normal f32. The
// quotient in double (Vulkan allows its division 2.5 ulp of error) rounds to the result or to a
// neighbour of it; the two midpoints around that candidate decide, compared with a exactly: a
// midpoint has 25 significant bits and b 24, so their product is exact in double, as double
// multiplication and comparison are on every device. (Checked on the CPU with the double
// quotient moved by up to 3 ulps, over every 127 / x and x / 127 and 10^8 random pairs. The
// form before this one divided 64-bit integers, which NVIDIA emulates: the Q8_0 scales alone
// cost a tenth of the H200's decode step.)
float div_rn(float a, float b) {
  const float q = float(double(a) / double(b));
  const float up = uintBitsToFloat(floatBitsToUint(q) + 1u), down = uintBitsToFloat(floatBitsToUint(q) - 1u);
  const double above = (double(q) + double(up)) * 0.5 * double(b);
  if (double(a) > above || (double(a) == above && (floatBitsToUint(up) & 1u) == 0u)) return up;
  const double below = (double(q) + double(down)) * 0.5 * double(b);
  if (double(a) < below || (double(a) == below && (floatBitsToUint(down) & 1u) == 0u)) return down;
  return q;
}
