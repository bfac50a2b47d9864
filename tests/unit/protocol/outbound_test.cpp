// Outbound payloads (engine -> host) byte for byte against frames written out by hand from the
// tables of reference/original-channel.md §1.6, including the unaligned u64s of token frames and
// the unaligned f32s of AUTONOMIC_RESULT; and the decoder clients use on malformed payloads.
#include "protocol/outbound.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "protocol/frame.h"
#include "protocol_samples.h"
#include "test_bytes.h"

namespace channel::protocol {
namespace {

using test::Bytes;
using test::payload_of;

// The message encodes to exactly `frame` (msg_id 0x1234), and the frame's payload decodes back
// to the message.
void expect_wire(const OutboundMessage& message, const Bytes& frame) {
  EXPECT_EQ(encode_frame(0x1234, message), frame);
  const auto decoded = decode_outbound(opcode_of(message), payload_of(frame));
  ASSERT_TRUE(decoded.ok()) << decoded.error().reason;
  EXPECT_EQ(decoded.value(), message);
}

// The reason a payload is refused, "" if it is not.
std::string refusal(uint16_t opcode, const Bytes& payload) {
  const auto decoded = decode_outbound(opcode, payload);
  return decoded.ok() ? "" : decoded.error().reason;
}

// ---- byte for byte ----

TEST(OutboundWire, StreamContent) {
  expect_wire(StreamToken{.kind = StreamKind::Content, .token_id = 9259, .clock = 41, .text = "Hi"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x01, 0x01, 0x00, 0x00, 0x1A, 0x00, 0x00, 0x00,
               0x2B, 0x24, 0x00, 0x00,                          // token_id 9259
               0x29, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // clock 41 at offset 4
               0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00,  // active_layer_mask, 48 bits
               0x00,                                            // token_type TEXT
               0x00,                                            // reserved
               0x02, 0x00,                                      // text_len
               'H', 'i'});
}

TEST(OutboundWire, StreamThought) {
  expect_wire(StreamToken{.kind = StreamKind::Thought, .token_id = 236761, .clock = (uint64_t{2} << 32) + 7,
                          .active_layer_mask = 0x0102030405060708, .token_type = TOKEN_TYPE_CONTROL, .text = "."},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x02, 0x01, 0x00, 0x00, 0x19, 0x00, 0x00, 0x00,
               0xD9, 0x9C, 0x03, 0x00,                          // token_id 236761
               0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00,  // clock 2^33 + 7
               0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // active_layer_mask
               0x03, 0x00, 0x01, 0x00, '.'});
}

TEST(OutboundWire, TurnComplete) {
  expect_wire(TurnComplete{.tokens = 12, .elapsed_ms = 480, .tokens_per_second = 22.9f, .reason = STOP_ELASTIC_YIELD},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x03, 0x01, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
               0x0C, 0x00, 0x00, 0x00,  // tokens
               0xE0, 0x01, 0x00, 0x00,  // elapsed_ms 480
               0x33, 0x33, 0xB7, 0x41,  // 22.9 tok/s
               0x04,                    // STOP_ELASTIC_YIELD
               0x00, 0x00, 0x00});
}

TEST(OutboundWire, ToolCall) {
  expect_wire(ToolCall{.call_id = 1, .name = "f", .arguments = "{}"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x04, 0x01, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
               0x01, 0x00,       // call_id
               0x01, 0x00, 'f',  // name
               '{', '}'});       // arguments to the end
}

TEST(OutboundWire, MemResponse) {
  expect_wire(MemResponse{.status = MEM_STATUS_OK, .timestamps = {1717000000000, 1717000123456}},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x05, 0x01, 0x00, 0x00, 0x18, 0x00, 0x00, 0x00,
               0x02,                    // count
               0x00,                    // status OK
               0x00, 0x00,              // cursor
               0x00, 0x00, 0x00, 0x00,  // total injected tokens
               0x00, 0xD2, 0x2C, 0xC5, 0x8F, 0x01, 0x00, 0x00,
               0x40, 0xB4, 0x2E, 0xC5, 0x8F, 0x01, 0x00, 0x00});
}

TEST(OutboundWire, MemResponseNoMatch) {
  expect_wire(MemResponse{.status = MEM_STATUS_NO_MATCH},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x05, 0x01, 0x00, 0x00, 0x08, 0x00, 0x00, 0x00,
               0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
}

TEST(OutboundWire, Status) {
  expect_wire(Status{.status = STATUS_GENERATING, .is_gpu = true, .active_slots = 812, .archived_diffs = 3,
                     .flags = STATUS_FLAG_SATURATED, .tokens_per_second = 31.5f, .current = 16, .total = 640},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x06, 0x01, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
               0x02,                    // GENERATING
               0x01,                    // is_gpu
               0x2C, 0x03,              // active_slots 812
               0x03, 0x00,              // archived_diffs
               0x01, 0x00,              // flags SATURATED
               0x00, 0x00, 0xFC, 0x41,  // 31.5 tok/s
               0x10, 0x00, 0x00, 0x00,  // current
               0x80, 0x02, 0x00, 0x00});  // total 640
}

TEST(OutboundWire, StartupStatusIsAllZero) {
  Bytes frame = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x00, 0x00, 0x06, 0x01, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00};
  frame.resize(frame.size() + 20, 0);
  EXPECT_EQ(encode_frame(0, Status{}), frame);
}

