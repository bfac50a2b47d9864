// The reading side of byte_writer.h, for files that may be truncated, corrupt or hostile: every
// read checks that its bytes are there first, and failures are channel::Error naming the field
// and its offset in the file.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/error.h"

namespace channel {

// Reads fields front to back within `bytes`; every read checks the bytes are there first.
// Offsets in messages are from the start of the file.
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, size_t file_offset, std::string where)
      : bytes_(bytes), base_(file_offset), where_(std::move(where)) {}

  std::span<const uint8_t> take(uint64_t n, std::string_view field) {
    if (n > remaining()) {
      fail("{}: {} at offset {} needs {} bytes, only {} left (truncated?)", where_, field, offset(), n, remaining());
    }
    const auto out = bytes_.subspan(position_, static_cast<size_t>(n));
    position_ += static_cast<size_t>(n);
    return out;
  }
  template <typename T>
  T integer(std::string_view field) {
    static_assert(std::is_integral_v<T>);
    using U = std::make_unsigned_t<T>;
    const auto b = take(sizeof(T), field);
    U value = 0;
    for (size_t i = 0; i < sizeof(T); ++i) value |= static_cast<U>(U{b[i]} << (8 * i));
    return static_cast<T>(value);
  }
  float f32(std::string_view field) { return std::bit_cast<float>(integer<uint32_t>(field)); }
  bool flag(std::string_view field) {
    const size_t at = offset();
    const uint8_t value = integer<uint8_t>(field);
    if (value > 1) fail("{}: {} at offset {} is {}, not 0 or 1", where_, field, at, value);
    return value == 1;
  }
  std::string text(uint64_t n, std::string_view field) {
    const auto b = take(n, field);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  template <typename T>
  std::vector<T> array(uint64_t count, std::string_view field) {
    if (count > remaining() / sizeof(T)) {
      fail("{}: {} ({} entries) at offset {} needs {} bytes, only {} left", where_, field, count, offset(),
           count * sizeof(T), remaining());
    }
    const auto b = take(count * sizeof(T), field);
    std::vector<T> values(static_cast<size_t>(count));
    if (!values.empty()) std::memcpy(values.data(), b.data(), b.size());  // memcpy takes no null pointer
    return values;
  }
  void expect_end() const {
    if (remaining() != 0) fail("{}: {} unread bytes at offset {}", where_, remaining(), offset());
  }
  size_t remaining() const { return bytes_.size() - position_; }
  size_t offset() const { return base_ + position_; }
  const std::string& where() const { return where_; }
  std::span<const uint8_t> consumed() const { return bytes_.first(position_); }

 private:
  std::span<const uint8_t> bytes_;
  size_t base_;
  size_t position_ = 0;
  std::string where_;
};

}  // namespace channel
