// The gated matrix-vector kernel (matvec_q.comp with GATED_OUTPUT: gate and up products, GEGLU
// and the down product's Q8_0 input in one dispatch) against
//   - the same steps as separate dispatches on the device (record_matmul of each matrix, then
//     geglu_quantize.comp), bit for bit: the fusion must not change one quant or scale;
//   - the CPU backend (cpu::matmul of each matrix, cpu::geglu, the Q8_0 quantization), within one
//     quantization step per value: the two backends add a row's block sums in different orders.
// Q4_0 and Q8_0, with and without integer dot instructions, the default matrix-vector shape and
// an odd one (1 row a subgroup, 3 blocks in flight), workgroups of several subgroups and of one
// (variants() below); FFN widths of one and several 32-row blocks, rows of 2 to 120 blocks, 1 to
// 16 tokens. Every output block is written (poison first), none past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "backend/cpu/activation_quant.h"
#include "backend/cpu/geglu.h"
#include "backend/vulkan/shader_push.h"
#include "core/half.h"
#include "kernel_test_support.h"
#include "model/gelu_table.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

struct Shape {
  int64_t n_ff;  // rows of gate and up: the gated values per token
  int64_t cols;
  int64_t max_tokens = 16;
};
// The parity tests' small models (256 x 128), and Gemma 3 12B's width with up to 2 tokens only:
// lavapipe runs it slowly.
constexpr Shape kShapes[] = {{32, 64}, {256, 128}, {96, 1152}, {160, 3840, 2}};
constexpr int64_t kTokenCounts[] = {1, 2, 7, 16};

// The gated output of one token count: Q8_0 values [n_tokens][n_ff] and scales [n_tokens][n_ff / 32].
struct GatedOutput {
  std::vector<uint8_t> q;
  std::vector<float> d;
};

struct Case {
  const TestMatrix& gate;
  const TestMatrix& up;
  std::span<const float> x;
  int64_t n_tokens;
};

// Runs `record` (which writes the output's quants and scales) on the device with uploaded
// matrices, activations and GELU table; the outputs are poisoned first, with one block beyond
// the end of each.
template <class Record>
GatedOutput run_on_device(GpuContext& gpu, MatmulKernels& kernels, const Case& c, Record record) {
  const WeightMatrix& gate = c.gate.w;
  const int64_t n_values = c.n_tokens * gate.rows;
  Buffer weights(gpu.device, 2 * device_matrix_bytes(gate.type, gate.rows, gate.cols) + 64, MemoryUse::kDevice);
  Buffer input(gpu.device, c.x.size_bytes(), MemoryUse::kDevice);
  Buffer scratch(gpu.device, MatmulKernels::scratch_bytes(gate.type, c.n_tokens, gate.cols), MemoryUse::kDevice);
  Buffer sums(gpu.device, static_cast<uint64_t>(2 * n_values) * 4, MemoryUse::kDevice);
  Buffer q(gpu.device, static_cast<uint64_t>(n_values) + 32, MemoryUse::kDevice);
  Buffer d(gpu.device, static_cast<uint64_t>(n_values / kQuantBlock + 1) * 4, MemoryUse::kDevice);
  const std::array<uint16_t, 65536>& table = gelu_f16_table();
  Buffer gelu(gpu.device, sizeof(table), MemoryUse::kDevice);
  gpu.transfer.upload(input, 0, c.x.data(), c.x.size_bytes());
  gpu.transfer.upload(gelu, 0, table.data(), sizeof(table));
  const DeviceMatrix gate_matrix = upload_matrix(gpu.transfer, weights, 0, gate);
  const DeviceMatrix up_matrix =
      upload_matrix(gpu.transfer, weights, (device_matrix_bytes(gate.type, gate.rows, gate.cols) + 63) / 64 * 64, c.up.w);

  CommandSequence seq(gpu.device);
  seq.begin();
  seq.fill(q, 0, q.size(), kPoison);
  seq.fill(d, 0, d.size(), kPoison);
  const PreparedActivations x =
      kernels.record_prepare(seq, gate.type, input.address(), c.n_tokens, gate.cols, gate.cols, scratch.address());
  seq.barrier();
  PreparedActivations out;
  out.weight_type = gate.type;
  out.n_tokens = c.n_tokens;
  out.cols = out.stride = gate.rows;
  out.values = q.address();
  out.scales = d.address();
  record(seq, gate_matrix, up_matrix, x, sums, gelu.address(), out);
  seq.end();
  seq.run();
  GatedOutput result{std::vector<uint8_t>(q.size()), std::vector<float>(d.size() / 4)};
  gpu.transfer.download(q, 0, result.q.data(), q.size());
  gpu.transfer.download(d, 0, result.d.data(), d.size());
  return result;
}

