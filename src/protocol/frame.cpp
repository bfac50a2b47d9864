#include "protocol/frame.h"

#include "core/error.h"

namespace channel::protocol {

std::vector<uint8_t> encode_frame(uint16_t msg_id, uint16_t opcode, std::span<const uint8_t> payload) {
  if (payload.size() > kMaxPayload) {
    fail("payload of {} bytes exceeds the protocol maximum of {} bytes", payload.size(), kMaxPayload);
  }
  const auto header = encode_header({msg_id, opcode, static_cast<uint32_t>(payload.size())});
  std::vector<uint8_t> frame;
  frame.reserve(kHeaderSize + payload.size());
  frame.insert(frame.end(), header.begin(), header.end());
  frame.insert(frame.end(), payload.begin(), payload.end());
  return frame;
}

}  // namespace channel::protocol
