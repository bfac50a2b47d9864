// Little-endian field access for payloads, in wire order. Every layout of the protocol is a run of
// fixed-width integers, f32s (unaligned in places) and strings prefixed with a u16 length, so
// decoders and encoders are written as the sequence of fields the spec tables list. Both throw
// channel::Error naming the field; decode_payload and encode_payload put the opcode in front and
// give the codec's results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"
#include "protocol/decoded.h"
#include "protocol/frame.h"
#include "protocol/opcodes.h"

namespace channel::protocol {

// Reads fields front to back. A read past the end throws, so a decoder needs no length arithmetic
// of its own.
class PayloadReader {
 public:
  explicit PayloadReader(std::span<const uint8_t> payload) : payload_(payload) {}

  uint8_t u8(std::string_view field);
  uint16_t u16(std::string_view field);
  uint32_t u32(std::string_view field);
  uint64_t u64(std::string_view field);
  float f32(std::string_view field);
  std::string bytes(size_t n, std::string_view field);
  std::string prefixed(std::string_view field);  // u16 length, then that many bytes
  std::string rest();                            // everything not read yet
  void skip(size_t n, std::string_view field);

  size_t remaining() const { return payload_.size() - offset_; }

 private:
  std::span<const uint8_t> take(size_t n, std::string_view field);

  std::span<const uint8_t> payload_;
  size_t offset_ = 0;
};

// Appends fields front to back.
class PayloadWriter {
 public:
  PayloadWriter& u8(uint8_t value);
  PayloadWriter& u16(uint16_t value);
  PayloadWriter& u32(uint32_t value);
  PayloadWriter& u64(uint64_t value);
  PayloadWriter& f32(float value);
  PayloadWriter& bytes(std::string_view text);
  // u16 length, then the bytes; throws channel::Error when the text is longer than 65535 bytes.
  PayloadWriter& prefixed(std::string_view text, std::string_view field);
  PayloadWriter& zeros(size_t n);

  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<uint8_t> bytes_;
};

// `n` as the wire's count or length type, or channel::Error when it does not fit: encoders refuse
// what the layout cannot carry instead of truncating it.
template <typename T>
T narrow_count(size_t n, std::string_view field) {
  if (n > std::numeric_limits<T>::max()) {
    fail("{} ({}) does not fit its {}-bit field", field, n, 8 * sizeof(T));
  }
  return static_cast<T>(n);
}

// Runs `read` (which decodes a payload with a PayloadReader) and turns what it throws into a
// DecodeError that names the opcode.
template <typename Read>
auto decode_payload(uint16_t opcode, Read read) -> Decoded<decltype(read())> {
  try {
    return read();
  } catch (const Error& error) {
    return DecodeError{opcode_name(opcode) + ": " + error.what()};
  }
}

// The frame of the payload that `write` appends to a PayloadWriter; what it throws is rethrown
// with the opcode in front.
template <typename Write>
std::vector<uint8_t> encode_payload(uint16_t msg_id, uint16_t opcode, Write write) {
  PayloadWriter out;
  try {
    write(out);
  } catch (const Error& error) {
    fail("{}: {}", opcode_name(opcode), error.what());
  }
  return encode_frame(msg_id, opcode, out.take());
}

}  // namespace channel::protocol
