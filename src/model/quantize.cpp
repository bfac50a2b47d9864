#include "model/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/half.h"

namespace channel {
namespace {

// ggml narrows the scaled values with a plain C cast, which is undefined for NaN and for values out
// of range. Those arise only from non-finite inputs (inf makes the scale inf and its inverse 0, and
// inf * 0 is NaN) or from blocks so small (max |x| below ~1e-37) that 1 / scale overflows to inf.
// Here NaN becomes 0 and the rest saturates; every other value is in range and unaffected.
int narrow(float value, float low, float high) {
  return std::isnan(value) ? 0 : static_cast<int>(std::clamp(value, low, high));
}

// quantize_row_q8_0_ref: scale = max |x| / 127, q = round(x / scale), ties away from zero.
BlockQ8_0 quantize_block_q8_0(const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < kQuantBlock; ++j) {
    const float magnitude = std::fabs(x[j]);
    amax = amax > magnitude ? amax : magnitude;  // ggml's MAX, which (unlike std::max) takes a NaN
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  BlockQ8_0 block{};
  block.d = f32_to_f16(d);
  for (int j = 0; j < kQuantBlock; ++j) {
    block.qs[j] = static_cast<int8_t>(narrow(std::round(x[j] * id), -128.0f, 127.0f));
  }
  return block;
}

// quantize_row_q4_0_ref: the value of largest magnitude (the first one on a tie, sign kept) maps
// to -8, so scale = max / -8; q = trunc(x / scale + 8.5) capped at 15. The opposite extreme
// therefore lands on 7 * |scale| at most: Q4_0 is asymmetric.
// `x * id + 8.5f` must not be contracted into an FMA, or rare values round differently from ggml.
// The default x86-64 target has no FMA; building this file with -march=haswell or later would
// need -ffp-contract=off.
BlockQ4_0 quantize_block_q4_0(const float* x) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < kQuantBlock; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  BlockQ4_0 block{};
  block.d = f32_to_f16(d);
  constexpr int kHalf = kQuantBlock / 2;
  for (int j = 0; j < kHalf; ++j) {
    const int low = narrow(x[j] * id + 8.5f, 0.0f, 15.0f);
    const int high = narrow(x[j + kHalf] * id + 8.5f, 0.0f, 15.0f);
    block.qs[j] = static_cast<uint8_t>(low | (high << 4));
  }
  return block;
}

void dequantize_block_q8_0(const BlockQ8_0& block, float* out) {
  const float d = f16_to_f32(block.d);
  for (int j = 0; j < kQuantBlock; ++j) out[j] = static_cast<float>(block.qs[j]) * d;
}

void dequantize_block_q4_0(const BlockQ4_0& block, float* out) {
  const float d = f16_to_f32(block.d);
  constexpr int kHalf = kQuantBlock / 2;
  for (int j = 0; j < kHalf; ++j) {
    out[j] = static_cast<float>((block.qs[j] & 0x0f) - 8) * d;
    out[j + kHalf] = static_cast<float>((block.qs[j] >> 4) - 8) * d;
  }
}

// Blocks are copied in and out with memcpy: rows in a mapped file need not be aligned for them.
template <typename Block>
void quantize_blocks(std::span<const float> values, uint8_t* out, Block (*quantize_block)(const float*)) {
  for (size_t b = 0; b < values.size() / kQuantBlock; ++b) {
    const Block block = quantize_block(values.data() + b * kQuantBlock);
    std::memcpy(out + b * sizeof(Block), &block, sizeof(Block));
  }
}

template <typename Block>
void dequantize_blocks(const uint8_t* data, int64_t n, float* out,
                       void (*dequantize_block)(const Block&, float*)) {
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    Block block;
    std::memcpy(&block, data + b * sizeof(Block), sizeof(Block));
    dequantize_block(block, out + b * kQuantBlock);
  }
}

void encode_16bit(std::span<const float> values, uint8_t* out, uint16_t (*encode)(float)) {
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t bits = encode(values[i]);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

void decode_16bit(const uint8_t* data, int64_t n, float* out, float (*decode)(uint16_t)) {
  for (int64_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, data + 2 * i, 2);
    out[i] = decode(bits);
  }
}

}  // namespace

std::vector<uint8_t> quantize_row(GgmlType type, std::span<const float> values) {
  std::vector<uint8_t> out(ggml_row_bytes(type, static_cast<int64_t>(values.size())));
  switch (type) {
    case GgmlType::F32:  // byte copies, which unlike memcpy are defined for an empty row's null pointers
      std::copy_n(reinterpret_cast<const uint8_t*>(values.data()), out.size(), out.data());
      break;
    case GgmlType::F16: encode_16bit(values, out.data(), f32_to_f16); break;
    case GgmlType::BF16: encode_16bit(values, out.data(), f32_to_bf16); break;
    case GgmlType::Q8_0: quantize_blocks(values, out.data(), quantize_block_q8_0); break;
    case GgmlType::Q4_0: quantize_blocks(values, out.data(), quantize_block_q4_0); break;
  }
  return out;
}

void dequantize(GgmlType type, const uint8_t* data, int64_t n, float* out) {
  const size_t n_bytes = ggml_row_bytes(type, n);  // refuses a partial block
  switch (type) {
    case GgmlType::F32: std::copy_n(data, n_bytes, reinterpret_cast<uint8_t*>(out)); break;
    case GgmlType::F16: decode_16bit(data, n, out, f16_to_f32); break;
    case GgmlType::BF16: decode_16bit(data, n, out, bf16_to_f32); break;
    case GgmlType::Q8_0: dequantize_blocks<BlockQ8_0>(data, n, out, dequantize_block_q8_0); break;
    case GgmlType::Q4_0: dequantize_blocks<BlockQ4_0>(data, n, out, dequantize_block_q4_0); break;
  }
}

}  // namespace channel
