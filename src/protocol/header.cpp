#include "protocol/header.h"

#include <fmt/format.h>

#include <algorithm>

#include "protocol/payload_io.h"

namespace channel::protocol {

std::array<uint8_t, kHeaderSize> encode_header(const Header& header) {
  PayloadWriter writer;
  writer.u32(kMagic).u16(kVersion).u16(header.msg_id).u16(header.opcode).u16(0).u32(
      header.payload_len);
  const auto bytes = writer.take();
  std::array<uint8_t, kHeaderSize> encoded{};
  std::copy(bytes.begin(), bytes.end(), encoded.begin());
  return encoded;
}

Decoded<Header> decode_header(std::span<const uint8_t, kHeaderSize> bytes) {
  // Sixteen bytes hold every field, so these reads cannot throw.
  PayloadReader reader(bytes);
  const uint32_t magic = reader.u32("magic");
  const uint16_t version = reader.u16("version");
  Header header;
  header.msg_id = reader.u16("msg_id");
  header.opcode = reader.u16("opcode");
  reader.skip(2, "reserved");
  header.payload_len = reader.u32("payload_len");
  if (magic != kMagic) {
    return DecodeError{fmt::format("bad magic 0x{:08X} (expected 0x{:08X})", magic, kMagic)};
  }
  if (version != kVersion) {
    return DecodeError{fmt::format("unsupported protocol version {} (expected {})", version, kVersion)};
  }
  return header;
}

}  // namespace channel::protocol
