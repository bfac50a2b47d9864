// The activation conversions of the matrix kernels, bit for bit against the CPU backend's:
// Q8_0 quantization (backend/cpu/activation_quant.h) and rounding to f16 / bf16 (core/half.h).
// Any difference would move a Q8_0 value by one step (a relative change of ~1/127 in one
// product) or change a rounded activation, so these are exact comparisons.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "core/half.h"
#include "kernel_test_support.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

// Runs record_prepare for `type` on [n_tokens][cols] activations and returns the scratch bytes.
std::vector<uint8_t> prepare_on_gpu(GpuContext& gpu, GgmlType type, const std::vector<float>& x, int64_t n_tokens,
                                    int64_t cols) {
  MatmulKernels kernels(gpu.device, gpu.pipelines);
  Buffer input(gpu.device, x.size() * 4, MemoryUse::kDevice);
  const uint64_t scratch_bytes = MatmulKernels::scratch_bytes(type, n_tokens, cols);
  Buffer scratch(gpu.device, scratch_bytes, MemoryUse::kDevice);
  gpu.transfer.upload(input, 0, x.data(), x.size() * 4);
  CommandSequence seq(gpu.device);
  seq.begin();
  seq.fill(scratch, 0, scratch_bytes / 4 * 4, 0xa5a5a5a5u);
  seq.barrier();
  kernels.record_prepare(seq, type, input.address(), n_tokens, cols, cols, scratch.address());
  seq.end();
  seq.run();
  std::vector<uint8_t> out(scratch_bytes);
  gpu.transfer.download(scratch, 0, out.data(), out.size());
  return out;
}

float next_up(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }
float next_down(float f) { return std::nextafter(f, -std::numeric_limits<float>::infinity()); }

// Blocks that make the quantizer's roundings decisive:
//   - products x * (127 / amax) within an ulp of k + 1/2, so that an inverse scale one ulp off
//     (an inexact division) changes q;
//   - amax / 127 within an ulp of an f16 rounding midpoint, so that an inexact division or f16
//     rounding changes d;
//   - exact ties (amax = 127: inverse scale 1, x = k + 1/2) for round-half-to-even;
//   - very small and very large magnitudes, one all-zero block.
std::vector<float> quantizer_cases(int64_t n_blocks, std::mt19937& rng) {
  std::vector<float> x;
  std::uniform_real_distribution<float> unit(0.5f, 1.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    float block[kQuantBlock];
    const int kind = static_cast<int>(b % 6);
    const float amax = unit(rng) * std::exp2(static_cast<float>(static_cast<int>(rng() % 40) - 20));
    if (kind == 0) {  // random values
      for (float& v : block) v = random_value(rng);
    } else if (kind == 1) {  // products near k + 1/2
      const float id = 127.0f / amax;
      block[0] = rng() & 1 ? amax : -amax;
      for (int i = 1; i < kQuantBlock; ++i) {
        const int k = static_cast<int>(rng() % 253) - 126;
        float v = (static_cast<float>(k) + (k < 0 ? -0.5f : 0.5f)) / id;
        if (i % 3 == 1) v = next_up(v);
        if (i % 3 == 2) v = next_down(v);
        block[i] = std::fabs(v) <= amax ? v : 0.5f * v;
      }
    } else if (kind == 2) {  // amax / 127 near an f16 midpoint
      const uint16_t h = static_cast<uint16_t>(0x1000 + rng() % 0x5000);  // normal f16 of moderate size
      const float midpoint = 0.5f * (f16_to_f32(h) + f16_to_f32(static_cast<uint16_t>(h + 1)));
      float a = midpoint * 127.0f;
      const int step = static_cast<int>(rng() % 3);
      if (step == 1) a = next_up(a);
      if (step == 2) a = next_down(a);
      block[0] = a;
      for (int i = 1; i < kQuantBlock; ++i) block[i] = a * (static_cast<float>(rng() % 2001) / 1000.0f - 1.0f);
    } else if (kind == 3) {  // exact ties
      for (int i = 0; i < kQuantBlock; ++i) {
        const int k = static_cast<int>(rng() % 253) - 126;
        block[i] = static_cast<float>(k) + (k < 0 ? -0.5f : 0.5f);
      }
      block[0] = 127.0f;
    } else if (kind == 4) {  // extreme magnitudes
      const float scale = rng() & 1 ? 1e-30f : 1e30f;
      for (float& v : block) v = random_value(rng) * scale;
    } else {
      for (float& v : block) v = b == 5 ? 0.0f : random_value(rng);
    }
    x.insert(x.end(), block, block + kQuantBlock);
  }
  return x;
}

