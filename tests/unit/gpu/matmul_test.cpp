// The Vulkan matrix kernels against the CPU backend's matmul (backend/cpu/matmul.h), for every
// weight type, kernel (matrix-vector and tiled, each forced over all token counts) and, for
// Q4_0 / Q8_0, two matrix-vector shapes and all with and without integer dot product
// instructions, and the cooperative-matrix kernel (bit-identical to the tiled one) where the
// device has int8 cooperative matrices.
//
// Thresholds. Both backends form the same terms: Q4_0 / Q8_0 block sums are exact integers and
// the activations are quantized bit-identically (activation_prep_test.cpp), F16 / BF16 products
// are exact in f32 from identically rounded activations. Only the order of the f32 additions
// differs, so each output is within 2 (n + 8) u sum|terms| of the CPU's (n terms, u = 2^-24,
// the bound tests/unit/cpu/matmul_test.cpp uses between its kernels): asserted per element.
// Over all outputs the rounding errors of the two orders add up like a random walk: a relative
// L2 difference of order u sqrt(n), asserted below 4 u sqrt(n). Measured on lavapipe: up to
// 0.83 u sqrt(n) for the float types and 1.5 u sqrt(n) for Q4_0 / Q8_0 (n counts blocks, but the
// CPU's 8-lane order adds 8 partial sums per block). For Gemma widths the bound is 2.6e-6 for
// Q4_0 / Q8_0 (120 blocks at 3840 columns) and 1.5e-5 for the float types (3840 terms).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernel_test_support.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

struct Shape {
  int64_t rows;
  int64_t cols;
  int64_t max_tokens = 1 << 20;
};
// Rows not a multiple of the matrix-vector workgroups' rows (67, 3, 33, 5) or of the tiled
// kernel's 64 (all but 64); columns of one block up to 80 blocks (2560, Gemma 3 4B's width), 120
// (3840, Gemma 3 12B's) and 1280 (40960: many blocks per subgroup lane; with few tokens only,
// since lavapipe runs the tiled kernel's 3 workgroups of that shape on 3 threads). Block counts
// below, at and above a subgroup's lanes and its pairs of blocks (1, 2, 3, 36, 80, 120, 1280).
constexpr Shape kShapes[] = {{67, 32}, {130, 64}, {3, 96}, {67, 1152}, {33, 2560}, {64, 3840}, {5, 40960, 7}};
// Float types also take rows whose length is not a whole number of 16-byte loads (90: not for
// f32 either; 36: for f32 only), which matvec.comp reads a value at a time.
constexpr Shape kFloatShapes[] = {{11, 90}, {7, 36}};

std::vector<Shape> shapes_for(GgmlType type) {
  std::vector<Shape> shapes(std::begin(kShapes), std::end(kShapes));
  if (!is_quantized(type)) shapes.insert(shapes.end(), std::begin(kFloatShapes), std::end(kFloatShapes));
  return shapes;
}
// One token (decode), small batches (matrix-vector token blocks of 2 and 8 with one unused),
// whole and partial 64-token tiles.
constexpr int64_t kTokenCounts[] = {1, 2, 7, 64, 130};
constexpr int64_t kOutputGap = 3;  // out_stride = rows + 3: the gap must keep its poison

// Relative L2 difference allowed for outputs of `cols` columns (see the top).
double threshold(GgmlType type, int64_t cols) {
  const double n_terms = static_cast<double>(is_quantized(type) ? cols / kQuantBlock : cols);
  return 4.0 * kUnitRoundoff * std::sqrt(n_terms);
}

