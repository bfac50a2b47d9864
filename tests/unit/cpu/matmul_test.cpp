#include "backend/cpu/matmul.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/accumulation.h"
#include "backend/cpu/activation_quant.h"
#include "backend/cpu/activations.h"
#include "backend/cpu/dot_kernels.h"
#include "backend/cpu/dot_reference.h"
#include "core/error.h"
#include "core/half.h"
#include "hwy_targets.h"
#include "random_weights.h"
#include "run_matmul.h"

namespace channel::cpu {
namespace {

constexpr double kUnitRoundoff = 0x1p-24;  // f32
constexpr GgmlType kAllTypes[] = {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16, GgmlType::F32};

struct Shape {
  int64_t rows;
  int64_t cols;
  int64_t n_tokens;
};
// Row counts that are not a multiple of any row tile (13, 67) or are a multiple of 8 (Q4_0 then
// uses the block-sequential order) but not of 16 (40); 1 and 3 tokens take the small-batch
// kernels, 17 the batch kernels with a partial token tile; 200 columns leave a scalar tail after
// the f32 vectors of any width.
constexpr Shape kShapes[] = {{13, 256, 1}, {16, 96, 3}, {40, 64, 17}, {67, 64, 17}, {8, 200, 2}};

using testing::random_activations;
using testing::random_matrix;
using testing::TestMatrix;

using testing::run_matmul;

const uint8_t* row_data(const WeightMatrix& w, int64_t row) { return w.data + row * w.row_bytes; }

// Activations as the weight type's dot product sees them, for one token.
struct ConvertedToken {
  std::vector<BlockQ8_0> q8;   // Q4_0 / Q8_0 weights
  std::vector<float> rounded;  // F16 / BF16 / F32 weights
};

ConvertedToken convert_token(GgmlType type, const float* x, int64_t cols) {
  ConvertedToken c;
  if (is_quantized(type)) {
    c.q8.resize(cols / kQuantBlock);
    quantize_row_q8_0_reference(x, cols, c.q8.data());
  } else {
    for (int64_t i = 0; i < cols; ++i) {
      c.rounded.push_back(type == GgmlType::F16    ? f16_to_f32(f32_to_f16(x[i]))
                          : type == GgmlType::BF16 ? bf16_to_f32(f32_to_bf16(x[i]))
                                                   : x[i]);
    }
  }
  return c;
}

// The sum of the absolute values of the terms a dot product adds (block terms d_w * d_x * sum of
// |products| for Q4_0 / Q8_0): f32 rounding errors are bounded relative to it.
double absolute_terms(const WeightMatrix& w, int64_t row, const ConvertedToken& x) {
  std::vector<float> weights(w.cols);
  dequantize_row(w, row, weights.data());
  double sum = 0.0;
  for (int64_t i = 0; i < w.cols; ++i) {
    const BlockQ8_0* block = is_quantized(w.type) ? &x.q8[i / kQuantBlock] : nullptr;
    const double activation =
        block ? f16_to_f32(block->d) * static_cast<double>(block->qs[i % kQuantBlock]) : x.rounded[i];
    sum += std::fabs(weights[i] * activation);
  }
  return sum;
}

// AVX2 and AVX-512 have FMA, so the kernels round exactly like the reference (std::fma);
// SSSE3 / SSE4 emulate MulAdd with a separate multiply and add. The scalar target runs the
// reference itself.
bool target_has_fma(int64_t target) {
  return target == HWY_AVX2 || target == HWY_AVX3 || target == HWY_AVX3_DL || target == HWY_SCALAR;
}

using MatmulTest = hwy_testing::PerHwyTarget;
CHANNEL_INSTANTIATE_PER_HWY_TARGET(MatmulTest);

TEST_P(MatmulTest, MatchesScalarReference) {
  std::mt19937 rng(42);
  for (const GgmlType type : kAllTypes) {
    for (const Shape& shape : kShapes) {
      if (shape.cols % ggml_type_traits(type).block_elements != 0) continue;
      SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << " " << shape.rows << "x" << shape.cols
                                        << ", " << shape.n_tokens << " tokens");
      const TestMatrix m = random_matrix(type, shape.rows, shape.cols, rng);
      const std::vector<float> x = random_activations(shape.n_tokens * shape.cols, rng);
      const std::vector<float> out = run_matmul(m.w, x, shape.n_tokens);
      for (int64_t t = 0; t < shape.n_tokens; ++t) {
        const ConvertedToken xt = convert_token(type, x.data() + t * shape.cols, shape.cols);
        for (int64_t r = 0; r < shape.rows; ++r) {
          const float got = out[t * shape.rows + r];
          if (is_quantized(type)) {
            const float expected = dot_quant_reference(type, row_data(m.w, r), xt.q8.data(), shape.cols / kQuantBlock,
                                                       quant_accumulation(m.w));
            if (target_has_fma(GetParam())) {
              // Same integer sums, same f32 operations in the same order: identical bits.
              EXPECT_EQ(got, expected) << "token " << t << " row " << r;
            } else {
              // Each separate multiply-add rounds once more: at most one unit roundoff of every
              // block term, accumulated over the blocks.
              const double n_blocks = static_cast<double>(shape.cols / kQuantBlock);
              const double tolerance = 2.0 * (n_blocks + 8) * kUnitRoundoff * absolute_terms(m.w, r, xt);
              EXPECT_NEAR(got, expected, tolerance) << "token " << t << " row " << r;
            }
          } else {
            // Same products, summed in a different order (vector lanes, then a tree): both are
            // within (n + 8) unit roundoffs of the exact sum of the absolute terms.
            const float expected = dot_float_reference(type, row_data(m.w, r), xt.rounded.data(), shape.cols);
            const double tolerance = 2.0 * (shape.cols + 8) * kUnitRoundoff * absolute_terms(m.w, r, xt);
            EXPECT_NEAR(got, expected, tolerance) << "token " << t << " row " << r;
          }
        }
      }
    }
  }
}

// The VDPBF16PS pair orders (accumulation.h) add exact products one rounding at a time, with or
// without FMA: every target gives the reference's bits, whatever order this CPU would choose.
TEST_P(MatmulTest, Bf16PairOrdersMatchTheirReferenceExactly) {
  std::mt19937 rng(5);
  for (const Bf16Accumulation order : {Bf16Accumulation::kPairsTiled, Bf16Accumulation::kPairsVecDot}) {
    for (const Shape& shape : kShapes) {
      if (order == Bf16Accumulation::kPairsTiled && shape.cols % 32 != 0) continue;
      SCOPED_TRACE(::testing::Message() << (order == Bf16Accumulation::kPairsTiled ? "tiled " : "vec_dot ")
                                        << shape.rows << "x" << shape.cols << ", " << shape.n_tokens << " tokens");
      const TestMatrix m = random_matrix(GgmlType::BF16, shape.rows, shape.cols, rng);
      const std::vector<float> x = random_activations(shape.n_tokens * shape.cols, rng);
      const PreparedActivations activations(GgmlType::BF16, x.data(), shape.n_tokens, shape.cols);
      std::vector<float> out(shape.n_tokens * shape.rows, std::nanf(""));
      DotRowsJob job;
      job.weights = &m.w;
      job.bf16_accumulation = order;
      job.activations = &activations;
      job.out = out.data();
      job.out_stride = shape.rows;
      dot_rows(job, 0, shape.rows);
      for (int64_t t = 0; t < shape.n_tokens; ++t) {
        const ConvertedToken xt = convert_token(GgmlType::BF16, x.data() + t * shape.cols, shape.cols);
        for (int64_t r = 0; r < shape.rows; ++r) {
          EXPECT_EQ(out[t * shape.rows + r], dot_bf16_pairs_reference(row_data(m.w, r), xt.rounded.data(), shape.cols,
                                                                      order))
              << "token " << t << " row " << r;
        }
      }
    }
  }
}

TEST_P(MatmulTest, MatchesDoublePrecisionDotOfDequantizedWeights) {
  std::mt19937 rng(7);
  for (const GgmlType type : kAllTypes) {
    for (const Shape& shape : kShapes) {
      if (shape.cols % ggml_type_traits(type).block_elements != 0) continue;
      SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << " " << shape.rows << "x" << shape.cols);
      const TestMatrix m = random_matrix(type, shape.rows, shape.cols, rng);
      const std::vector<float> x = random_activations(shape.n_tokens * shape.cols, rng);
      const std::vector<float> out = run_matmul(m.w, x, shape.n_tokens);
      std::vector<float> weights(shape.cols);
      for (int64_t r = 0; r < shape.rows; ++r) {
        dequantize_row(m.w, r, weights.data());
        for (int64_t t = 0; t < shape.n_tokens; ++t) {
          const float* xt = x.data() + t * shape.cols;
          double exact = 0.0;
          double absolute = 0.0;  // sum of |w * x|
          for (int64_t i = 0; i < shape.cols; ++i) {
            exact += double{weights[i]} * xt[i];
            absolute += std::fabs(double{weights[i]} * xt[i]);
          }
          // Bound on |sum of w * (x - x as the dot product sees it)|.
          double activation_error = 0.0;
          if (type == GgmlType::F16) activation_error = 0x1p-11 * absolute;  // half an f16 ulp
          if (type == GgmlType::BF16) activation_error = 0x1p-8 * absolute;  // half a bf16 ulp
          for (int64_t b = 0; is_quantized(type) && b < shape.cols / kQuantBlock; ++b) {
            // Q8_0: |x - q * d| <= amax * (0.5 / 127 for rounding q + 2^-11 for storing d as fp16).
            double amax = 0.0;
            double abs_weights = 0.0;
            for (int64_t i = b * kQuantBlock; i < (b + 1) * kQuantBlock; ++i) {
              amax = std::max(amax, std::fabs(double{xt[i]}));
              abs_weights += std::fabs(weights[i]);
            }
            activation_error += 1.01 * amax * (0.5 / 127 + 0x1p-11) * abs_weights;
          }
          const double tolerance = activation_error + 2.0 * (shape.cols + 8) * kUnitRoundoff * 1.1 * absolute;
          EXPECT_NEAR(out[t * shape.rows + r], exact, tolerance) << "token " << t << " row " << r;
        }
      }
    }
  }
}