GatedOutput run_fused(GpuContext& gpu, MatmulKernels& kernels, const Case& c) {
  return run_on_device(gpu, kernels, c,
                       [&](CommandSequence& seq, const DeviceMatrix& gate, const DeviceMatrix& up,
                           const PreparedActivations& x, const Buffer&, VkDeviceAddress gelu,
                           const PreparedActivations& out) {
                         EXPECT_TRUE(kernels.gated_matvec_applies(gate, up, out.weight_type, x));
                         kernels.record_gated_matvec(seq, gate, up, x, gelu, out);
                       });
}

// The unfused steps of the backend: each product by the matrix-vector kernel, then geglu_quantize.comp.
GatedOutput run_separately(GpuContext& gpu, MatmulKernels& kernels, const Case& c) {
  return run_on_device(
      gpu, kernels, c,
      [&](CommandSequence& seq, const DeviceMatrix& gate, const DeviceMatrix& up, const PreparedActivations& x,
          const Buffer& sums, VkDeviceAddress gelu, const PreparedActivations& out) {
        const uint64_t n = static_cast<uint64_t>(c.n_tokens * gate.rows);
        kernels.record_matmul(seq, gate, x, sums.address(), gate.rows, MatmulKernel::kMatvec);
        kernels.record_matmul(seq, up, x, sums.address() + n * 4, up.rows, MatmulKernel::kMatvec);
        seq.barrier();
        const GegluQuantizePush push{sums.address(), sums.address() + n * 4, out.values, out.scales, gelu,
                                     static_cast<uint32_t>(n), 0};
        seq.dispatch_groups(gpu.pipelines.get("geglu_quantize"), push, (n + 255) / 256);
      });
}

GatedOutput run_cpu(const Case& c) {
  const int64_t n = c.n_tokens * c.gate.w.rows;
  const std::vector<float> gate = run_cpu_matmul(c.gate.w, c.x, c.n_tokens);
  const std::vector<float> up = run_cpu_matmul(c.up.w, c.x, c.n_tokens);
  std::vector<float> gated(n);
  cpu::geglu(gate.data(), up.data(), gated.data(), n);
  std::vector<BlockQ8_0> blocks(n / kQuantBlock);
  cpu::quantize_row_q8_0_reference(gated.data(), n, blocks.data());
  GatedOutput out{std::vector<uint8_t>(n), std::vector<float>(n / kQuantBlock)};
  for (int64_t b = 0; b < n / kQuantBlock; ++b) {
    out.d[b] = f16_to_f32(blocks[b].d);
    std::memcpy(out.q.data() + b * kQuantBlock, blocks[b].qs, kQuantBlock);
  }
  return out;
}

float dequantized(const GatedOutput& o, int64_t i) { return o.d[i / kQuantBlock] * static_cast<int8_t>(o.q[i]); }

void expect_poison_past(const GatedOutput& got, int64_t n) {
  uint32_t quants, scale;
  std::memcpy(&quants, got.q.data() + n, 4);
  std::memcpy(&scale, got.d.data() + n / kQuantBlock, 4);
  EXPECT_EQ(quants, kPoison) << "quants written past the end";
  EXPECT_EQ(scale, kPoison) << "a scale written past the end";
}