struct Variant {
  MatmulKernel kernel;
  // Not the default shape: Q4_0 / Q8_0 kMatvec 3 rows per workgroup, 1 per subgroup, 3 blocks per
  // lane in flight and teams of 4 subgroups on a row, which leaves a part step wherever a row's
  // blocks are not a multiple of 3 teams' worth and, depending on the subgroup size, teams without
  // a row or a workgroup of one team making three passes (not 8, 2, the default and 1);
  // kTiled 8 rows per thread (128-row tiles) and 3 blocks per step, which leaves a part step
  // wherever a row's blocks are not a multiple of 3 (not 4 rows and 2 blocks); kCooperative 3
  // blocks per step (not 4), which leaves a part step where a row's blocks are not a multiple of 3
  // and, with 128-row tiles, threads with no block to stage.
  bool odd_shape;
  bool integer_dot;
  std::string name() const {
    const char* kernel_name = kernel == MatmulKernel::kMatvec ? (odd_shape ? "matvec3x1" : "matvec")
                              : kernel == MatmulKernel::kTiled ? (odd_shape ? "tiled8x3" : "tiled")
                                                               : (odd_shape ? "coop3" : "coop");
    return std::string(kernel_name) + (integer_dot ? "+dot" : "");
  }
  // Where the matrix starts in its buffer: not at the buffer's start, and only as aligned as the
  // layout needs (split blocks 16 bytes, f16 / bf16 rows 2, f32 rows 4).
  static uint64_t weight_offset(GgmlType type) { return is_quantized(type) ? 48 : type == GgmlType::F32 ? 4 : 2; }
};

std::vector<Variant> variants(GgmlType type, const Device& device) {
  std::vector<Variant> out;
  for (const bool dot : {false, true}) {
    if (dot && !(is_quantized(type) && device.integer_dot_enabled())) continue;
    out.push_back({MatmulKernel::kMatvec, false, dot});
    if (is_quantized(type)) out.push_back({MatmulKernel::kMatvec, true, dot});
    out.push_back({MatmulKernel::kTiled, false, dot});
    out.push_back({MatmulKernel::kTiled, true, dot});
    // On the matrix units where the device has them (not lavapipe); integer dot instructions
    // play no part there.
    if (!dot && is_quantized(type) && device.int8_matrix_n() != 0) {
      out.push_back({MatmulKernel::kCooperative, false, false});
      out.push_back({MatmulKernel::kCooperative, true, false});
    }
  }
  return out;
}

MatmulKernels::Options options_of(const Variant& v) {
  MatmulKernels::Options options{.integer_dot = v.integer_dot ? IntegerDot::kOn : IntegerDot::kOff};
  if (v.odd_shape) {
    options.matvec_q_rows = 3;
    options.matvec_subgroup_rows = 1;
    options.matvec_q_blocks = 3;
    options.matvec_split = 4;
    options.tiled_rows_per_thread = 8;
    options.tiled_k_blocks = 3;
    options.cooperative_k_blocks = 3;
    options.cooperative_small_batch_tokens = 0;  // the large batches' 128-row tiles at every token count
  }
  return options;
}

class VulkanMatmul : public ::testing::TestWithParam<GgmlType> {};

INSTANTIATE_TEST_SUITE_P(AllTypes, VulkanMatmul,
                         ::testing::Values(GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0,
                                           GgmlType::Q4_0),
                         [](const ::testing::TestParamInfo<GgmlType>& info) {
                           return std::string(ggml_type_traits(info.param).name);
                         });

