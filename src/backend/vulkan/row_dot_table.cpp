#include "backend/vulkan/row_dot_table.h"

#include <cstring>

#include "core/error.h"

namespace channel::vulkan {
namespace {

size_t nonzero_rows(size_t rows, size_t width) {
  return rows;
}

}  // namespace

VulkanRowDotTable::VulkanRowDotTable(Device& device, MatmulKernels& matmul, Transfer& transfer, size_t rows,
                                     size_t width)
    : matmul_(matmul),
      transfer_(transfer),
      rows_(nonzero_rows(rows, width)),
      width_(width),
      matrix_(device, uint64_t{rows} * width * sizeof(float), MemoryUse::kDevice),
      query_(device, uint64_t{width} * sizeof(float), MemoryUse::kUpload),
      results_(device, uint64_t{rows} * sizeof(float), MemoryUse::kReadback),
      scan_(device) {
  // Rows not yet written read as zero, not as whatever the memory held.
  scan_.begin();
  scan_.fill(matrix_, 0, matrix_.size(), 0u);
  scan_.end();
  scan_.run();
}

void VulkanRowDotTable::write_rows(size_t first_row, std::span<const float> values) {
  if (values.size() % width_ != 0 || first_row > rows_ || values.size() / width_ > rows_ - first_row) {
    fail("{} values from row {} do not fit a table of {} rows of {}", values.size(), first_row, rows_, width_);
  }
  transfer_.upload(matrix_, uint64_t{first_row} * width_ * sizeof(float), values.data(), values.size_bytes());
}

void VulkanRowDotTable::dot_rows(std::span<const float> vector, std::span<float> out) {
  if (vector.size() != width_ || out.size() > rows_) {
    fail("a scan of {} rows with a vector of {} does not fit a table of {} rows of {}", out.size(), vector.size(),
         rows_, width_);
  }
  if (out.empty()) return;
  if (recorded_rows_ != out.size()) record_scan(out.size());
  std::memcpy(query_.mapped(), vector.data(), vector.size_bytes());
  scan_.run();
  std::memcpy(out.data(), results_.mapped(), out.size_bytes());
}

void VulkanRowDotTable::record_scan(size_t n_rows) {
  const auto cols = static_cast<int64_t>(width_);
  const DeviceMatrix rows{.type = GgmlType::F32,
                          .data = matrix_.address(),
                          .rows = static_cast<int64_t>(n_rows),
                          .cols = cols,
                          .row_bytes = device_row_bytes(GgmlType::F32, cols)};
  scan_.begin();
  // F32 weights take the f32 input as it is: nothing is recorded and no scratch is used.
  const PreparedActivations query = matmul_.record_prepare(scan_, GgmlType::F32, query_.address(), 1, cols, cols, 0);
  matmul_.record_matmul(scan_, rows, query, results_.address(), static_cast<int64_t>(n_rows), MatmulKernel::kMatvec);
  scan_.end();
  recorded_rows_ = n_rows;
}

}  // namespace channel::vulkan