// Random activations scaled by a power of two so that the gate products have an RMS near 4: GELU
// then sees its negative tail, its curve and its linear part, and the gated values stay far
// below where a Q8_0 scale overflows f16 (random_matrix's weights reach 2^6 x 127).
std::vector<float> activations_for(const WeightMatrix& gate, int64_t n_tokens, std::mt19937& rng) {
  std::vector<float> x = random_activations(n_tokens * gate.cols, rng);
  const std::vector<float> products = run_cpu_matmul(gate, x, n_tokens);
  double squares = 0.0;
  for (const float v : products) squares += static_cast<double>(v) * v;
  const double rms = std::sqrt(squares / static_cast<double>(products.size()));
  const float factor = std::exp2(std::round(std::log2(4.0 / rms)));
  for (float& v : x) v *= factor;
  return x;
}

struct Variant {
  bool integer_dot;
  bool odd_shape;      // 1 row a subgroup and 3 blocks in flight (not 2 and 2)
  uint32_t subgroups;  // threads per workgroup in subgroups; 0: the default (256 threads)
};

// The default workgroup (256 threads) where the device is a GPU (lavapipe, which pays per
// invocation, runs its own one subgroup wide); 16 subgroups and 1 (then fewer threads than a
// block's 32 values) everywhere.
std::vector<Variant> variants(const Device& device) {
  std::vector<Variant> out;
  if (device.info().type != DeviceType::kCpu) out.push_back({false, false, 0});
  for (const bool dot : {false, true}) {
    if (dot && !device.integer_dot_enabled()) continue;
    out.push_back({dot, false, 16});
    out.push_back({dot, true, 16});
    out.push_back({dot, false, 1});
  }
  return out;
}

MatmulKernels::Options options_of(const Variant& v, const Device& device) {
  MatmulKernels::Options options{.integer_dot = v.integer_dot ? IntegerDot::kOn : IntegerDot::kOff};
  options.matvec_max_tokens = 16;
  if (v.odd_shape) {
    options.matvec_subgroup_rows = 1;
    options.matvec_q_blocks = 3;
  }
  const uint32_t subgroup = std::max(1u, device.info().subgroup_size);
  if (v.subgroups != 0) options.gated_workgroup = v.subgroups * subgroup;
  return options;
}

class VulkanGatedMatvec : public ::testing::TestWithParam<GgmlType> {};

INSTANTIATE_TEST_SUITE_P(QuantizedTypes, VulkanGatedMatvec, ::testing::Values(GgmlType::Q8_0, GgmlType::Q4_0),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(ggml_type_traits(info.param).name);
                         });