TEST_P(VulkanMatmul, MatchesCpuBackend) {
  CHANNEL_GPU_CONTEXT(gpu);
  const GgmlType type = GetParam();
  std::map<std::pair<bool, bool>, std::unique_ptr<MatmulKernels>> kernels;  // by (odd shape, integer dot)
  for (const Variant& v : variants(type, gpu->device)) {
    auto& k = kernels[{v.odd_shape, v.integer_dot}];
    if (!k) k = std::make_unique<MatmulKernels>(gpu->device, gpu->pipelines, options_of(v));
  }
  std::map<std::string, double> worst, worst_scaled;
  std::map<std::string, int64_t> identical, total;
  std::mt19937 rng(1234 + static_cast<uint32_t>(type));
  for (const Shape& shape : shapes_for(type)) {
    const TestMatrix m = random_matrix(type, shape.rows, shape.cols, rng);
    for (const int64_t n_tokens : kTokenCounts) {
      if (n_tokens > shape.max_tokens) continue;
      const std::vector<float> x = random_activations(n_tokens * shape.cols, rng);
      const std::vector<float> want = run_cpu_matmul(m.w, x, n_tokens);
      const int64_t n_terms = is_quantized(type) ? shape.cols / kQuantBlock : shape.cols;
      std::vector<double> tolerance(n_tokens * shape.rows);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t r = 0; r < shape.rows; ++r) {
          tolerance[t * shape.rows + r] =
              2.0 * (n_terms + 8) * kUnitRoundoff * absolute_terms(m.w, r, x.data() + t * shape.cols);
        }
      }
      std::vector<float> tiled;  // the default tiled kernel's outputs, which kCooperative repeats bit for bit
      for (const Variant& v : variants(type, gpu->device)) {
        SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << " " << shape.rows << "x" << shape.cols
                                          << ", " << n_tokens << " tokens, " << v.name());
        const int64_t stride = shape.rows + kOutputGap;
        const std::vector<float> got = run_gpu_matmul(*gpu, *kernels[{v.odd_shape, v.integer_dot}], m.w, x, n_tokens,
                                                      v.kernel, stride, nullptr, Variant::weight_offset(type));
        int failures = 0;
        if (v.kernel == MatmulKernel::kTiled && !v.odd_shape && !v.integer_dot) tiled = got;
        if (v.kernel == MatmulKernel::kCooperative) {
          ASSERT_EQ(got.size(), tiled.size());
          for (size_t i = 0; i < got.size(); ++i) {
            if (bits(got[i]) != bits(tiled[i]) && failures++ < 5) {
              ADD_FAILURE() << "output " << i << ": " << got[i] << " vs the tiled kernel's " << tiled[i];
            }
          }
        }
        for (int64_t t = 0; t < n_tokens; ++t) {
          for (int64_t r = 0; r < shape.rows; ++r) {
            const float g = got[t * stride + r], w = want[t * shape.rows + r];
            identical[v.name()] += bits(g) == bits(w);
            ++total[v.name()];
            const double allowed = tolerance[t * shape.rows + r];
            if (!(std::fabs(g - w) <= allowed) && failures++ < 5) {
              ADD_FAILURE() << "token " << t << " row " << r << ": " << g << " vs CPU " << w << " (tolerance "
                            << allowed << ")";
            }
          }
          for (int64_t r = shape.rows; r < stride; ++r) {
            if (bits(got[t * stride + r]) != kPoison && failures++ < 5) ADD_FAILURE() << "wrote the gap at row " << r;
          }
        }
        const double rel = relative_l2(got, stride, want, shape.rows, n_tokens);
        EXPECT_LE(rel, threshold(type, shape.cols));
        worst[v.name()] = std::max(worst[v.name()], rel);
        worst_scaled[v.name()] = std::max(worst_scaled[v.name()], rel / (kUnitRoundoff * std::sqrt(n_terms)));
      }
    }
  }
  for (const auto& [name, rel] : worst) {
    std::printf("[ %-4s %-11s ] rel L2 vs CPU: max %.2e (%.2f u sqrt(n)); bit-identical outputs %5.1f%%\n",
                ggml_type_traits(type).name.data(), name.c_str(), rel, worst_scaled[name],
                100.0 * identical[name] / total[name]);
    RecordProperty(std::string(ggml_type_traits(type).name) + "_" + name + "_max_rel_l2", std::to_string(rel));
  }
}

