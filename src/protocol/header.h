// The 16-byte frame header, identical in both directions (reference/original-channel.md §1.2):
//   u32 magic 0x53554C58 ("XLUS" on the wire) | u16 version 1 | u16 msg_id | u16 opcode |
//   u16 reserved 0 | u32 payload_len, all little-endian.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/decoded.h"

namespace channel::protocol {

inline constexpr uint32_t kMagic = 0x53554C58;
inline constexpr uint16_t kVersion = 1;
inline constexpr size_t kHeaderSize = 16;
// The documented maximum, 0 <= payload_len <= 64 MiB; the original's code enforces none.
inline constexpr uint32_t kMaxPayload = 64u << 20;

// The first six bytes of every valid header (magic and version). The frame reader looks for them
// to find the next frame after garbage.
inline constexpr std::array<uint8_t, 6> kHeaderPrefix = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00};

struct Header {
  uint16_t msg_id = 0;  // correlation id; replies carry the msg_id of the frame they answer
  uint16_t opcode = 0;  // an Opcode, or any other value a peer sent
  uint32_t payload_len = 0;
  bool operator==(const Header&) const = default;
};

// Writes magic, version and a zero reserved field around the header's fields.
std::array<uint8_t, kHeaderSize> encode_header(const Header& header);

// Refuses a wrong magic or version. The reserved field is ignored, as the original does.
// payload_len is not checked against kMaxPayload here: the frame reader needs the length of an
// oversized frame to skip it.
Decoded<Header> decode_header(std::span<const uint8_t, kHeaderSize> bytes);

}  // namespace channel::protocol
