// Weight matrices as the device kernels read them, and their upload.
//
// F32 / F16 / BF16 matrices keep their GGUF rows. Q4_0 / Q8_0 matrices are stored with their
// blocks split in two arrays ("split blocks"):
//   quants: every block's 16 (Q4_0) or 32 (Q8_0) quant bytes, row after row, block after block;
//   scales: every block's f16 scale, in the same order, in a second array.
// GGUF's 18- and 34-byte blocks put a block's quants at 2-byte alignment, so a GPU thread must
// read them with 16-bit loads or cut them out of wider ones; split, a thread reads a block's
// quants with one (Q4_0) or two (Q8_0) aligned 16-byte loads, and neighbouring threads read
// neighbouring blocks, which is what lets a matrix-vector product stream near the memory's
// bandwidth. The values are unchanged (the same bytes, moved), so results are too.
#pragma once

#include <cstdint>
#include <span>

#include "backend/vulkan/buffer.h"
#include "backend/vulkan/transfer.h"
#include "model/ggml_type.h"
#include "model/weight_matrix.h"

namespace channel::vulkan {

// A weight matrix in device memory (`rows` rows of `cols` values):
//   F32 / F16 / BF16: GGUF rows of row_bytes at `data` (2-byte aligned; F32 4-byte);
//   Q4_0 / Q8_0:      split blocks: row r's quants at data + r * row_bytes (row_bytes = blocks
//                     per row * 16 or 32; 16-byte aligned), its scales at scales + r * blocks * 2.
// Any address works (a row range of a larger matrix: both addresses advanced by the rows).
struct DeviceMatrix {
  GgmlType type = GgmlType::F32;
  VkDeviceAddress data = 0;
  VkDeviceAddress scales = 0;  // Q4_0 / Q8_0 only
  int64_t rows = 0;
  int64_t cols = 0;
  uint64_t row_bytes = 0;  // device_row_bytes(type, cols)
};

// Bytes of one row in DeviceMatrix::data: GGUF's for float types, the quants alone for Q4_0 / Q8_0.
uint64_t device_row_bytes(GgmlType type, int64_t cols);
// Bytes a matrix takes on the device (both arrays, the scales 16-byte aligned after the quants).
uint64_t device_matrix_bytes(GgmlType type, int64_t rows, int64_t cols);

// Host side of the split: rows [first_row, first_row + n_rows) of GGUF matrix w into
// `quants` (n_rows * device_row_bytes) and `scales` (n_rows * blocks per row f16 values).
void split_quantized_rows(const WeightMatrix& w, int64_t first_row, int64_t n_rows, uint8_t* quants,
                          uint16_t* scales);

// Uploads GGUF matrix w into `buffer` at `offset` (16-byte aligned for Q4_0 / Q8_0, else as the
// type's values; device_matrix_bytes long) in
// the device layout, converting in slices of rows so that host memory stays small.
DeviceMatrix upload_matrix(Transfer& transfer, const Buffer& buffer, uint64_t offset, const WeightMatrix& w);

// Uploads GGUF matrices of one type and width as one device matrix whose rows are theirs in
// order (device_matrix_bytes of the summed rows), as upload_matrix lays out one: a product with
// it computes every part's rows in one dispatch. matrix_rows gives each part back.
DeviceMatrix upload_stacked_matrices(Transfer& transfer, const Buffer& buffer, uint64_t offset,
                                     std::span<const WeightMatrix* const> parts);

// Rows [first_row, first_row + n_rows) of m as a matrix of their own.
DeviceMatrix matrix_rows(const DeviceMatrix& m, int64_t first_row, int64_t n_rows);

}  // namespace channel::vulkan