TEST_P(MatmulTest, MatmulRowsMatchesTheSameRowsOfMatmul) {
  std::mt19937 rng(3);
  const std::vector<int32_t> rows = {5, 0, 12, 12, 3, 7, 1};  // unordered, repeated, not a tile multiple
  for (const GgmlType type : kAllTypes) {
    for (const int64_t n_tokens : {1, 3, 9}) {
      SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << ", " << n_tokens << " tokens");
      const TestMatrix m = random_matrix(type, 16, 128, rng);
      const std::vector<float> x = random_activations(n_tokens * 128, rng);
      const std::vector<float> all = run_matmul(m.w, x, n_tokens);
      ThreadPool pool(2);
      std::vector<float> selected(n_tokens * rows.size());
      matmul_rows(m.w, x.data(), n_tokens, rows, selected.data(), pool);
      for (int64_t t = 0; t < n_tokens; ++t) {
        for (size_t i = 0; i < rows.size(); ++i) {
          EXPECT_EQ(selected[t * rows.size() + i], all[t * m.w.rows + rows[i]]) << "token " << t << " row " << rows[i];
        }
      }
    }
  }
}

TEST_P(MatmulTest, ResultsDoNotDependOnThreadCount) {
  std::mt19937 rng(11);
  for (const GgmlType type : kAllTypes) {
    for (const int64_t rows : {1000, 1003}) {  // several chunks; Q4_0 in both orders
      for (const int64_t n_tokens : {1, 17}) {
        SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << " " << rows << " rows, " << n_tokens
                                          << " tokens");
        const TestMatrix m = random_matrix(type, rows, 64, rng);
        const std::vector<float> x = random_activations(n_tokens * 64, rng);
        const std::vector<float> one_thread = run_matmul(m.w, x, n_tokens, 1);
        for (const int threads : {2, 3}) {
          const std::vector<float> out = run_matmul(m.w, x, n_tokens, threads);
          EXPECT_EQ(std::memcmp(out.data(), one_thread.data(), out.size() * sizeof(float)), 0) << threads << " threads";
        }
      }
    }
  }
}