TEST(VulkanActivationPrep, Q8_0QuantizationIsBitExact) {
  CHANNEL_GPU_CONTEXT(gpu);
  std::mt19937 rng(2024);
  for (const auto& [n_tokens, cols] : {std::pair<int64_t, int64_t>{1, 32}, {3, 96}, {64, 2560}, {7, 1152}}) {
    SCOPED_TRACE(::testing::Message() << n_tokens << " tokens x " << cols);
    const std::vector<float> x = quantizer_cases(n_tokens * cols / kQuantBlock, rng);
    const std::vector<uint8_t> got = prepare_on_gpu(*gpu, GgmlType::Q8_0, x, n_tokens, cols);
    const int64_t n_blocks = n_tokens * cols / kQuantBlock;
    std::vector<BlockQ8_0> want(n_blocks);
    cpu::quantize_row_q8_0_reference(x.data(), n_tokens * cols, want.data());
    const uint64_t scales_offset = (static_cast<uint64_t>(n_tokens * cols) + 15) / 16 * 16;
    int failures = 0;
    for (int64_t b = 0; b < n_blocks && failures < 10; ++b) {
      float scale;
      std::memcpy(&scale, got.data() + scales_offset + b * 4, 4);
      if (bits(scale) != bits(f16_to_f32(want[b].d))) {
        ADD_FAILURE() << "block " << b << ": scale " << scale << " vs CPU " << f16_to_f32(want[b].d);
        ++failures;
      }
      for (int i = 0; i < kQuantBlock; ++i) {
        const auto q = static_cast<int8_t>(got[b * kQuantBlock + i]);
        if (q != want[b].qs[i]) {
          ADD_FAILURE() << "block " << b << " value " << i << " (" << x[b * kQuantBlock + i] << "): " << int{q}
                        << " vs CPU " << int{want[b].qs[i]};
          ++failures;
        }
      }
    }
  }
}

// Values of every kind: random magnitudes, exact midpoints between two f16 (bf16) values and
// their neighbours, values that round into the f16 subnormal range, to infinity, and specials.
std::vector<float> rounding_cases(std::mt19937& rng) {
  std::vector<float> x;
  for (int i = 0; i < 3000; ++i) {
    uint32_t u = rng();
    if (i % 3 == 0) u = (u & 0x80000000u) | ((u & 0x00ffffffu) + (0x30000000u + (rng() % 0x18000000u)));  // f16-ish range
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) f = 1.0f;
    x.push_back(f);
  }
  for (int i = 0; i < 500; ++i) {
    const uint16_t h = static_cast<uint16_t>(rng() % 0x7bff);  // below the largest finite f16
    const float mid = 0.5f * (f16_to_f32(h) + f16_to_f32(static_cast<uint16_t>(h + 1)));
    x.insert(x.end(), {mid, next_up(mid), next_down(mid), -mid});
    const uint16_t b = static_cast<uint16_t>(rng() % 0x7f7f);
    uint32_t lo = static_cast<uint32_t>(b) << 16;
    uint32_t mid_bits = lo + 0x8000u;
    float bmid;
    std::memcpy(&bmid, &mid_bits, 4);
    x.insert(x.end(), {bmid, next_up(bmid), next_down(bmid)});
  }
  x.insert(x.end(), {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e10f, -1e10f, std::numeric_limits<float>::infinity(),
                     -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1e-8f, 3e-8f,
                     5.96e-8f, 2.98e-8f, 2.9802322e-08f, 6.1e-5f, std::numeric_limits<float>::denorm_min(),
                     std::numeric_limits<float>::min()});
  while (x.size() % 64 != 0) x.push_back(random_value(rng));
  return x;
}

TEST(VulkanActivationPrep, F16AndBF16RoundingIsBitExact) {
  CHANNEL_GPU_CONTEXT(gpu);
  std::mt19937 rng(77);
  const std::vector<float> x = rounding_cases(rng);
  const int64_t cols = 64, n_tokens = static_cast<int64_t>(x.size()) / cols;
  for (const GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
    SCOPED_TRACE(ggml_type_traits(type).name);
    const std::vector<uint8_t> got = prepare_on_gpu(*gpu, type, x, n_tokens, cols);
    int failures = 0;
    for (size_t i = 0; i < x.size() && failures < 10; ++i) {
      uint16_t g;
      std::memcpy(&g, got.data() + 2 * i, 2);
      const uint16_t want = type == GgmlType::F16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
      if (g != want) {
        ADD_FAILURE() << "value " << i << " = " << x[i] << " (0x" << std::hex << bits(x[i]) << "): 0x" << g
                      << " vs CPU 0x" << want << std::dec;
        ++failures;
      }
    }
  }
}

}  // namespace
}  // namespace channel::vulkan
