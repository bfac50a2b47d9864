// Payloads of the outbound opcodes (engine -> host), byte for byte as the original engine writes
// them (reference/original-channel.md §1.6; docs/protocol.md has the tables), including its
// unaligned u64s and f32s. Decoding is for tests and clients: it checks the layout only, and
// ignores bytes after the last field as clients should.
//
// Every member has an initializer (`{}` for strings, vectors and optionals) so that designated
// initializers may leave any of them out without -Wmissing-field-initializers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/decoded.h"
#include "protocol/opcodes.h"

namespace channel::protocol {

// Which of the two token opcodes carries a StreamToken.
enum class StreamKind : uint8_t { Content, Thought };

// OP_STREAM_CONTENT / OP_STREAM_THOUGHT, one frame per token, 24 + text_len bytes:
// u32 token_id | u64 clock @4 | u64 active_layer_mask @12 | u8 token_type @20 | u8 0 |
// u16 text_len @22 | text @24.
struct StreamToken {
  StreamKind kind = StreamKind::Content;
  uint32_t token_id = 0;
  uint64_t clock = 0;  // the position the token will occupy when fed
  uint64_t active_layer_mask = ACTIVE_LAYER_MASK_ALL;
  TokenType token_type = TOKEN_TYPE_TEXT;
  std::string text{};  // the raw vocabulary piece
  bool operator==(const StreamToken&) const = default;
};

// 16 bytes: u32 tokens | u32 elapsed_ms | f32 tokens_per_second | u8 reason | 3 zero bytes.
struct TurnComplete {
  static constexpr uint16_t kOpcode = OP_TURN_COMPLETE;
  uint32_t tokens = 0;
  uint32_t elapsed_ms = 0;
  float tokens_per_second = 0;
  StopReason reason = STOP_END_OF_TURN;
  bool operator==(const TurnComplete&) const = default;
};

// u16 call_id | u16 name_len | name | arguments to the end (the model's raw Gemma notation).
struct ToolCall {
  static constexpr uint16_t kOpcode = OP_TOOL_CALL;
  uint16_t call_id = 1;  // the original always sends 1
  std::string name{};
  std::string arguments{};
  bool operator==(const ToolCall&) const = default;
};

// 8 + 8 x count bytes: u8 count | u8 status | u16 cursor | u32 total_tokens | count x u64.
struct MemResponse {
  static constexpr uint16_t kOpcode = OP_MEM_RESPONSE;
  MemResponseStatus status = MEM_STATUS_OK;
  uint16_t cursor = 0;        // always 0 in the original
  uint32_t total_tokens = 0;  // always 0 in the original
  std::vector<uint64_t> timestamps{};  // at most 255; ms since the epoch
  bool operator==(const MemResponse&) const = default;
};

// 20 bytes: u8 status | u8 is_gpu | u16 active_slots | u16 archived_diffs | u16 flags |
// f32 tokens_per_second | u32 current | u32 total.
struct Status {
  static constexpr uint16_t kOpcode = OP_STATUS;
  EngineStatus status = STATUS_IDLE;
  bool is_gpu = false;
  uint16_t active_slots = 0;
  uint16_t archived_diffs = 0;
  uint16_t flags = 0;  // STATUS_FLAG_SATURATED
  float tokens_per_second = 0;
  uint32_t current = 0;  // progress, in tokens
  uint32_t total = 0;
  bool operator==(const Status&) const = default;
};

// 14 + id_len bytes: u8 status | u8 0 | u16 active_slots | u64 clock @4 | u16 stream_id_len @12 |
// stream_id.
struct SnapshotStatus {
  static constexpr uint16_t kOpcode = OP_SNAPSHOT_STATUS;
  SnapshotStatusCode status = SNAPSHOT_STATUS_SAVED;
  uint16_t active_slots = 0;
  uint64_t clock = 0;
  std::string stream_id{};
  bool operator==(const SnapshotStatus&) const = default;
};

// 16 + text_len bytes: u16 index | f32 confidence @2 | f32 entropy @6 | f32 cost_ms @10 |
// u16 text_len @14 | text.
struct AutonomicResult {
  static constexpr uint16_t kOpcode = OP_AUTONOMIC_RESULT;
  uint16_t index = 0;  // into the surviving candidates; 0 for generative probes
  float confidence = 0;
  float entropy = 0;  // nats
  float cost_ms = 0;
  std::string text{};  // generative probes only
  bool operator==(const AutonomicResult&) const = default;
};

// Empty payload.
struct Pong {
  static constexpr uint16_t kOpcode = OP_PONG;
  bool operator==(const Pong&) const = default;
};

// The payload is the message, UTF-8, with no code.
struct ErrorMessage {
  static constexpr uint16_t kOpcode = OP_ERROR;
  std::string message{};
  bool operator==(const ErrorMessage&) const = default;
};

using OutboundMessage = std::variant<StreamToken, TurnComplete, ToolCall, MemResponse, Status,
                                     SnapshotStatus, AutonomicResult, Pong, ErrorMessage>;

uint16_t opcode_of(const OutboundMessage& message);

// The whole frame (header and payload) as the original writes it; throws channel::Error for what
// the layout cannot carry (a string over 65535 bytes, more than 255 timestamps).
std::vector<uint8_t> encode_frame(uint16_t msg_id, const OutboundMessage& message);

// Decodes the payload of an outbound frame; refuses an unknown opcode (inbound ones included), a
// payload too short for its layout and a length or count running past the payload.
Decoded<OutboundMessage> decode_outbound(uint16_t opcode, std::span<const uint8_t> payload);

}  // namespace channel::protocol
