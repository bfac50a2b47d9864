// GgufWriter: builds GGUF v3 files that the reader accepts.
#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "model/gguf.h"
#include "model/gguf_format.h"

namespace channel {
namespace {

// GGUF is little-endian; values are appended with their in-memory bytes.
static_assert(std::endian::native == std::endian::little, "the GGUF writer assumes a little-endian host");

// Appends GGUF encodings to a byte vector.
class Encoder {
 public:
  explicit Encoder(std::vector<uint8_t>& out) : out_(out) {}

  void put_bytes(const void* data, size_t n) {
    if (n == 0) return;
    // resize + memcpy rather than insert(): GCC 12 warns falsely (-Wstringop-overflow) on the latter.
    const size_t old_size = out_.size();
    out_.resize(old_size + n);
    std::memcpy(out_.data() + old_size, data, n);
  }

  template <typename T>
  void put(T value) {
    put_bytes(&value, sizeof(T));
  }

  void put_string(std::string_view text) {
    put<uint64_t>(text.size());
    put_bytes(text.data(), text.size());
  }

  // The value's payload, without its type id (arrays carry their element type and count).
  void put_value(const GgufValue& value) {
    const size_t size = gguf_format::fixed_size(value.type);
    if (const auto* u = std::get_if<uint64_t>(&value.data)) {
      put_bytes(u, size);  // the low bytes of an in-range integer are its narrower encoding
    } else if (const auto* i = std::get_if<int64_t>(&value.data)) {
      put_bytes(i, size);  // two's complement truncates the same way
    } else if (const auto* f = std::get_if<double>(&value.data)) {
      if (value.type == GgufValueType::FLOAT32) {
        put(static_cast<float>(*f));
      } else {
        put(*f);
      }
    } else if (const auto* b = std::get_if<bool>(&value.data)) {
      put<uint8_t>(*b ? 1 : 0);
    } else if (const auto* s = std::get_if<std::string_view>(&value.data)) {
      put_string(*s);
    } else {
      const GgufArray& array = *std::get<std::shared_ptr<GgufArray>>(value.data);
      put(static_cast<uint32_t>(array.element_type));
      put<uint64_t>(array.elements.size());
      for (const auto& element : array.elements) put_value(element);
    }
  }

 private:
  std::vector<uint8_t>& out_;
};

// Index of the `GgufValue::data` alternative that holds values of `type`.
size_t data_alternative(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8:
    case GgufValueType::UINT16:
    case GgufValueType::UINT32:
    case GgufValueType::UINT64: return 0;
    case GgufValueType::INT8:
    case GgufValueType::INT16:
    case GgufValueType::INT32:
    case GgufValueType::INT64: return 1;
    case GgufValueType::FLOAT32:
    case GgufValueType::FLOAT64: return 2;
    case GgufValueType::BOOL: return 3;
    case GgufValueType::STRING: return 4;
    case GgufValueType::ARRAY: return 5;
  }
  return 0;
}

void check_integer_range(const GgufValue& value, std::string_view key) {
  const size_t bits = 8 * gguf_format::fixed_size(value.type);
  if (bits == 64) return;
  if (const auto* u = std::get_if<uint64_t>(&value.data); u != nullptr && (*u >> bits) != 0) {
    fail("value of {} is {}, which does not fit in {}", gguf_format::quote(key), *u,
         gguf_value_type_name(value.type));
  }
  if (const auto* i = std::get_if<int64_t>(&value.data)) {
    const int64_t limit = int64_t{1} << (bits - 1);
    if (*i < -limit || *i >= limit) {
      fail("value of {} is {}, which does not fit in {}", gguf_format::quote(key), *i,
           gguf_value_type_name(value.type));
    }
  }
}

// A copy of `value` that owns all its strings, after checking that it is one the reader would
// accept back (consistent type and data, integers in range, arrays of one type, bounded nesting).
// `depth` counts the arrays around the value.
GgufValue owned_copy(const GgufValue& value, std::string_view key, int depth) {
  if (!gguf_format::is_value_type(static_cast<uint32_t>(value.type))) {
    fail("value of {} has unknown type {}", gguf_format::quote(key), static_cast<uint32_t>(value.type));
  }
  if (value.data.index() != data_alternative(value.type)) {
    fail("value of {} is declared {} but holds data of another type", gguf_format::quote(key),
         gguf_value_type_name(value.type));
  }
  check_integer_range(value, key);
  if (const auto* s = std::get_if<std::string_view>(&value.data)) return GgufValue::string(std::string(*s));
  const auto* array = std::get_if<std::shared_ptr<GgufArray>>(&value.data);
  if (array == nullptr) return value;  // scalars own nothing

  if (*array == nullptr) fail("value of {} is a null array", gguf_format::quote(key));
  if (depth + 1 > gguf_format::kMaxArrayDepth) {
    fail("value of {} nests arrays more than {} deep", gguf_format::quote(key), gguf_format::kMaxArrayDepth);
  }
  std::vector<GgufValue> elements;
  elements.reserve((*array)->elements.size());
  for (const auto& element : (*array)->elements) {
    if (element.type != (*array)->element_type) {
      fail("value of {} is an array of {} holding a {}", gguf_format::quote(key),
           gguf_value_type_name((*array)->element_type), gguf_value_type_name(element.type));
    }
    elements.push_back(owned_copy(element, key, depth + 1));
  }
  return GgufValue::array((*array)->element_type, std::move(elements));
}

// Hands `n` zero bytes to `sink`, from a small constant block: an alignment may be up to 4 GiB.
void emit_zeros(const std::function<void(std::span<const uint8_t>)>& sink, uint64_t n) {
  static constexpr std::array<uint8_t, 4096> kZeros{};
  while (n > 0) {
    const size_t chunk = std::min<uint64_t>(n, kZeros.size());
    sink(std::span(kZeros).first(chunk));
    n -= chunk;
  }
}

}  // namespace