TEST(QuantAccumulationTest, FollowsLlamaCppRepacking) {
  EXPECT_EQ(quant_accumulation({GgmlType::Q4_0, nullptr, 64, 16, 36}), QuantAccumulation::kBlockSequential);
  EXPECT_EQ(quant_accumulation({GgmlType::Q4_0, nullptr, 64, 12, 36}), QuantAccumulation::kEightLanes);
  EXPECT_EQ(quant_accumulation({GgmlType::Q8_0, nullptr, 64, 16, 68}), QuantAccumulation::kEightLanes);
}

TEST(QuantAccumulationTest, OrdersDifferSoTheExactChecksTellThemApart) {
  std::mt19937 rng(5);
  const TestMatrix m = random_matrix(GgmlType::Q4_0, 64, 1024, rng);
  const std::vector<float> x = random_activations(1024, rng);
  const ConvertedToken xt = convert_token(GgmlType::Q4_0, x.data(), 1024);
  int differing = 0;
  for (int64_t r = 0; r < m.w.rows; ++r) {
    const auto dot = [&](QuantAccumulation order) {
      return dot_quant_reference(GgmlType::Q4_0, row_data(m.w, r), xt.q8.data(), 1024 / kQuantBlock, order);
    };
    differing += dot(QuantAccumulation::kEightLanes) != dot(QuantAccumulation::kBlockSequential);
  }
  EXPECT_GT(differing, 0);
}

