// Little-endian encoding of a file's fields into bytes, for the formats Channel writes itself
// (snapshots, the episode store): integers byte by byte so the file does not depend on the
// host's order, arrays appended as the (little-endian) host holds them.
#pragma once

#include <bit>
#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace channel {

class ByteWriter {
 public:
  template <typename T>
  ByteWriter& integer(T value) {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    for (size_t i = 0; i < sizeof(T); ++i) bytes_.push_back(static_cast<uint8_t>(static_cast<U>(value) >> (8 * i)));
    return *this;
  }
  ByteWriter& flag(bool value) { return integer<uint8_t>(value ? 1 : 0); }
  ByteWriter& f32(float value) { return integer(std::bit_cast<uint32_t>(value)); }
  ByteWriter& raw(std::span<const uint8_t> data) {
    bytes_.insert(bytes_.end(), data.begin(), data.end());
    return *this;
  }
  ByteWriter& text(std::string_view value) {
    return raw({reinterpret_cast<const uint8_t*>(value.data()), value.size()});
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

// Arrays (keys, values, logits) are written and read as the host holds them. Channel already
// requires a little-endian host (GGUF weights are used in place), so this is the files' order.
static_assert(std::endian::native == std::endian::little, "arrays are stored in host order");

template <typename T>
std::span<const uint8_t> bytes_of(const std::vector<T>& values) {
  return {reinterpret_cast<const uint8_t*>(values.data()), values.size() * sizeof(T)};
}

}  // namespace channel
