// geglu.comp and geglu_quantize.comp against the CPU backend, bit for bit: GELU-tanh gating
// (ops.cpp geglu, GELU through llama.cpp's f16 table) and, for the Q4_0 / Q8_0 down projection,
// the gated values' Q8_0 blocks (activation_quant.h). The quantizing kernel's blocks feed the
// matrix kernels, so one value a step off is a failure. Sizes below, at and beyond one
// workgroup (256 values), and a Gemma 3 12B FFN row; inputs that reach GELU's f16 table far out
// on both sides.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/geglu.h"
#include "backend/cpu/ops.h"
#include "backend/vulkan/shader_push.h"
#include "core/half.h"
#include "model/gelu_table.h"
#include "kernel_test_support.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

constexpr uint32_t kSizes[] = {32, 224, 256, 288, 15360};

// Gate values of every magnitude GELU tells apart (random_value's, and some far in the tails);
// up values as random_value's.
std::vector<float> gate_values(uint32_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = i % 7 == 3 ? random_value(rng) * 16.0f : random_value(rng);
  return v;
}

std::vector<float> up_values(uint32_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = random_value(rng);
  return v;
}

template <class T>
std::unique_ptr<Buffer> upload(GpuContext& gpu, const T& values) {
  const uint64_t bytes = values.size() * sizeof(values[0]);
  auto buffer = std::make_unique<Buffer>(gpu.device, bytes, MemoryUse::kDevice);
  gpu.transfer.upload(*buffer, 0, values.data(), bytes);
  return buffer;
}

TEST(VulkanGeglu, MatchesTheCpuBitForBit) {
  CHANNEL_GPU_CONTEXT(gpu);
  for (const uint32_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << n << " values");
    std::mt19937 rng(n);
    const std::vector<float> gate = gate_values(n, rng), up = up_values(n, rng);
    const auto gate_buffer = upload(*gpu, gate), up_buffer = upload(*gpu, up), table = upload(*gpu, gelu_f16_table());
    Buffer out(gpu->device, uint64_t{n} * 4 + 64, MemoryUse::kDevice);  // 16 values past the end stay poisoned
    const GegluPush push{gate_buffer->address(), up_buffer->address(), out.address(), table->address(), n, 0};
    const uint32_t spec[] = {256};
    CommandSequence seq(gpu->device);
    seq.begin();
    seq.fill(out, 0, out.size(), kPoison);
    seq.barrier();
    seq.dispatch_groups(gpu->pipelines.get("geglu", spec), push, (n + 255) / 256);
    seq.end();
    seq.run();
    std::vector<float> got(n + 16);
    gpu->transfer.download(out, 0, got.data(), got.size() * 4);

    std::vector<float> want(n);
    cpu::geglu(gate.data(), up.data(), want.data(), n);
    int failures = 0;
    for (uint32_t i = 0; i < n && failures < 10; ++i) {
      if (bits(got[i]) != bits(want[i])) {
        ADD_FAILURE() << "value " << i << " (gate " << gate[i] << ", up " << up[i] << "): " << got[i] << " vs CPU "
                      << want[i];
        ++failures;
      }
    }
    for (uint32_t i = n; i < n + 16; ++i) EXPECT_EQ(bits(got[i]), kPoison) << "written past the end at " << i;
  }
}

TEST(VulkanGegluQuantize, MatchesTheCpuBitForBit) {
  CHANNEL_GPU_CONTEXT(gpu);
  for (const uint32_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << n << " values");
    std::mt19937 rng(n + 1);
    const std::vector<float> gate = gate_values(n, rng), up = up_values(n, rng);
    const auto gate_buffer = upload(*gpu, gate), up_buffer = upload(*gpu, up), table = upload(*gpu, gelu_f16_table());
    // One block past the end of each output stays poisoned.
    Buffer q(gpu->device, uint64_t{n} + 32, MemoryUse::kDevice), d(gpu->device, uint64_t{n} / 32 * 4 + 4,
                                                                    MemoryUse::kDevice);
    const GegluQuantizePush push{gate_buffer->address(), up_buffer->address(), q.address(), d.address(),
                                 table->address(), n, 0};
    CommandSequence seq(gpu->device);
    seq.begin();
    seq.fill(q, 0, q.size(), kPoison);
    seq.fill(d, 0, d.size(), kPoison);
    seq.barrier();
    seq.dispatch_groups(gpu->pipelines.get("geglu_quantize"), push, (n + 255) / 256);
    seq.end();
    seq.run();
    std::vector<uint8_t> got_q(q.size());
    std::vector<float> got_d(d.size() / 4);
    gpu->transfer.download(q, 0, got_q.data(), got_q.size());
    gpu->transfer.download(d, 0, got_d.data(), got_d.size() * 4);

    std::vector<float> gated(n);
    cpu::geglu(gate.data(), up.data(), gated.data(), n);
    std::vector<BlockQ8_0> want(n / 32);
    cpu::quantize_row_q8_0_reference(gated.data(), n, want.data());
    int failures = 0;
    for (uint32_t b = 0; b < n / 32 && failures < 10; ++b) {
      if (bits(got_d[b]) != bits(f16_to_f32(want[b].d))) {
        ADD_FAILURE() << "block " << b << ": scale " << got_d[b] << " vs CPU " << f16_to_f32(want[b].d);
        ++failures;
      }
      for (int i = 0; i < 32; ++i) {
        const auto value = static_cast<int8_t>(got_q[b * 32 + i]);
        if (value != want[b].qs[i]) {
          ADD_FAILURE() << "block " << b << " value " << i << ": " << int{value} << " vs CPU " << int{want[b].qs[i]};
          ++failures;
        }
      }
    }
    uint32_t poison_bytes;
    std::memcpy(&poison_bytes, got_q.data() + n, 4);
    EXPECT_EQ(poison_bytes, kPoison) << "quants written past the end";
    EXPECT_EQ(bits(got_d[n / 32]), kPoison) << "a scale written past the end";
  }
}

}  // namespace
}  // namespace channel::vulkan
