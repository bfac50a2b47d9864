#include "backend/vulkan/device_matrix.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"

namespace channel::vulkan {
namespace {

constexpr uint64_t kAlignment = 16;
constexpr uint64_t kSliceBytes = 32ull << 20;  // GGUF bytes converted per upload

uint64_t align16(uint64_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

uint64_t quant_bytes_per_block(GgmlType type) { return type == GgmlType::Q4_0 ? 16 : 32; }

}  // namespace

uint64_t device_row_bytes(GgmlType type, int64_t cols) {
  if (!is_quantized(type)) return ggml_row_bytes(type, cols);
  return static_cast<uint64_t>(cols / kQuantBlock) * quant_bytes_per_block(type);
}

uint64_t device_matrix_bytes(GgmlType type, int64_t rows, int64_t cols) {
  const uint64_t data = device_row_bytes(type, cols) * static_cast<uint64_t>(rows);
  if (!is_quantized(type)) return data;
  return align16(data) + static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols / kQuantBlock) * 2;
}

void split_quantized_rows(const WeightMatrix& w, int64_t first_row, int64_t n_rows, uint8_t* quants,
                          uint16_t* scales) {
  if (!is_quantized(w.type)) fail("internal: split_quantized_rows on a {} matrix", ggml_type_traits(w.type).name);
  const uint64_t block_bytes = ggml_type_traits(w.type).block_bytes;  // f16 scale, then the quants
  const uint64_t qbytes = quant_bytes_per_block(w.type);
  const int64_t blocks = w.cols / kQuantBlock;
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* block = w.row(first_row + r);
    for (int64_t b = 0; b < blocks; ++b, block += block_bytes) {
      std::memcpy(scales++, block, 2);
      std::memcpy(quants, block + 2, qbytes);
      quants += qbytes;
    }
  }
}

DeviceMatrix upload_matrix(Transfer& transfer, const Buffer& buffer, uint64_t offset, const WeightMatrix& w) {
  const WeightMatrix* parts[] = {&w};
  return upload_stacked_matrices(transfer, buffer, offset, parts);
}

DeviceMatrix upload_stacked_matrices(Transfer& transfer, const Buffer& buffer, uint64_t offset,
                                     std::span<const WeightMatrix* const> parts) {
  if (parts.empty()) fail("internal: no matrices to upload");
  const WeightMatrix& first_part = *parts.front();
  const GgmlType type = first_part.type;
  const int64_t cols = first_part.cols;
  int64_t rows = 0;
  for (const WeightMatrix* w : parts) {
    if (w->cols <= 0 || w->rows <= 0 || (is_quantized(w->type) && w->cols % kQuantBlock != 0)) {
      fail("Vulkan: a {} x {} {} matrix cannot be uploaded", w->rows, w->cols, ggml_type_traits(w->type).name);
    }
    if (w->type != type || w->cols != cols) fail("internal: stacked matrices differ in type or width");
    rows += w->rows;
  }
  const uint64_t alignment = is_quantized(type) ? kAlignment : type == GgmlType::F32 ? 4 : 2;
  if (offset % alignment != 0) fail("internal: weight matrix offset {} not {}-byte aligned", offset, alignment);
  DeviceMatrix m{type, buffer.address() + offset, 0, rows, cols, device_row_bytes(type, cols)};
  const uint64_t scales_offset = offset + align16(m.row_bytes * static_cast<uint64_t>(rows));
  if (is_quantized(type)) m.scales = buffer.address() + scales_offset;
  const int64_t blocks = cols / kQuantBlock;
  int64_t part_row = 0;  // the part's first row in m
  for (const WeightMatrix* w : parts) {
    if (!is_quantized(type)) {
      transfer.upload(buffer, offset + static_cast<uint64_t>(part_row) * m.row_bytes, w->data,
                      m.row_bytes * static_cast<uint64_t>(w->rows));
      part_row += w->rows;
      continue;
    }
    const int64_t slice_rows = std::max<int64_t>(1, static_cast<int64_t>(kSliceBytes / w->row_bytes));
    std::vector<uint8_t> quants;
    std::vector<uint16_t> scales;
    for (int64_t first = 0; first < w->rows; first += slice_rows) {
      const int64_t n = std::min(slice_rows, w->rows - first);
      quants.resize(static_cast<size_t>(n) * m.row_bytes);
      scales.resize(static_cast<size_t>(n * blocks));
      split_quantized_rows(*w, first, n, quants.data(), scales.data());
      const int64_t row = part_row + first;
      transfer.upload(buffer, offset + static_cast<uint64_t>(row) * m.row_bytes, quants.data(), quants.size());
      transfer.upload(buffer, scales_offset + static_cast<uint64_t>(row * blocks) * 2, scales.data(),
                      scales.size() * 2);
    }
    part_row += w->rows;
  }
  return m;
}

DeviceMatrix matrix_rows(const DeviceMatrix& m, int64_t first_row, int64_t n_rows) {
  if (first_row < 0 || n_rows <= 0 || first_row + n_rows > m.rows) {
    fail("internal: rows [{}, {}) of a {}-row matrix", first_row, first_row + n_rows, m.rows);
  }
  DeviceMatrix part = m;
  part.rows = n_rows;
  part.data += static_cast<uint64_t>(first_row) * m.row_bytes;
  if (is_quantized(m.type)) part.scales += static_cast<uint64_t>(first_row * (m.cols / kQuantBlock)) * 2;
  return part;
}

}  // namespace channel::vulkan
