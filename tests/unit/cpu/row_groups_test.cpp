#include "backend/cpu/row_groups.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/accumulation.h"
#include "backend/cpu/activation_quant.h"
#include "backend/cpu/dot_reference.h"
#include "backend/cpu/matmul.h"
#include "core/error.h"
#include "hwy_targets.h"
#include "random_weights.h"
#include "run_matmul.h"

namespace channel::cpu {
namespace {

using testing::random_activations;
using testing::random_matrix;
using testing::TestMatrix;

using testing::run_matmul;

// A repacked copy of a matrix with the bytes behind its view.
struct Repacked {
  Repacked(const WeightMatrix& w, ThreadPool& pool)
      : bytes(w.row_bytes * static_cast<size_t>(w.rows)), matrix(repack_to_row_groups(w, bytes.data(), pool)) {}
  std::vector<uint8_t> bytes;
  WeightMatrix matrix;
};

std::vector<BlockQ8_0> quantized_token(const std::vector<float>& x, int64_t t, int64_t cols) {
  std::vector<BlockQ8_0> q8(cols / kQuantBlock);
  quantize_row_q8_0_reference(x.data() + t * cols, cols, q8.data());
  return q8;
}

constexpr GgmlType kTypes[] = {GgmlType::Q4_0, GgmlType::Q8_0};

TEST(RowGroupsTest, RepackableMatrices) {
  EXPECT_TRUE(repackable_to_row_groups({GgmlType::Q4_0, nullptr, 64, 32, 36}));
  EXPECT_TRUE(repackable_to_row_groups({GgmlType::Q8_0, nullptr, 64, 32, 68}));
  EXPECT_FALSE(repackable_to_row_groups({GgmlType::Q4_0, nullptr, 64, 24, 36}));  // not whole groups
  EXPECT_FALSE(repackable_to_row_groups({GgmlType::Q8_0, nullptr, 64, 40, 68}));
  EXPECT_FALSE(repackable_to_row_groups({GgmlType::F16, nullptr, 64, 32, 128}));
  EXPECT_FALSE(repackable_to_row_groups({GgmlType::Q4_0, nullptr, 64, 0, 36}));
}

// The layout read plainly: every row's dot products are those of its GGUF row, in the order of
// the GGUF layout's kernels for the type.
TEST(RowGroupsTest, ReferenceOfRepackedRowsEqualsGgufReference) {
  std::mt19937 rng(21);
  ThreadPool pool(2);
  for (const GgmlType type : kTypes) {
    const TestMatrix m = random_matrix(type, 48, 160, rng);
    const Repacked repacked(m.w, pool);
    EXPECT_EQ(repacked.matrix.layout, WeightLayout::kRowGroups);
    const std::vector<float> x = random_activations(160, rng);
    const std::vector<BlockQ8_0> q8 = quantized_token(x, 0, 160);
    for (int64_t r = 0; r < m.w.rows; ++r) {
      const float expected = dot_quant_reference(type, m.w.row(r), q8.data(), 160 / kQuantBlock, quant_accumulation(m.w));
      EXPECT_EQ(dot_row_group_reference(repacked.matrix, r, q8.data()), expected)
          << ggml_type_traits(type).name << " row " << r;
    }
  }
}

TEST(RowGroupsTest, RejectsWhatItCannotRepackOrRead) {
  std::mt19937 rng(2);
  ThreadPool pool(1);
  EXPECT_THROW(Repacked(random_matrix(GgmlType::Q4_0, 24, 64, rng).w, pool), Error);
  EXPECT_THROW(Repacked(random_matrix(GgmlType::F16, 32, 64, rng).w, pool), Error);
  for (const GgmlType type : kTypes) {
    const TestMatrix m = random_matrix(type, 32, 64, rng);
    const Repacked repacked(m.w, pool);
    EXPECT_THROW(Repacked(repacked.matrix, pool), Error);  // already repacked
    std::vector<float> row(64);
    EXPECT_THROW(dequantize_row(repacked.matrix, 0, row.data()), Error);
    const std::vector<float> x = random_activations(64, rng);
    const std::vector<int32_t> rows = {0, 5};
    std::vector<float> out(2);
    EXPECT_THROW(matmul_rows(repacked.matrix, x.data(), 1, rows, out.data(), pool), Error);
  }
}

using RowGroupKernelTest = hwy_testing::PerHwyTarget;
CHANNEL_INSTANTIATE_PER_HWY_TARGET(RowGroupKernelTest);

// Same integer sums and the same f32 steps as the GGUF layout's kernels on the same target
// (which MatmulTest checks against the reference): identical bits, for decode (1 token), every
// partial token tile and several full ones.
TEST_P(RowGroupKernelTest, MatchesTheGgufLayoutBitForBit) {
  std::mt19937 rng(7);
  struct Shape {
    int64_t rows, cols;
  };
  for (const GgmlType type : kTypes) {
    for (const Shape shape : {Shape{16, 32}, Shape{48, 96}, Shape{160, 1024}, Shape{32, 2080}}) {
      const TestMatrix m = random_matrix(type, shape.rows, shape.cols, rng);
      ThreadPool pool(2);
      const Repacked repacked(m.w, pool);
      for (const int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 9, 17, 33}) {
        SCOPED_TRACE(::testing::Message() << ggml_type_traits(type).name << " " << shape.rows << "x" << shape.cols
                                          << ", " << n_tokens << " tokens");
        const std::vector<float> x = random_activations(n_tokens * shape.cols, rng);
        const std::vector<float> gguf = run_matmul(m.w, x, n_tokens);
        const std::vector<float> got = run_matmul(repacked.matrix, x, n_tokens);
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(std::memcmp(&got[i], &gguf[i], sizeof(float)), 0)
              << "token " << i / shape.rows << " row " << i % shape.rows << ": " << got[i] << " vs " << gguf[i];
        }
      }
    }
  }
}

TEST_P(RowGroupKernelTest, ResultsDoNotDependOnThreadCount) {
  std::mt19937 rng(13);
  for (const GgmlType type : kTypes) {
    const TestMatrix m = random_matrix(type, 1008, 64, rng);  // 63 groups, several chunks
    ThreadPool pool(1);
    const Repacked repacked(m.w, pool);
    for (const int64_t n_tokens : {1, 11}) {
      const std::vector<float> x = random_activations(n_tokens * 64, rng);
      const std::vector<float> one_thread = run_matmul(repacked.matrix, x, n_tokens, 1);
      for (const int threads : {2, 3}) {
        const std::vector<float> out = run_matmul(repacked.matrix, x, n_tokens, threads);
        EXPECT_EQ(std::memcmp(out.data(), one_thread.data(), out.size() * sizeof(float)), 0)
            << ggml_type_traits(type).name << ", " << n_tokens << " tokens, " << threads << " threads";
      }
    }
  }
}

}  // namespace
}  // namespace channel::cpu