// Probe candidates: only the given rows (repeats, first, last), equal to the full product's rows
// bit for bit (each output is computed alone) and close to the CPU's matmul_rows; ids outside
// the matrix give NaN, not a fault.
TEST_P(VulkanMatmul, RowSubsetMatchesFullProductAndCpu) {
  CHANNEL_GPU_CONTEXT(gpu);
  const GgmlType type = GetParam();
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  std::mt19937 rng(99);
  const TestMatrix m = random_matrix(type, 300, 256, rng);
  const std::vector<int32_t> rows = {299, 0, 17, 17, 128, 5};
  std::vector<MatmulKernel> kinds = {MatmulKernel::kMatvec, MatmulKernel::kTiled};
  if (is_quantized(type) && kernels.has_cooperative()) kinds.push_back(MatmulKernel::kCooperative);
  for (const int64_t n_tokens : {int64_t{1}, int64_t{3}, int64_t{70}}) {
    const std::vector<float> x = random_activations(n_tokens * 256, rng);
    const std::vector<float> want = run_cpu_matmul(m.w, x, n_tokens, &rows);
    for (const MatmulKernel kernel : kinds) {
      const Variant variant{kernel, false, false};
      SCOPED_TRACE(::testing::Message() << n_tokens << " tokens, kernel " << variant.name());
      const std::vector<float> full = run_gpu_matmul(*gpu, kernels, m.w, x, n_tokens, kernel, 300);
      const std::vector<float> got = run_gpu_matmul(*gpu, kernels, m.w, x, n_tokens, kernel, 6, &rows);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(bits(got[t * 6 + i]), bits(full[t * 300 + rows[i]]));
      }
      EXPECT_LE(relative_l2(got, 6, want, 6, n_tokens), threshold(type, 256));
    }
  }
  const std::vector<int32_t> bad = {3, -1, 300, 4};
  const std::vector<float> x = random_activations(2 * 256, rng);
  for (const MatmulKernel kernel : kinds) {
    const std::vector<float> got = run_gpu_matmul(*gpu, kernels, m.w, x, 2, kernel, 4, &bad);
    for (int64_t t = 0; t < 2; ++t) {
      EXPECT_FALSE(std::isnan(got[t * 4 + 0]));
      EXPECT_TRUE(std::isnan(got[t * 4 + 1]) && bits(got[t * 4 + 1]) != kPoison);
      EXPECT_TRUE(std::isnan(got[t * 4 + 2]) && bits(got[t * 4 + 2]) != kPoison);
      EXPECT_FALSE(std::isnan(got[t * 4 + 3]));
    }
  }
}

// Matrices stacked into one (the Q, K and V projections' single product): its rows are the
// parts' rows in order, bit for bit what each part's own product gives, and matrix_rows hands each
// part back (also the split blocks' scales, which lie after all the quants).
TEST_P(VulkanMatmul, StackedMatricesMatchTheirParts) {
  CHANNEL_GPU_CONTEXT(gpu);
  const GgmlType type = GetParam();
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  std::mt19937 rng(7);
  const int64_t cols = 256, part_rows[] = {67, 33, 5}, total = 105;
  std::vector<TestMatrix> parts;
  for (const int64_t rows : part_rows) parts.push_back(random_matrix(type, rows, cols, rng));
  const WeightMatrix* stacked_parts[] = {&parts[0].w, &parts[1].w, &parts[2].w};
  const uint64_t offset = Variant::weight_offset(type);
  Buffer weights(gpu->device, offset + device_matrix_bytes(type, total, cols), MemoryUse::kDevice);
  const DeviceMatrix stacked = upload_stacked_matrices(gpu->transfer, weights, offset, stacked_parts);
  ASSERT_EQ(stacked.rows, total);
  for (const int64_t n_tokens : {int64_t{1}, int64_t{7}, int64_t{70}}) {
    const std::vector<float> x = random_activations(n_tokens * cols, rng);
    const std::vector<float> all = run_gpu_product(*gpu, kernels, stacked, x, n_tokens, MatmulKernel::kAuto, total);
    int64_t first = 0;
    for (size_t p = 0; p < parts.size(); ++p) {
      SCOPED_TRACE(::testing::Message() << n_tokens << " tokens, part " << p);
      const int64_t rows = part_rows[p];
      const std::vector<float> alone = run_gpu_matmul(*gpu, kernels, parts[p].w, x, n_tokens, MatmulKernel::kAuto, rows);
      const std::vector<float> view = run_gpu_product(*gpu, kernels, matrix_rows(stacked, first, rows), x, n_tokens,
                                                      MatmulKernel::kAuto, rows);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t i = 0; i < rows; ++i) {
          ASSERT_EQ(bits(all[t * total + first + i]), bits(alone[t * rows + i])) << "token " << t << " row " << i;
          ASSERT_EQ(bits(view[t * rows + i]), bits(alone[t * rows + i])) << "token " << t << " row " << i;
        }
      }
      EXPECT_LE(relative_l2(alone, rows, run_cpu_matmul(parts[p].w, x, n_tokens), rows, n_tokens),
                threshold(type, cols));
      first += rows;
    }
  }
}

