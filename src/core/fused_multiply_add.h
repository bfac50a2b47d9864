// a * b + c rounded once (std::fmaf's result) at a cost that does not depend on the CPU having an
// FMA instruction. Code built for the x86-64 baseline (no FMA) compiles std::fma into a libm call,
// and on a CPU without FMA (SSE4-only Atoms, Celerons, Pentiums, pre-Haswell cores) glibc answers
// it in software, switching the rounding mode twice per call. The scalar attention that such CPUs
// run (attention_reference.cpp) prefilled the gemma3-1b preset at 9.0 tok/s with libm's fmaf and
// 39.8 with fma_by_rounding_to_odd; decode 19.9 -> 24.4 (channel bench -t 2 -p 256 -n 16 on a
// Zen 5 with CHANNEL_SIMD_TARGET=SSE4 and glibc's FMA turned off by
// GLIBC_TUNABLES=glibc.cpu.hwcaps=-FMA,-FMA4,-AVX2, as on a CPU without FMA).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace channel {

// std::fmaf's result from double arithmetic alone: the product of two floats is exact in double;
// the sum is rounded to odd at double precision (the truncation toward zero with its last bit set
// where the sum was inexact, found from the exact error of the rounded sum), and a value rounded
// to odd with 53 bits rounds to 24 bits as the exact sum would (Boldo and Melquiond, "Emulation
// of FMA and correctly rounded sums: proved algorithms using rounding to odd", 2008).
inline float fma_by_rounding_to_odd(float a, float b, float c) {
  const double product = static_cast<double>(a) * static_cast<double>(b);  // 48 significant bits
  const double addend = c;
  const double sum = product + addend;
  if (!std::isfinite(sum)) return static_cast<float>(sum);  // infinities and NaNs as std::fmaf
  // The error of the rounded sum (Knuth's TwoSum): sum + error == product + addend exactly.
  const double addend_part = sum - product;
  const double error = (product - (sum - addend_part)) + (addend - addend_part);
  if (error == 0.0) return static_cast<float>(sum);
  uint64_t bits = std::bit_cast<uint64_t>(sum);
  // A sum rounded away from zero: the double next to it toward zero is the truncation.
  if ((error < 0.0) != (sum < 0.0)) bits -= 1;
  return static_cast<float>(std::bit_cast<double>(bits | 1));
}

// a * b + c rounded once: one instruction where the build may use FMA (any target but the x86
// baseline), else fma_by_rounding_to_odd.
inline float fused_multiply_add(float a, float b, float c) {
#if defined(__FMA__) || !(defined(__x86_64__) || defined(__i386__))
  return std::fma(a, b, c);
#else
  return fma_by_rounding_to_odd(a, b, c);
#endif
}

}  // namespace channel
