// ggml tensor element types as GGUF stores them (ids and block layouts from ggml-common.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace channel {

enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q8_0 = 8,
  BF16 = 30,
};

// Block geometry of a type: `block_elements` values are stored in `block_bytes` bytes.
struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;
  int64_t block_elements;
  size_t block_bytes;
};

constexpr int64_t kQuantBlock = 32;  // Q4_0 and Q8_0 quantize in blocks of 32 values

// Q4_0 and Q8_0: block-quantized types, multiplied with Q8_0-quantized activations.
constexpr bool is_quantized(GgmlType type) { return type == GgmlType::Q4_0 || type == GgmlType::Q8_0; }

struct BlockQ4_0 {
  uint16_t d;          // fp16 scale
  uint8_t qs[16];      // low nibble of byte j = element j, high nibble = element j + 16; value (q - 8) * d
};
static_assert(sizeof(BlockQ4_0) == 18);

struct BlockQ8_0 {
  uint16_t d;          // fp16 scale
  int8_t qs[32];       // value q * d
};
static_assert(sizeof(BlockQ8_0) == 34);

// Traits of a supported type, or nullopt for any other id (including valid ggml types this
// engine does not compute with).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
const GgmlTypeTraits& ggml_type_traits(GgmlType type);

// Name of any ggml type id ("q4_K", "iq2_xxs", ...) for error messages; "type N" if unknown.
std::string_view ggml_type_name(uint32_t type_id);

// Bytes of one row of `n_elements` values; throws channel::Error when n_elements is not a
// multiple of the block size.
size_t ggml_row_bytes(GgmlType type, int64_t n_elements);

// Parses "f32", "f16", "bf16", "q8_0", "q4_0" (case-insensitive).
std::optional<GgmlType> ggml_type_from_name(std::string_view name);

}  // namespace channel