// A weight tensor larger than maxStorageBufferRange (128 MiB on lavapipe): no descriptor limits
// apply to buffer addresses, so it is one buffer and one dispatch.
TEST(VulkanMatmulLimits, WeightsBeyondMaxStorageBufferRange) {
  CHANNEL_GPU_CONTEXT(gpu);
  const int64_t cols = 2048;
  const int64_t range_rows = static_cast<int64_t>(gpu->device.info().max_storage_buffer_range / (cols * 4));
  const int64_t rows = range_rows + 600;
  if (static_cast<uint64_t>(rows) * cols * 4 > gpu->device.info().max_memory_allocation_size) {
    GTEST_SKIP() << "maxStorageBufferRange is close to maxMemoryAllocationSize here";
  }
  std::mt19937 rng(5);
  const TestMatrix m = random_matrix(GgmlType::F32, rows, cols, rng);
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  for (const int64_t n_tokens : {int64_t{1}, int64_t{3}}) {
    const std::vector<float> x = random_activations(n_tokens * cols, rng);
    const std::vector<float> want = run_cpu_matmul(m.w, x, n_tokens);
    const std::vector<float> got = run_gpu_matmul(*gpu, kernels, m.w, x, n_tokens, MatmulKernel::kAuto, rows);
    EXPECT_LE(relative_l2(got, rows, want, rows, n_tokens), threshold(GgmlType::F32, cols));
    // The rows past the first 128 MiB in particular.
    const std::span<const float> tail_got(got.data() + range_rows, rows - range_rows);
    const std::span<const float> tail_want(want.data() + range_rows, rows - range_rows);
    EXPECT_LE(relative_l2(tail_got, rows, tail_want, rows - range_rows, 1), threshold(GgmlType::F32, cols));
  }
}

// More matrix-vector workgroups than maxComputeWorkGroupCount[0] (65535): a vocabulary-sized
// output is folded into a second grid dimension.
TEST(VulkanMatmulLimits, MoreRowsThanOneGridDimension) {
  CHANNEL_GPU_CONTEXT(gpu);
  // Where one grid dimension holds 2^31 workgroups (NVIDIA), the matrix would take 150 GB.
  const int64_t grid_x = gpu->device.info().max_workgroup_count[0];
  if (grid_x > (int64_t{1} << 20)) GTEST_SKIP() << "a grid dimension of " << grid_x << " workgroups: no fold to test";
  MatmulKernels kernels(gpu->device, gpu->pipelines);  // 2 rows per workgroup
  const int64_t rows = 2 * grid_x + 1001;
  std::mt19937 rng(6);
  const TestMatrix m = random_matrix(GgmlType::Q4_0, rows, 64, rng);
  const std::vector<float> x = random_activations(64, rng);
  const std::vector<float> want = run_cpu_matmul(m.w, x, 1);
  const std::vector<float> got = run_gpu_matmul(*gpu, kernels, m.w, x, 1, MatmulKernel::kMatvec, rows);
  EXPECT_LE(relative_l2(got, rows, want, rows, 1), threshold(GgmlType::Q4_0, 64));
  EXPECT_FALSE(std::isnan(got.back()));
}

