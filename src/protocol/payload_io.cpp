#include "protocol/payload_io.h"

#include <bit>

namespace channel::protocol {

namespace {

// Assembles the little-endian value in `bytes` (1 to 8 of them) whatever the host's byte order.
uint64_t little_endian(std::span<const uint8_t> bytes) {
  uint64_t value = 0;
  for (size_t i = bytes.size(); i-- > 0;) value = (value << 8) | bytes[i];
  return value;
}

}  // namespace

std::span<const uint8_t> PayloadReader::take(size_t n, std::string_view field) {
  if (n > remaining()) {
    fail("payload of {} bytes ends inside {} (needs bytes {}..{})", payload_.size(), field,
         offset_, offset_ + n - 1);
  }
  const auto taken = payload_.subspan(offset_, n);
  offset_ += n;
  return taken;
}

uint8_t PayloadReader::u8(std::string_view field) { return take(1, field)[0]; }
uint16_t PayloadReader::u16(std::string_view field) {
  return static_cast<uint16_t>(little_endian(take(2, field)));
}
uint32_t PayloadReader::u32(std::string_view field) {
  return static_cast<uint32_t>(little_endian(take(4, field)));
}
uint64_t PayloadReader::u64(std::string_view field) { return little_endian(take(8, field)); }
float PayloadReader::f32(std::string_view field) { return std::bit_cast<float>(u32(field)); }

std::string PayloadReader::bytes(size_t n, std::string_view field) {
  const auto taken = take(n, field);
  return {taken.begin(), taken.end()};
}

std::string PayloadReader::prefixed(std::string_view field) {
  const uint16_t length = u16(field);
  return bytes(length, field);
}

std::string PayloadReader::rest() { return bytes(remaining(), "the rest"); }

void PayloadReader::skip(size_t n, std::string_view field) { take(n, field); }

PayloadWriter& PayloadWriter::u8(uint8_t value) {
  bytes_.push_back(value);
  return *this;
}
PayloadWriter& PayloadWriter::u16(uint16_t value) { return u8(value & 0xFF).u8(value >> 8); }
PayloadWriter& PayloadWriter::u32(uint32_t value) {
  return u16(value & 0xFFFF).u16(static_cast<uint16_t>(value >> 16));
}
PayloadWriter& PayloadWriter::u64(uint64_t value) {
  return u32(value & 0xFFFFFFFF).u32(static_cast<uint32_t>(value >> 32));
}
PayloadWriter& PayloadWriter::f32(float value) { return u32(std::bit_cast<uint32_t>(value)); }

PayloadWriter& PayloadWriter::bytes(std::string_view text) {
  bytes_.insert(bytes_.end(), text.begin(), text.end());
  return *this;
}

PayloadWriter& PayloadWriter::prefixed(std::string_view text, std::string_view field) {
  return u16(narrow_count<uint16_t>(text.size(), field)).bytes(text);
}

PayloadWriter& PayloadWriter::zeros(size_t n) {
  bytes_.resize(bytes_.size() + n, 0);
  return *this;
}

}  // namespace channel::protocol
