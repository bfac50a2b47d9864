#include "model/gguf_format.h"

#include <fmt/ranges.h>

#include <limits>
#include <string>

#include "core/error.h"

namespace channel::gguf_format {
namespace {

// "f32, f16, ..." for error messages. ggml type ids are small, so probing the first 256 ids finds
// every type that ggml_type_traits() accepts without keeping a second list of them here.
std::string supported_type_names() {
  std::string names;
  for (uint32_t id = 0; id < 256; ++id) {
    if (const auto traits = ggml_type_traits(id)) {
      if (!names.empty()) names += ", ";
      names += traits->name;
    }
  }
  return names;
}

}  // namespace

std::string quote(std::string_view text) {
  constexpr size_t kMaxShown = 64;
  std::string quoted = "'";
  for (char c : text.substr(0, kMaxShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      quoted += c;
    } else {
      quoted += fmt::format("\\x{:02x}", byte);
    }
  }
  quoted += text.size() > kMaxShown ? "'..." : "'";
  return quoted;
}

bool is_value_type(uint32_t id) { return id <= static_cast<uint32_t>(GgufValueType::FLOAT64); }

size_t fixed_size(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::INT8:
    case GgufValueType::BOOL: return 1;
    case GgufValueType::UINT16:
    case GgufValueType::INT16: return 2;
    case GgufValueType::UINT32:
    case GgufValueType::INT32:
    case GgufValueType::FLOAT32: return 4;
    case GgufValueType::UINT64:
    case GgufValueType::INT64:
    case GgufValueType::FLOAT64: return 8;
    case GgufValueType::STRING:
    case GgufValueType::ARRAY: return 0;
  }
  return 0;
}

void check_key(std::string_view key) {
  if (key.empty()) fail("empty metadata key");
  if (key.size() > kMaxKeyBytes) {
    fail("metadata key {} is {} bytes long (at most {})", quote(key), key.size(), kMaxKeyBytes);
  }
}

void check_tensor_name(std::string_view name) {
  if (name.empty()) fail("empty tensor name");
  if (name.size() > kMaxTensorNameBytes) {
    fail("tensor name {} is {} bytes long (at most {})", quote(name), name.size(), kMaxTensorNameBytes);
  }
}

uint32_t alignment_from(const GgufValue& value) {
  if (value.type != GgufValueType::UINT32) {
    fail("{} must be a u32, not {}", kAlignmentKey, gguf_value_type_name(value.type));
  }
  const uint64_t alignment = std::get<uint64_t>(value.data);
  if (alignment == 0 || alignment % 8 != 0) {
    fail("{} is {}, which is not a nonzero multiple of 8", kAlignmentKey, alignment);
  }
  return static_cast<uint32_t>(alignment);
}

void check_dim_count(std::string_view name, size_t n_dims) {
  if (n_dims == 0 || n_dims > kMaxTensorDims) {
    fail("tensor {} has {} dimensions (must be 1 to {})", quote(name), n_dims, kMaxTensorDims);
  }
}

TensorLayout check_tensor(std::string_view name, std::span<const int64_t> dims, uint32_t type_id) {
  check_dim_count(name, dims.size());
  int64_t n_elements = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 1) fail("tensor {} dimension {} is {} (must be at least 1)", quote(name), i, dims[i]);
    if (__builtin_mul_overflow(n_elements, dims[i], &n_elements)) {
      fail("tensor {} of shape [{}] has more elements than fit in 64 bits", quote(name),
           fmt::join(dims, ", "));
    }
  }
  const auto traits = ggml_type_traits(type_id);
  if (!traits) {
    fail("tensor {} has type {}, which Channel does not support (supported: {})", quote(name),
         ggml_type_name(type_id), supported_type_names());
  }
  if (dims[0] % traits->block_elements != 0) {
    fail("tensor {} of type {} has rows of {} values, not a multiple of its block size {}", quote(name),
         traits->name, dims[0], traits->block_elements);
  }
  uint64_t n_bytes = 0;
  if (__builtin_mul_overflow(static_cast<uint64_t>(n_elements / traits->block_elements),
                             static_cast<uint64_t>(traits->block_bytes), &n_bytes)) {
    fail("tensor {} of shape [{}] has more bytes than fit in 64 bits", quote(name), fmt::join(dims, ", "));
  }
  return {traits->type, n_bytes};
}

uint64_t align_up(uint64_t offset, uint32_t alignment) {
  const uint64_t remainder = offset % alignment;
  if (remainder == 0) return offset;
  uint64_t aligned = 0;
  if (__builtin_add_overflow(offset, alignment - remainder, &aligned)) {
    fail("offset {} cannot be aligned to {} bytes", offset, alignment);
  }
  return aligned;
}

}  // namespace channel::gguf_format
