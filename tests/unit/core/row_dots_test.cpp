// The SIMD row dot products against a double-precision sum, on every Highway target this CPU has,
// at widths around the vector lengths (1 to 16 floats) and the unrolled step (4 vectors), and
// row counts around the 8-row tile, so that the tiles, the single rows' main and one-vector
// loops and the scalar tails are each checked.
#include "core/row_dots.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/split_mix.h"
#include "hwy_targets.h"

namespace channel {
namespace {

using RowDots = hwy_testing::PerHwyTarget;
CHANNEL_INSTANTIATE_PER_HWY_TARGET(RowDots);

std::vector<float> normals(SplitMix64& random, size_t n) {
  std::vector<float> v(n);
  for (float& x : v) x = random.normal();
  return v;
}

TEST_P(RowDots, MatchDoubleSumsWithinTheFloatBound) {
  SplitMix64 random(7);
  for (size_t cols : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 3840, 3843}) {
    for (size_t rows : {0, 1, 2, 8, 9, 17}) {
      const std::vector<float> matrix = normals(random, rows * cols);
      const std::vector<float> vector = normals(random, cols);
      std::vector<float> out(rows, NAN);
      dot_rows_f32(matrix, vector, out);
      for (size_t r = 0; r < rows; ++r) {
        double exact = 0.0, magnitude = 0.0;
        for (size_t i = 0; i < cols; ++i) {
          const double product = double{matrix[r * cols + i]} * vector[i];
          exact += product;
          magnitude += std::abs(product);
        }
        // The bound of any float summation order (row_dots.h). It is loose at large widths:
        // IntegerValuesSumExactly below catches a wrong or missed column there.
        const double bound = cols * double{FLT_EPSILON} * magnitude;
        EXPECT_NEAR(out[r], exact, bound) << cols << " columns, row " << r << " of " << rows;
      }
    }
  }
}

// Small integers have exact float products and sums (all below 2^24), whatever the order of
// the additions: any column missed, counted twice or taken from the wrong row shows.
TEST_P(RowDots, IntegerValuesSumExactly) {
  SplitMix64 random(11);
  const auto small_integers = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(static_cast<int>(random.below(17)) - 8);
    return v;
  };
  for (size_t cols : {1, 3, 8, 15, 16, 17, 33, 64, 65, 3840, 3843}) {
    const size_t rows = 13;
    const std::vector<float> matrix = small_integers(rows * cols);
    const std::vector<float> vector = small_integers(cols);
    std::vector<float> out(rows, NAN);
    dot_rows_f32(matrix, vector, out);
    for (size_t r = 0; r < rows; ++r) {
      int64_t exact = 0;
      for (size_t i = 0; i < cols; ++i) {
        exact += static_cast<int64_t>(matrix[r * cols + i]) * static_cast<int64_t>(vector[i]);
      }
      EXPECT_EQ(out[r], static_cast<float>(exact)) << cols << " columns, row " << r;
    }
  }
}

TEST(RowDotsSizes, AMatrixThatIsNotWholeRowsThrows) {
  const std::vector<float> matrix(7, 1.0f), vector(3, 1.0f);
  std::vector<float> out(2);
  EXPECT_THROW(dot_rows_f32(matrix, vector, out), Error);
}

}  // namespace
}  // namespace channel
