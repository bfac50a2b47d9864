// Episodic memory's centroid table on the device (VulkanRowDotTable) against the CPU's scan
// (core/row_dots.h) on fresh random rows of several widths: every cosine within the float
// summation bound of any order, with rows written in runs and overwritten as a store's ring
// turns, scans over a growing prefix of the rows (the sequence recorded again) and replayed with
// new queries; writes and scans that do not fit are refused.
#include "backend/vulkan/row_dot_table.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/row_dots.h"
#include "core/unit_length.h"
#include "gpu_test_support.h"

namespace channel::vulkan::testing {
namespace {

std::vector<float> unit_rows(std::mt19937& rng, size_t rows, size_t width) {
  std::normal_distribution<float> normal;
  std::vector<float> values(rows * width);
  for (size_t r = 0; r < rows; ++r) {
    std::span<float> row(values.data() + r * width, width);
    for (float& x : row) x = normal(rng);
    scale_to_unit_length(row);
  }
  return values;
}

TEST(VulkanRowDotTable, MatchesTheCpuScanOnRandomRows) {
  CHANNEL_GPU_CONTEXT(gpu);
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  std::mt19937 rng(20);
  for (size_t width : {1, 7, 64, 129, 3840}) {
    constexpr size_t kRows = 37;
    VulkanRowDotTable table(gpu->device, kernels, gpu->transfer, kRows, width);
    std::vector<float> host(kRows * width, 0.0f);  // what the table should hold
    const auto write = [&](size_t first, size_t n) {
      const std::vector<float> rows = unit_rows(rng, n, width);
      std::copy(rows.begin(), rows.end(), host.begin() + static_cast<std::ptrdiff_t>(first * width));
      table.write_rows(first, rows);
    };
    // Unit-length rows and query: each cosine's float sum, in any order, is within
    // width · FLT_EPSILON of the exact one, the CPU's too; twice that between the two.
    const double tolerance = 2.0 * (static_cast<double>(width) + 4) * FLT_EPSILON;
    const auto check = [&](size_t n_rows, const std::string& where) {
      const std::vector<float> query = unit_rows(rng, 1, width);
      std::vector<float> got(n_rows, NAN), want(n_rows);
      table.dot_rows(query, got);
      dot_rows_f32(std::span<const float>(host).first(n_rows * width), query, want);
      for (size_t r = 0; r < n_rows; ++r) {
        EXPECT_NEAR(got[r], want[r], tolerance) << fmt::format("width {}, {}: row {}", width, where, r);
      }
    };
    write(0, 10);
    check(10, "10 rows");
    check(10, "10 rows, replayed");
    write(10, 27);
    check(kRows, "every row");
    write(0, 3);  // the ring turning: the oldest rows overwritten
    write(36, 1);
    check(kRows, "rows overwritten");
    check(4, "a prefix");  // recorded again for fewer rows
  }
}

TEST(VulkanRowDotTable, RefusesWhatDoesNotFit) {
  CHANNEL_GPU_CONTEXT(gpu);
  MatmulKernels kernels(gpu->device, gpu->pipelines);
  VulkanRowDotTable table(gpu->device, kernels, gpu->transfer, 4, 8);
  const std::vector<float> two_rows(16, 0.5f), ragged(9, 0.5f), query(8, 0.5f), wrong_query(7, 0.5f);
  EXPECT_THROW(table.write_rows(3, two_rows), Error);  // past the last row
  EXPECT_THROW(table.write_rows(0, ragged), Error);    // not whole rows
  std::vector<float> out(5);
  EXPECT_THROW(table.dot_rows(query, out), Error);  // more rows than the table
  out.resize(4);
  EXPECT_THROW(table.dot_rows(wrong_query, out), Error);
  table.write_rows(2, two_rows);
  table.dot_rows(query, out);
  EXPECT_EQ(out, (std::vector<float>{0.0f, 0.0f, 2.0f, 2.0f}));  // unwritten rows are zero
  EXPECT_THROW(VulkanRowDotTable(gpu->device, kernels, gpu->transfer, 0, 8), Error);
}

}  // namespace
}  // namespace channel::vulkan::testing