// A sequence recorded once computes the product of whatever the activation buffer holds when it
// is submitted.
TEST(VulkanMatmulReplay, ReplayedSequenceUsesNewActivations) {
  CHANNEL_GPU_CONTEXT(gpu);
  std::mt19937 rng(8);
  const int64_t rows = 96, cols = 256, n_tokens = 5;
  const TestMatrix m = random_matrix(GgmlType::Q4_0, rows, cols, rng);
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  Buffer weights(gpu->device, device_matrix_bytes(GgmlType::Q4_0, rows, cols), MemoryUse::kDevice);
  Buffer input(gpu->device, n_tokens * cols * 4, MemoryUse::kDevice);
  Buffer scratch(gpu->device, MatmulKernels::scratch_bytes(GgmlType::Q4_0, n_tokens, cols), MemoryUse::kDevice);
  Buffer output(gpu->device, n_tokens * rows * 4, MemoryUse::kDevice);
  const DeviceMatrix matrix = upload_matrix(gpu->transfer, weights, 0, m.w);
  CommandSequence seq(gpu->device);
  seq.begin();
  seq.fill(output, 0, output.size(), kPoison);
  seq.barrier();
  const PreparedActivations prepared =
      kernels.record_prepare(seq, GgmlType::Q4_0, input.address(), n_tokens, cols, cols, scratch.address());
  seq.barrier();
  kernels.record_matmul(seq, matrix, prepared, output.address(), rows);
  seq.end();
  EXPECT_EQ(seq.dispatch_count(), 2u);
  for (int round = 0; round < 3; ++round) {
    const std::vector<float> x = random_activations(n_tokens * cols, rng);
    gpu->transfer.upload(input, 0, x.data(), x.size() * 4);
    seq.run();
    std::vector<float> got(n_tokens * rows);
    gpu->transfer.download(output, 0, got.data(), got.size() * 4);
    EXPECT_LE(relative_l2(got, rows, run_cpu_matmul(m.w, x, n_tokens), rows, n_tokens), threshold(GgmlType::Q4_0, cols))
        << "round " << round;
  }
}

TEST(VulkanMatmulChecks, RefusesMismatchedInputs) {
  CHANNEL_GPU_CONTEXT(gpu);
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  Buffer buffer(gpu->device, 1 << 16, MemoryUse::kDevice);
  CommandSequence seq(gpu->device);
  seq.begin();
  EXPECT_THROW(kernels.record_prepare(seq, GgmlType::Q4_0, buffer.address(), 1, 48, 48, buffer.address()), Error);
  const PreparedActivations f16 =
      kernels.record_prepare(seq, GgmlType::F16, buffer.address(), 1, 64, 64, buffer.address());
  const uint64_t q4_row = device_row_bytes(GgmlType::Q4_0, 64);
  const DeviceMatrix q4{GgmlType::Q4_0, buffer.address(), buffer.address() + 4 * q4_row, 4, 64, q4_row};
  EXPECT_THROW(kernels.record_matmul(seq, q4, f16, buffer.address(), 4), Error);  // prepared for another type
  const PreparedActivations q8 =
      kernels.record_prepare(seq, GgmlType::Q4_0, buffer.address(), 1, 64, 64, buffer.address());
  const DeviceMatrix q4_gguf_rows{GgmlType::Q4_0, buffer.address(), buffer.address() + 4 * 36, 4, 64,
                                  ggml_row_bytes(GgmlType::Q4_0, 64)};
  EXPECT_THROW(kernels.record_matmul(seq, q4_gguf_rows, q8, buffer.address(), 4), Error);  // GGUF rows, not split
  const DeviceMatrix q4_no_scales{GgmlType::Q4_0, buffer.address(), 0, 4, 64, q4_row};
  EXPECT_THROW(kernels.record_matmul(seq, q4_no_scales, q8, buffer.address(), 4), Error);
  const DeviceMatrix q4_misaligned{GgmlType::Q4_0, buffer.address() + 2, buffer.address() + 4 * q4_row, 4, 64, q4_row};
  EXPECT_THROW(kernels.record_matmul(seq, q4_misaligned, q8, buffer.address(), 4), Error);  // quants need 16 bytes
  const DeviceMatrix f16_matrix{GgmlType::F16, buffer.address(), 0, 4, 64, 100};
  EXPECT_THROW(kernels.record_matmul(seq, f16_matrix, f16, buffer.address(), 4), Error);  // wrong row_bytes
  const DeviceMatrix good{GgmlType::F16, buffer.address(), 0, 4, 64, 128};
  EXPECT_THROW(kernels.record_matmul(seq, good, f16, buffer.address() + 2, 4), Error);  // misaligned output
  EXPECT_THROW(kernels.record_matmul(seq, good, f16, buffer.address(), 3), Error);      // stride below rows
  seq.end();
}

}  // namespace
}  // namespace channel::vulkan