TEST_P(VulkanGatedMatvec, EqualsTheSeparateStepsAndIsCloseToTheCpu) {
  CHANNEL_GPU_CONTEXT(gpu);
  const GgmlType type = GetParam();
  std::mt19937 rng(77 + static_cast<uint32_t>(type));
  int64_t cpu_identical = 0, cpu_total = 0;
  for (const Shape& shape : kShapes) {
    const TestMatrix gate = random_matrix(type, shape.n_ff, shape.cols, rng);
    const TestMatrix up = random_matrix(type, shape.n_ff, shape.cols, rng);
    for (const int64_t n_tokens : kTokenCounts) {
      if (n_tokens > shape.max_tokens) continue;
      const std::vector<float> x = activations_for(gate.w, n_tokens, rng);
      const Case c{gate, up, x, n_tokens};
      const GatedOutput cpu = run_cpu(c);
      const int64_t n = n_tokens * shape.n_ff;
      for (const Variant& v : variants(gpu->device)) {
        SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << " " << shape.n_ff << "x" << shape.cols
                                          << ", " << n_tokens << " tokens, dot " << v.integer_dot << ", odd shape "
                                          << v.odd_shape << ", subgroups " << v.subgroups);
        MatmulKernels kernels(gpu->device, gpu->pipelines, options_of(v, gpu->device));
        const GatedOutput fused = run_fused(*gpu, kernels, c);
        const GatedOutput separate = run_separately(*gpu, kernels, c);
        int failures = 0;
        for (int64_t b = 0; b < n / kQuantBlock && failures < 5; ++b) {
          if (bits(fused.d[b]) != bits(separate.d[b])) {
            ADD_FAILURE() << "block " << b << ": scale " << fused.d[b] << " vs separate steps' " << separate.d[b];
            ++failures;
          }
        }
        for (int64_t i = 0; i < n && failures < 5; ++i) {
          if (fused.q[i] != separate.q[i]) {
            ADD_FAILURE() << "value " << i << ": " << int{static_cast<int8_t>(fused.q[i])} << " vs separate steps' "
                          << int{static_cast<int8_t>(separate.q[i])};
            ++failures;
          }
        }
        expect_poison_past(fused, n);
        // Against the CPU: one step of either block's scale.
        for (int64_t i = 0; i < n && failures < 5; ++i) {
          const float got = dequantized(fused, i), want = dequantized(cpu, i);
          const float step = std::max(fused.d[i / kQuantBlock], cpu.d[i / kQuantBlock]);
          cpu_identical += got == want;
          ++cpu_total;
          if (!(std::fabs(got - want) <= step)) {
            ADD_FAILURE() << "value " << i << ": " << got << " vs CPU " << want << " (step " << step << ")";
            ++failures;
          }
        }
      }
    }
  }
  std::printf("[ %-4s ] gated values equal to the CPU's: %.2f%%\n", ggml_type_traits(type).name.data(),
              100.0 * static_cast<double>(cpu_identical) / static_cast<double>(cpu_total));
}

// Where the fused kernel does not apply, the backend keeps the separate steps.
TEST(VulkanGatedMatvec, AppliesOnlyToQuantizedFfnsOfFewTokens) {
  CHANNEL_GPU_CONTEXT(gpu);
  MatmulKernels::Options options;
  options.matvec_max_tokens = 8;
  MatmulKernels kernels(gpu->device, gpu->pipelines, options);
  std::mt19937 rng(5);
  const TestMatrix q4 = random_matrix(GgmlType::Q4_0, 64, 64, rng), q8 = random_matrix(GgmlType::Q8_0, 64, 64, rng);
  const TestMatrix f16 = random_matrix(GgmlType::F16, 64, 64, rng), odd = random_matrix(GgmlType::Q4_0, 48, 64, rng);
  const auto matrix = [](const TestMatrix& m) {
    DeviceMatrix d;
    d.type = m.w.type;
    d.rows = m.w.rows;
    d.cols = m.w.cols;
    return d;
  };
  const auto activations = [](GgmlType type, int64_t n_tokens) {
    PreparedActivations x;
    x.weight_type = type;
    x.n_tokens = n_tokens;
    x.cols = 64;
    return x;
  };
  const PreparedActivations one = activations(GgmlType::Q4_0, 1);
  EXPECT_TRUE(kernels.gated_matvec_applies(matrix(q4), matrix(q4), GgmlType::Q8_0, one));
  EXPECT_TRUE(kernels.gated_matvec_applies(matrix(q4), matrix(q4), GgmlType::Q4_0, activations(GgmlType::Q4_0, 8)));
  EXPECT_FALSE(kernels.gated_matvec_applies(matrix(q4), matrix(q4), GgmlType::Q4_0, activations(GgmlType::Q4_0, 9)));
  EXPECT_FALSE(kernels.gated_matvec_applies(matrix(q4), matrix(q8), GgmlType::Q4_0, one));    // types differ
  EXPECT_FALSE(kernels.gated_matvec_applies(matrix(q4), matrix(q4), GgmlType::F16, one));     // float down
  EXPECT_FALSE(kernels.gated_matvec_applies(matrix(f16), matrix(f16), GgmlType::Q4_0, one));  // float gate/up
  EXPECT_FALSE(kernels.gated_matvec_applies(matrix(odd), matrix(odd), GgmlType::Q4_0, one));  // not 32-row blocks
}

}  // namespace
}  // namespace channel::vulkan
