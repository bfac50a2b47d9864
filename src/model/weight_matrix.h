// A view of one 2-D weight tensor in its GGUF encoding, used in place from the model mapping.
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/ggml_type.h"

namespace channel {

// How a matrix's bytes are laid out.
enum class WeightLayout : uint8_t {
  kGguf,           // row-major as GGUF stores it
  kRowGroups,  // the CPU backend's repacked Q4_0 / Q8_0 copy (backend/cpu/row_groups.h)
};

// Row-major as GGUF stores it: `rows` rows (ne1) of `cols` values (ne0), unless `layout` says
// the CPU backend repacked it (then row() does not apply).
struct WeightMatrix {
  GgmlType type = GgmlType::F32;
  const uint8_t* data = nullptr;
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_bytes = 0;  // ggml_row_bytes(type, cols)
  WeightLayout layout = WeightLayout::kGguf;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

}  // namespace channel