TEST(DequantizeRowTest, DecodesEachType) {
  float out[kQuantBlock];

  BlockQ4_0 q4{};
  q4.d = f32_to_f16(0.5f);
  q4.qs[0] = 0x9f;  // element 0: 15 - 8 = 7, element 16: 9 - 8 = 1
  q4.qs[1] = 0x08;  // element 1: 0, element 17: -8
  dequantize_row({GgmlType::Q4_0, reinterpret_cast<const uint8_t*>(&q4), kQuantBlock, 1, sizeof(q4)}, 0, out);
  EXPECT_EQ(out[0], 3.5f);
  EXPECT_EQ(out[16], 0.5f);
  EXPECT_EQ(out[1], 0.0f);
  EXPECT_EQ(out[17], -4.0f);
  EXPECT_EQ(out[2], -4.0f);  // qs = 0: both nibbles are -8

  BlockQ8_0 q8{};
  q8.d = f32_to_f16(0.25f);
  q8.qs[0] = -128;
  q8.qs[31] = 5;
  dequantize_row({GgmlType::Q8_0, reinterpret_cast<const uint8_t*>(&q8), kQuantBlock, 1, sizeof(q8)}, 0, out);
  EXPECT_EQ(out[0], -32.0f);
  EXPECT_EQ(out[31], 1.25f);
  EXPECT_EQ(out[1], 0.0f);

  const uint16_t halves[2] = {0x3e00, 0xc000};  // f16 1.5, -2
  dequantize_row({GgmlType::F16, reinterpret_cast<const uint8_t*>(halves), 2, 1, 4}, 0, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  const uint16_t bhalves[2] = {0x3fc0, 0xc000};  // bf16 1.5, -2
  dequantize_row({GgmlType::BF16, reinterpret_cast<const uint8_t*>(bhalves), 2, 1, 4}, 0, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  const float floats[2] = {0.1f, -7.0f};
  dequantize_row({GgmlType::F32, reinterpret_cast<const uint8_t*>(floats), 2, 1, 8}, 0, out);
  EXPECT_EQ(out[0], 0.1f);
  EXPECT_EQ(out[1], -7.0f);
}

TEST(MatmulErrorsTest, RejectsInconsistentRowBytesAndRowsOutOfRange) {
  std::mt19937 rng(1);
  TestMatrix m = random_matrix(GgmlType::Q8_0, 4, 64, rng);
  const std::vector<float> x(64, 1.0f);
  std::vector<float> out(4);
  ThreadPool pool(1);
  const std::vector<int32_t> bad_rows = {0, 4};
  EXPECT_THROW(matmul_rows(m.w, x.data(), 1, bad_rows, out.data(), pool), Error);
  m.w.row_bytes += 1;
  EXPECT_THROW(matmul(m.w, x.data(), 1, out.data(), pool), Error);
}

}  // namespace
}  // namespace channel::cpu
