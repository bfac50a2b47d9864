// norm_quantize.comp against the CPU backend, bit for bit: RMSNorm (ops.cpp rms_norm), Gemma's
// sandwich-norm residual update (CpuBackend::add_normed_projection, then the layer's output
// scale) and Q8_0 quantization (activation_quant.h). The kernel's results feed the Q8_0 matrix
// kernels, so one value a step off is a failure. Row widths below, at and beyond the workgroup,
// several workgroup sizes (a value per invocation up to 21), with and without weights.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/ops.h"
#include "backend/vulkan/shader_push.h"
#include "core/half.h"
#include "kernel_test_support.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

struct NormCase {
  uint32_t n, rows, workgroup;
  bool residual, weighted;
};

std::vector<float> random_values(size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (float& x : v) x = random_value(rng);
  return v;
}

struct GpuResult {
  std::vector<uint8_t> q;     // [rows][n] int8
  std::vector<float> d;       // [rows][n / 32]
  std::vector<float> residual;
};

GpuResult run_on_gpu(GpuContext& gpu, const NormCase& c, const std::vector<float>& x, const std::vector<float>& weight,
                     const std::vector<float>& residual, const std::vector<float>& next_weight, float eps,
                     float out_scale) {
  const uint64_t values = uint64_t{c.rows} * c.n;
  const auto upload = [&](const std::vector<float>& v) {
    auto buffer = std::make_unique<Buffer>(gpu.device, std::max<uint64_t>(4, v.size() * 4), MemoryUse::kDevice);
    if (!v.empty()) gpu.transfer.upload(*buffer, 0, v.data(), v.size() * 4);
    return buffer;
  };
  const auto x_buffer = upload(x), weight_buffer = upload(weight), residual_buffer = upload(residual),
             next_buffer = upload(next_weight);
  Buffer q(gpu.device, values, MemoryUse::kDevice), d(gpu.device, values / 32 * 4, MemoryUse::kDevice);
  const NormQuantizePush push{x_buffer->address(),
                              c.weighted ? weight_buffer->address() : 0,
                              c.residual ? residual_buffer->address() : 0,
                              c.residual && c.weighted ? next_buffer->address() : 0,
                              q.address(),
                              d.address(),
                              c.n,
                              eps,
                              out_scale,
                              c.rows};
  const uint32_t spec[] = {c.workgroup, c.workgroup / gpu.device.info().min_subgroup_size,
                           (c.n + c.workgroup - 1) / c.workgroup};
  CommandSequence seq(gpu.device);
  seq.begin();
  seq.fill(q, 0, values, kPoison);
  seq.fill(d, 0, values / 32 * 4, kPoison);
  seq.barrier();
  seq.dispatch_groups(gpu.pipelines.get("norm_quantize", spec), push, c.rows);
  seq.end();
  seq.run();
  GpuResult out{std::vector<uint8_t>(values), std::vector<float>(values / 32), std::vector<float>(residual.size())};
  gpu.transfer.download(q, 0, out.q.data(), out.q.size());
  gpu.transfer.download(d, 0, out.d.data(), out.d.size() * 4);
  if (c.residual) gpu.transfer.download(*residual_buffer, 0, out.residual.data(), out.residual.size() * 4);
  return out;
}

class VulkanNormQuantize : public ::testing::TestWithParam<NormCase> {};

TEST_P(VulkanNormQuantize, MatchesTheCpuBitForBit) {
  CHANNEL_GPU_CONTEXT(gpu);
  const NormCase c = GetParam();
  if (c.workgroup > gpu->device.info().max_workgroup_invocations) GTEST_SKIP() << "workgroup too large here";
  std::mt19937 rng(c.n * 31 + c.rows * 7 + c.workgroup + (c.residual ? 1 : 0));
  const float eps = 1e-6f, out_scale = c.residual ? 0.75f : 1.0f;
  const std::vector<float> x = random_values(size_t{c.rows} * c.n, rng);
  const std::vector<float> weight = random_values(c.n, rng), next_weight = random_values(c.n, rng);
  std::vector<float> residual = c.residual ? random_values(size_t{c.rows} * c.n, rng) : std::vector<float>{};
  const GpuResult got = run_on_gpu(*gpu, c, x, weight, residual, next_weight, eps, out_scale);

  const std::span<const float> w = c.weighted ? std::span<const float>(weight) : std::span<const float>();
  const std::span<const float> next = c.weighted ? std::span<const float>(next_weight) : std::span<const float>();
  int failures = 0;
  for (uint32_t r = 0; r < c.rows && failures < 10; ++r) {
    std::vector<float> normed(c.n);
    cpu::rms_norm(x.data() + size_t{r} * c.n, normed.data(), c.n, eps, w);
    if (c.residual) {
      float* res = residual.data() + size_t{r} * c.n;
      for (uint32_t i = 0; i < c.n; ++i) res[i] = (res[i] + normed[i]) * out_scale;
      for (uint32_t i = 0; i < c.n && failures < 10; ++i) {
        if (bits(got.residual[size_t{r} * c.n + i]) != bits(res[i])) {
          ADD_FAILURE() << "row " << r << " residual " << i << ": " << got.residual[size_t{r} * c.n + i] << " vs CPU "
                        << res[i];
          ++failures;
        }
      }
      cpu::rms_norm(res, normed.data(), c.n, eps, next);
    }
    std::vector<BlockQ8_0> want(c.n / 32);
    cpu::quantize_row_q8_0_reference(normed.data(), c.n, want.data());
    for (uint32_t b = 0; b < c.n / 32 && failures < 10; ++b) {
      const size_t block = size_t{r} * (c.n / 32) + b;
      if (bits(got.d[block]) != bits(f16_to_f32(want[b].d))) {
        ADD_FAILURE() << "row " << r << " block " << b << ": scale " << got.d[block] << " vs CPU "
                      << f16_to_f32(want[b].d);
        ++failures;
      }
      for (int i = 0; i < 32; ++i) {
        const auto q = static_cast<int8_t>(got.q[block * 32 + i]);
        if (q != want[b].qs[i]) {
          ADD_FAILURE() << "row " << r << " block " << b << " value " << i << ": " << int{q} << " vs CPU "
                        << int{want[b].qs[i]};
          ++failures;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, VulkanNormQuantize,
                         ::testing::Values(NormCase{32, 1, 256, false, true}, NormCase{192, 3, 256, false, true},
                                           NormCase{192, 2, 256, true, true}, NormCase{1152, 1, 256, true, false},
                                           NormCase{3840, 2, 256, true, true}, NormCase{3840, 1, 512, true, true},
                                           NormCase{5376, 2, 256, true, true}, NormCase{2560, 3, 1024, false, true},
                                           NormCase{2560, 1, 1024, true, true}, NormCase{96, 4, 512, true, true}),
                         [](const ::testing::TestParamInfo<NormCase>& info) {
                           const NormCase& c = info.param;
                           // fmt::format: GCC 12 gives a false -Wrestrict on std::string + const char*.
                           return fmt::format("n{}_rows{}_wg{}{}{}", c.n, c.rows, c.workgroup,
                                              c.residual ? "_residual" : "", c.weighted ? "_weighted" : "");
                         });

}  // namespace
}  // namespace channel::vulkan
