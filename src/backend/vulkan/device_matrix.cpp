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
  const uint64_t alignment = is_quantized(w.type) ? kAlignment : w.type == GgmlType::F32 ? 4 : 2;
  if (offset % alignment != 0) fail("internal: weight matrix offset {} not {}-byte aligned", offset, alignment);
  if (w.cols <= 0 || w.rows <= 0 || (is_quantized(w.type) && w.cols % kQuantBlock != 0)) {
    fail("Vulkan: a {} x {} {} matrix cannot be uploaded", w.rows, w.cols, ggml_type_traits(w.type).name);
  }
  DeviceMatrix m{w.type, buffer.address() + offset, 0, w.rows, w.cols, device_row_bytes(w.type, w.cols)};
  if (!is_quantized(w.type)) {
    transfer.upload(buffer, offset, w.data, m.row_bytes * static_cast<uint64_t>(w.rows));
    return m;
  }
  const uint64_t scales_offset = offset + align16(m.row_bytes * static_cast<uint64_t>(w.rows));
  m.scales = buffer.address() + scales_offset;
  const int64_t blocks = w.cols / kQuantBlock;
  const int64_t slice_rows = std::max<int64_t>(1, static_cast<int64_t>(kSliceBytes / w.row_bytes));
  std::vector<uint8_t> quants;
  std::vector<uint16_t> scales;
  for (int64_t first = 0; first < w.rows; first += slice_rows) {
    const int64_t n = std::min(slice_rows, w.rows - first);
    quants.resize(static_cast<size_t>(n) * m.row_bytes);
    scales.resize(static_cast<size_t>(n * blocks));
    split_quantized_rows(w, first, n, quants.data(), scales.data());
    transfer.upload(buffer, offset + static_cast<uint64_t>(first) * m.row_bytes, quants.data(), quants.size());
    transfer.upload(buffer, scales_offset + static_cast<uint64_t>(first * blocks) * 2, scales.data(),
                    scales.size() * 2);
  }
  return m;
}

}  // namespace channel::vulkan
