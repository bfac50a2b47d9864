#include "model/matrix_conversion.h"

#include <algorithm>
#include <new>
#include <vector>

#include "core/error.h"
#include "model/quantize.h"

namespace channel {
namespace {

constexpr std::align_val_t kAlignment{64};

}  // namespace

MatrixBytes::MatrixBytes(size_t size)
    : data_(static_cast<uint8_t*>(::operator new[](std::max<size_t>(size, 1), kAlignment))) {}

void MatrixBytes::AlignedDelete::operator()(uint8_t* p) const { ::operator delete[](p, kAlignment); }

ConvertedMatrix convert_matrix(const WeightMatrix& source, GgmlType target, ThreadPool& pool) {
  if (is_quantized(source.type)) {
    fail("internal error: a {} matrix would be requantized to {}", ggml_type_traits(source.type).name,
         ggml_type_traits(target).name);
  }
  WeightMatrix view = source;
  view.type = target;
  view.row_bytes = ggml_row_bytes(target, source.cols);
  ConvertedMatrix converted{MatrixBytes(view.row_bytes * static_cast<size_t>(source.rows)), view};
  uint8_t* out = converted.bytes.data();
  converted.view.data = out;
  const size_t row_bytes = view.row_bytes;
  pool.parallel_for(source.rows, [&](int64_t begin, int64_t end) {
    std::vector<float> values(static_cast<size_t>(source.cols));
    for (int64_t r = begin; r < end; ++r) {
      dequantize(source.type, source.row(r), source.cols, values.data());
      const std::vector<uint8_t> encoded = quantize_row(target, values);
      std::copy(encoded.begin(), encoded.end(), out + static_cast<size_t>(r) * row_bytes);
    }
  });
  return converted;
}

}  // namespace channel
