// GGUF wire-format constants and the structural rules that both the reader and the writer
// enforce, kept in one place so that every file the writer produces is one the reader accepts.
// Internal to the model module. The rules throw channel::Error with a message that does not
// name the file; the reader prefixes the origin.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/ggml_type.h"
#include "model/gguf.h"

namespace channel::gguf_format {

constexpr std::array<uint8_t, 4> kMagic = {'G', 'G', 'U', 'F'};
constexpr uint32_t kWrittenVersion = 3;
constexpr uint32_t kOldestReadableVersion = 2;  // v1 used u32 counts and is long obsolete
constexpr std::string_view kAlignmentKey = "general.alignment";
constexpr size_t kMaxKeyBytes = 65535;      // gguf.md
constexpr size_t kMaxTensorNameBytes = 63;  // ggml keeps names in char[GGML_MAX_NAME = 64] with a NUL
constexpr size_t kMaxTensorDims = 4;        // GGML_MAX_DIMS
// Arrays may hold arrays (llama.cpp itself never nests them); a limit keeps the recursive reader
// from exhausting the stack on a hostile file.
constexpr int kMaxArrayDepth = 4;

// `text` in single quotes for an error message, with bytes outside printable ASCII written as
// \xNN and anything past 64 bytes cut to "...": keys and names come from the file, and a message
// must stay one readable line whatever they hold.
std::string quote(std::string_view text);

// Whether `id` is one of the 13 value type ids.
bool is_value_type(uint32_t id);
// Encoded size of a fixed-size value; 0 for STRING and ARRAY, whose size depends on content.
size_t fixed_size(GgufValueType type);

void check_key(std::string_view key);
void check_tensor_name(std::string_view name);
// Validates a general.alignment value and returns it.
uint32_t alignment_from(const GgufValue& value);

// Refuses a tensor with no dimensions or more than kMaxTensorDims.
void check_dim_count(std::string_view name, size_t n_dims);

struct TensorLayout {
  GgmlType type;
  uint64_t n_bytes;
};
// Validates a tensor's shape and type id (dim count as above, each dim >= 1, element count and
// byte size representable, type supported, rows made of whole blocks); returns its data size.
TensorLayout check_tensor(std::string_view name, std::span<const int64_t> dims, uint32_t type_id);

// `offset` rounded up to a multiple of `alignment`; throws if that overflows.
uint64_t align_up(uint64_t offset, uint32_t alignment);

}  // namespace channel::gguf_format