TEST(OutboundWire, SnapshotStatus) {
  expect_wire(SnapshotStatus{.status = SNAPSHOT_STATUS_LOADED, .active_slots = 700, .clock = 123456, .stream_id = "ID"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x07, 0x01, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
               0x01,                                            // LOADED
               0x00,                                            // reserved
               0xBC, 0x02,                                      // active_slots 700
               0x40, 0xE2, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00,  // clock 123456 at offset 4
               0x02, 0x00, 'I', 'D'});
}

TEST(OutboundWire, AutonomicResultWithUnalignedFloats) {
  expect_wire(AutonomicResult{.index = 1, .confidence = 0.875f, .entropy = 0.37f, .cost_ms = 14.0f},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0C, 0x01, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00,
               0x01, 0x00,              // index
               0x00, 0x00, 0x60, 0x3F,  // confidence 0.875 at offset 2
               0xA4, 0x70, 0xBD, 0x3E,  // entropy 0.37 at offset 6
               0x00, 0x00, 0x60, 0x41,  // cost_ms 14 at offset 10
               0x00, 0x00});            // text_len
}

TEST(OutboundWire, AutonomicResultGenerative) {
  expect_wire(AutonomicResult{.cost_ms = 52.0f, .text = "Blue"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0C, 0x01, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
               0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x50, 0x42,
               0x04, 0x00, 'B', 'l', 'u', 'e'});
}

TEST(OutboundWire, Pong) {
  expect_wire(Pong{}, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0E, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
}

TEST(OutboundWire, Error) {
  expect_wire(ErrorMessage{.message = "bad"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0xFF, 0x01, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
               'b', 'a', 'd'});
}

TEST(OutboundWire, EverySampleRoundTrips) {
  for (const auto& message : test::outbound_samples()) {
    const auto frame = encode_frame(7, message);
    const auto decoded = decode_outbound(opcode_of(message), payload_of(frame));
    ASSERT_TRUE(decoded.ok()) << decoded.error().reason;
    EXPECT_EQ(decoded.value(), message) << opcode_name(opcode_of(message));
  }
}

// ---- malformed payloads (what a client sees from a broken engine) ----

TEST(OutboundMalformed, PayloadTooShortForItsOpcode) {
  EXPECT_EQ(refusal(OP_STREAM_CONTENT, Bytes(21, 0)),
            "OP_STREAM_CONTENT: payload of 21 bytes ends inside reserved byte 21 (needs bytes 21..21)");
  EXPECT_EQ(refusal(OP_TURN_COMPLETE, Bytes(15, 0)),
            "OP_TURN_COMPLETE: payload of 15 bytes ends inside zero bytes 13..15 (needs bytes 13..15)");
  EXPECT_EQ(refusal(OP_TOOL_CALL, Bytes(3, 0)), "OP_TOOL_CALL: payload of 3 bytes ends inside tool name (needs bytes 2..3)");
  EXPECT_EQ(refusal(OP_MEM_RESPONSE, Bytes(7, 0)),
            "OP_MEM_RESPONSE: payload of 7 bytes ends inside total_tokens (needs bytes 4..7)");
  EXPECT_EQ(refusal(OP_STATUS, Bytes(19, 0)), "OP_STATUS: payload of 19 bytes ends inside total (needs bytes 16..19)");
  EXPECT_EQ(refusal(OP_SNAPSHOT_STATUS, Bytes(13, 0)),
            "OP_SNAPSHOT_STATUS: payload of 13 bytes ends inside stream id (needs bytes 12..13)");
  EXPECT_EQ(refusal(OP_AUTONOMIC_RESULT, Bytes(15, 0)),
            "OP_AUTONOMIC_RESULT: payload of 15 bytes ends inside text (needs bytes 14..15)");
}

TEST(OutboundMalformed, LengthsRunningPastThePayload) {
  Bytes token(24, 0);
  token[22] = 3;  // text_len 3, nothing follows
  EXPECT_EQ(refusal(OP_STREAM_THOUGHT, token),
            "OP_STREAM_THOUGHT: payload of 24 bytes ends inside text (needs bytes 24..26)");
  const Bytes response = {0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  EXPECT_EQ(refusal(OP_MEM_RESPONSE, response),
            "OP_MEM_RESPONSE: payload of 16 bytes ends inside timestamp (needs bytes 16..23)");
}

TEST(OutboundMalformed, UnknownAndInboundOpcodes) {
  EXPECT_EQ(refusal(0x0108, {}), "opcode 0x0108: not an outbound opcode");
  EXPECT_EQ(refusal(OP_PING, {}), "OP_PING: not an outbound opcode");
}

TEST(OutboundMalformed, BytesAfterTheLastFieldAreIgnored) {
  Bytes status(20, 0);
  status.push_back(0xEE);
  EXPECT_EQ(refusal(OP_STATUS, status), "");
}

// ---- what the encoder refuses to write ----

TEST(OutboundEncode, RefusesWhatTheLayoutCannotCarry) {
  EXPECT_THROW(encode_frame(1, StreamToken{.text = std::string(65536, 'x')}), Error);
  EXPECT_THROW(encode_frame(1, MemResponse{.timestamps = std::vector<uint64_t>(256)}), Error);
  EXPECT_NO_THROW(encode_frame(1, MemResponse{.timestamps = std::vector<uint64_t>(255)}));
  EXPECT_THROW(encode_frame(1, SnapshotStatus{.stream_id = std::string(65536, 'x')}), Error);
}

}  // namespace
}  // namespace channel::protocol
