// A whole frame: a header and the payload it announces.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "protocol/header.h"

namespace channel::protocol {

struct Frame {
  Header header;
  std::vector<uint8_t> payload;  // header.payload_len bytes
  bool operator==(const Frame&) const = default;
};

// Header followed by the payload; throws channel::Error when the payload exceeds kMaxPayload,
// which no peer would accept.
std::vector<uint8_t> encode_frame(uint16_t msg_id, uint16_t opcode, std::span<const uint8_t> payload);

}  // namespace channel::protocol