void GgufWriter::set(std::string key, GgufValue value) {
  gguf_format::check_key(key);
  GgufValue owned = owned_copy(value, key, 0);
  if (key == gguf_format::kAlignmentKey) alignment_ = gguf_format::alignment_from(owned);
  const auto existing =
      std::find_if(metadata_.begin(), metadata_.end(), [&](const auto& entry) { return entry.first == key; });
  if (existing != metadata_.end()) {
    existing->second = std::move(owned);
  } else {
    metadata_.emplace_back(std::move(key), std::move(owned));
  }
}

void GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                            std::vector<uint8_t> data) {
  add_shared_tensor(std::move(name), type, std::move(dims),
                    std::make_shared<const std::vector<uint8_t>>(std::move(data)));
}

void GgufWriter::add_shared_tensor(std::string name, GgmlType type, std::vector<int64_t> dims,
                                   std::shared_ptr<const std::vector<uint8_t>> data) {
  gguf_format::check_tensor_name(name);
  if (data == nullptr) fail("tensor {} has no data", gguf_format::quote(name));
  if (std::any_of(tensors_.begin(), tensors_.end(),
                  [&](const auto& tensor) { return tensor.name == name; })) {
    fail("duplicate tensor {}", gguf_format::quote(name));
  }
  const auto layout = gguf_format::check_tensor(name, dims, static_cast<uint32_t>(type));
  if (data->size() != layout.n_bytes) {
    fail("tensor {} has {} bytes of data, but its shape and type need {}", gguf_format::quote(name),
         data->size(), layout.n_bytes);
  }
  tensors_.push_back({std::move(name), type, std::move(dims), std::move(data)});
}

void GgufWriter::emit(const std::function<void(std::span<const uint8_t>)>& sink) const {
  std::vector<uint8_t> header;
  Encoder encoder(header);
  encoder.put_bytes(gguf_format::kMagic.data(), gguf_format::kMagic.size());
  encoder.put(gguf_format::kWrittenVersion);
  encoder.put<uint64_t>(tensors_.size());
  encoder.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    encoder.put_string(key);
    encoder.put(static_cast<uint32_t>(value.type));
    encoder.put_value(value);
  }
  uint64_t data_offset = 0;  // relative to the data section
  for (const auto& tensor : tensors_) {
    encoder.put_string(tensor.name);
    encoder.put<uint32_t>(static_cast<uint32_t>(tensor.dims.size()));
    for (int64_t dim : tensor.dims) encoder.put<uint64_t>(static_cast<uint64_t>(dim));
    encoder.put(static_cast<uint32_t>(tensor.type));
    encoder.put<uint64_t>(data_offset);
    data_offset = gguf_format::align_up(data_offset + tensor.data->size(), alignment_);
  }
  // Padding aligns the data section, so a file without tensors needs none (the reader agrees);
  // padding anyway would make a tiny file with a huge legal alignment gigabytes long.
  sink(header);
  if (!tensors_.empty()) {
    emit_zeros(sink, gguf_format::align_up(header.size(), alignment_) - header.size());
  }
  for (const auto& tensor : tensors_) {
    sink(*tensor.data);
    emit_zeros(sink, gguf_format::align_up(tensor.data->size(), alignment_) - tensor.data->size());
  }
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> bytes;
  emit([&](std::span<const uint8_t> piece) { bytes.insert(bytes.end(), piece.begin(), piece.end()); });
  return bytes;
}

void GgufWriter::write(const std::string& path) const {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) fail("cannot create '{}': {}", path, std::strerror(errno));
  bool failed = false;
  int error = 0;
  const auto record_failure = [&] {
    if (!failed) error = errno;
    failed = true;
  };
  emit([&](std::span<const uint8_t> piece) {
    if (!failed && !piece.empty() && std::fwrite(piece.data(), 1, piece.size(), file) != piece.size()) {
      record_failure();
    }
  });
  if (std::fclose(file) != 0) record_failure();
  if (failed) {
    std::remove(path.c_str());  // leave no half-written model behind
    fail("cannot write '{}': {}", path, std::strerror(error));
  }
}

}  // namespace channel
