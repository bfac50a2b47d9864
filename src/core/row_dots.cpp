#include "core/row_dots.h"

#include "core/error.h"

// Highway compiles this file once per SIMD target and dispatches at run time.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/row_dots.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace channel {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// One row's dot product. Four independent accumulators keep the FMA latency off the critical
// path.
float DotRow(const float* HWY_RESTRICT row, const float* HWY_RESTRICT vector, size_t cols) {
  const hn::ScalableTag<float> d;
  const size_t n = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * n <= cols; i += 4 * n) {
    a0 = hn::MulAdd(hn::LoadU(d, row + i), hn::LoadU(d, vector + i), a0);
    a1 = hn::MulAdd(hn::LoadU(d, row + i + n), hn::LoadU(d, vector + i + n), a1);
    a2 = hn::MulAdd(hn::LoadU(d, row + i + 2 * n), hn::LoadU(d, vector + i + 2 * n), a2);
    a3 = hn::MulAdd(hn::LoadU(d, row + i + 3 * n), hn::LoadU(d, vector + i + 3 * n), a3);
  }
  for (; i + n <= cols; i += n) a0 = hn::MulAdd(hn::LoadU(d, row + i), hn::LoadU(d, vector + i), a0);
  float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  // The last columns, fewer than a vector: plain loads, since a whole-vector load past the end
  // of the matrix could fault.
  for (; i < cols; ++i) sum += row[i] * vector[i];
  return sum;
}

// Rows read together, each as its own sequential stream: one stream leaves a core waiting on
// memory (bench/read_bandwidth.cpp measured 5.6 GB/s with one stream and 13 GB/s with eight on
// one Xeon core); eight also give eight independent FMA chains, and each load of the vector
// serves all of them.
constexpr size_t kTileRows = 8;

void DotRowTile(const float* HWY_RESTRICT rows, const float* HWY_RESTRICT vector, size_t cols, float* out) {
  const hn::ScalableTag<float> d;
  const size_t n = hn::Lanes(d);
  decltype(hn::Zero(d)) acc[kTileRows];
  for (auto& a : acc) a = hn::Zero(d);
  size_t i = 0;
  for (; i + n <= cols; i += n) {
    const auto v = hn::LoadU(d, vector + i);
    for (size_t r = 0; r < kTileRows; ++r) acc[r] = hn::MulAdd(hn::LoadU(d, rows + r * cols + i), v, acc[r]);
  }
  for (size_t r = 0; r < kTileRows; ++r) {
    float sum = hn::GetLane(hn::SumOfLanes(d, acc[r]));
    for (size_t j = i; j < cols; ++j) sum += rows[r * cols + j] * vector[j];  // as DotRow's last columns
    out[r] = sum;
  }
}

void DotRowsF32(const float* matrix, const float* vector, size_t cols, float* out, size_t rows) {
  size_t r = 0;
  for (; r + kTileRows <= rows; r += kTileRows) DotRowTile(matrix + r * cols, vector, cols, out + r);
  for (; r < rows; ++r) out[r] = DotRow(matrix + r * cols, vector, cols);
}

}  // namespace HWY_NAMESPACE
}  // namespace channel
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace channel {

HWY_EXPORT(DotRowsF32);

void dot_rows_f32(std::span<const float> matrix, std::span<const float> vector, std::span<float> out) {
  if (matrix.size() != out.size() * vector.size()) {
    fail("dot_rows_f32: a matrix of {} values is not {} rows of {} columns", matrix.size(), out.size(), vector.size());
  }
  HWY_DYNAMIC_DISPATCH(DotRowsF32)(matrix.data(), vector.data(), vector.size(), out.data(), out.size());
}

}  // namespace channel
#endif  // HWY_ONCE
