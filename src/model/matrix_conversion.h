// Re-encodes a weight matrix in another type, row by row through f32 with the bit-exact ggml
// reference quantizers of quantize.h, so a converted matrix holds the bytes llama.cpp's
// quantizer writes for it.
#pragma once

#include <cstdint>
#include <memory>

#include "core/thread_pool.h"
#include "model/weight_matrix.h"

namespace channel {

// Bytes of a converted matrix, aligned as a mapped GGUF aligns its tensors (or better).
class MatrixBytes {
 public:
  explicit MatrixBytes(size_t size);
  uint8_t* data() { return data_.get(); }
  const uint8_t* data() const { return data_.get(); }

 private:
  struct AlignedDelete {
    void operator()(uint8_t* p) const;
  };
  std::unique_ptr<uint8_t[], AlignedDelete> data_;
};

// The conversion of `source` to `target`: `view` reads `bytes`, which the caller keeps alive.
struct ConvertedMatrix {
  MatrixBytes bytes;
  WeightMatrix view;
};

// Rows are split over the pool's threads. `source` must not be quantized (it is decoded to f32
// first, and requantizing would compound two roundings).
ConvertedMatrix convert_matrix(const WeightMatrix& source, GgmlType target, ThreadPool& pool);

}  // namespace channel
