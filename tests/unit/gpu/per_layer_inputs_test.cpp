// per_layer_inputs.comp against the CPU backend, bit for bit: the Gemma 4 E-models' per-layer
// inputs (ops.cpp per_layer_input: the projection scaled, RMS-normed and weighted, plus the
// token's scaled per-layer row, the sum scaled), read token-major and written layer-major. The
// inputs gate each layer's per-layer embedding block, so one value a step off is a failure.
// Per-layer widths below, at and beyond the 64-invocation workgroup; one token and several, one
// layer and several; a tail past the output that must stay poisoned.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "backend/cpu/ops.h"
#include "backend/vulkan/shader_push.h"
#include "kernel_test_support.h"
#include "model/model_config.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

struct Case {
  uint32_t width, n_layer, n_tokens, n_embd;
};

const Case kCases[] = {{16, 3, 7, 128},  {32, 1, 1, 96},    {64, 5, 3, 1536},
                       {256, 4, 2, 2560}, {48, 2, 9, 320},  {100, 3, 4, 64}};

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = random_value(rng);
  return v;
}

std::unique_ptr<Buffer> upload(GpuContext& gpu, const std::vector<float>& values) {
  auto buffer = std::make_unique<Buffer>(gpu.device, values.size() * 4, MemoryUse::kDevice);
  gpu.transfer.upload(*buffer, 0, values.data(), values.size() * 4);
  return buffer;
}

TEST(VulkanPerLayerInputs, MatchTheCpuBitForBit) {
  CHANNEL_GPU_CONTEXT(gpu);
  for (const Case& c : kCases) {
    SCOPED_TRACE(::testing::Message() << "width " << c.width << ", " << c.n_layer << " layers, " << c.n_tokens
                                      << " tokens");
    std::mt19937 rng(c.width * 131 + c.n_layer * 7 + c.n_tokens);
    const uint64_t n = uint64_t{c.n_tokens} * c.n_layer * c.width;
    const std::vector<float> projected = random_values(n, rng), token_rows = random_values(n, rng),
                             norm = random_values(c.width, rng);
    ModelConfig config;
    config.n_embd = static_cast<int>(c.n_embd);
    config.n_embd_per_layer = static_cast<int>(c.width);
    const PerLayerInputScales scales = config.per_layer_input_scales();
    const float eps = 1e-6f;

    const auto projected_buffer = upload(*gpu, projected), token_buffer = upload(*gpu, token_rows),
               norm_buffer = upload(*gpu, norm);
    constexpr uint32_t kTail = 16;  // values past the end that stay poisoned
    Buffer out(gpu->device, (n + kTail) * 4, MemoryUse::kDevice);
    const PerLayerInputsPush push{projected_buffer->address(), token_buffer->address(), norm_buffer->address(),
                                  out.address(), c.width, c.n_layer, c.n_tokens, eps, scales.projection, scales.token,
                                  scales.input, 0};
    const uint32_t spec[] = {64, 64};
    CommandSequence seq(gpu->device);
    seq.begin();
    seq.fill(out, 0, out.size(), kPoison);
    seq.barrier();
    seq.dispatch_groups(gpu->pipelines.get("per_layer_inputs", spec), push, uint64_t{c.n_tokens} * c.n_layer);
    seq.end();
    seq.run();
    std::vector<float> got(n + kTail);
    gpu->transfer.download(out, 0, got.data(), got.size() * 4);

    int failures = 0;
    std::vector<float> scratch(c.width), want(c.width);
    for (uint32_t t = 0; t < c.n_tokens; ++t) {
      for (uint32_t il = 0; il < c.n_layer && failures < 10; ++il) {
        const uint64_t source = (uint64_t{t} * c.n_layer + il) * c.width;
        scratch.assign(projected.begin() + source, projected.begin() + source + c.width);
        cpu::per_layer_input(scratch.data(), token_rows.data() + source, want.data(), c.width, eps, norm, scales);
        const float* row = got.data() + (uint64_t{il} * c.n_tokens + t) * c.width;
        for (uint32_t i = 0; i < c.width && failures < 10; ++i) {
          if (bits(row[i]) != bits(want[i])) {
            ADD_FAILURE() << "token " << t << " layer " << il << " value " << i << ": " << row[i] << " vs CPU "
                          << want[i];
            ++failures;
          }
        }
      }
    }
    for (uint64_t i = n; i < n + kTail; ++i) EXPECT_EQ(bits(got[i]), kPoison) << "written past the end at " << i;
  }
}

}  // namespace
}  // namespace channel::vulkan
