// Backend::make_row_dot_table on the device: episodic memory's centroids in one device buffer,
// scanned by the F32 matrix-vector kernel (matmul_kernels.h) with the query and the results in
// host-visible buffers. The scan is one recorded sequence, replayed while the row count stays
// (each commit adds a row until the store is full; then it stays).
#pragma once

#include <span>

#include "backend/backend.h"
#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/matmul_kernels.h"
#include "backend/vulkan/transfer.h"

namespace channel::vulkan {

class VulkanRowDotTable final : public RowDotTable {
 public:
  // Throws channel::Error when the device has no room for rows x width floats.
  VulkanRowDotTable(Device& device, MatmulKernels& matmul, Transfer& transfer, size_t rows, size_t width);

  size_t rows() const override { return rows_; }
  size_t width() const override { return width_; }
  void write_rows(size_t first_row, std::span<const float> values) override;
  void dot_rows(std::span<const float> vector, std::span<float> out) override;

 private:
  void record_scan(size_t n_rows);

  MatmulKernels& matmul_;
  Transfer& transfer_;
  size_t rows_, width_;
  Buffer matrix_;   // [rows][width] f32, device-local
  Buffer query_;    // [width] f32, written by the host
  Buffer results_;  // [rows] f32, read by the host
  CommandSequence scan_;
  size_t recorded_rows_ = 0;  // the rows scan_ covers (0: not recorded)
};

}  // namespace channel::vulkan
