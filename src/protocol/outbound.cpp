#include "protocol/outbound.h"

#include <type_traits>

#include "core/error.h"
#include "protocol/payload_io.h"

namespace channel::protocol {

namespace {

// ---- decoders: the fields in wire order; PayloadReader throws on a short payload ----

StreamToken read_stream_token(PayloadReader& reader, StreamKind kind) {
  StreamToken token;
  token.kind = kind;
  token.token_id = reader.u32("token_id");
  token.clock = reader.u64("clock");
  token.active_layer_mask = reader.u64("active_layer_mask");
  token.token_type = static_cast<TokenType>(reader.u8("token_type"));
  reader.skip(1, "reserved byte 21");
  token.text = reader.prefixed("text");
  return token;
}

TurnComplete read_turn_complete(PayloadReader& reader) {
  TurnComplete turn;
  turn.tokens = reader.u32("tokens");
  turn.elapsed_ms = reader.u32("elapsed_ms");
  turn.tokens_per_second = reader.f32("tokens_per_second");
  turn.reason = static_cast<StopReason>(reader.u8("stop reason"));
  reader.skip(3, "zero bytes 13..15");
  return turn;
}

ToolCall read_tool_call(PayloadReader& reader) {
  ToolCall call;
  call.call_id = reader.u16("call_id");
  call.name = reader.prefixed("tool name");
  call.arguments = reader.rest();
  return call;
}

MemResponse read_mem_response(PayloadReader& reader) {
  MemResponse response;
  const uint8_t count = reader.u8("count");
  response.status = static_cast<MemResponseStatus>(reader.u8("status"));
  response.cursor = reader.u16("cursor");
  response.total_tokens = reader.u32("total_tokens");
  for (size_t i = 0; i < count; ++i) response.timestamps.push_back(reader.u64("timestamp"));
  return response;
}

Status read_status(PayloadReader& reader) {
  Status status;
  status.status = static_cast<EngineStatus>(reader.u8("status"));
  status.is_gpu = reader.u8("is_gpu") != 0;
  status.active_slots = reader.u16("active_slots");
  status.archived_diffs = reader.u16("archived_diffs");
  status.flags = reader.u16("flags");
  status.tokens_per_second = reader.f32("tokens_per_second");
  status.current = reader.u32("current");
  status.total = reader.u32("total");
  return status;
}

SnapshotStatus read_snapshot_status(PayloadReader& reader) {
  SnapshotStatus snapshot;
  snapshot.status = static_cast<SnapshotStatusCode>(reader.u8("status"));
  reader.skip(1, "reserved byte 1");
  snapshot.active_slots = reader.u16("active_slots");
  snapshot.clock = reader.u64("clock");
  snapshot.stream_id = reader.prefixed("stream id");
  return snapshot;
}

AutonomicResult read_autonomic_result(PayloadReader& reader) {
  AutonomicResult result;
  result.index = reader.u16("index");
  result.confidence = reader.f32("confidence");
  result.entropy = reader.f32("entropy");
  result.cost_ms = reader.f32("cost_ms");
  result.text = reader.prefixed("text");
  return result;
}

OutboundMessage read_outbound(uint16_t opcode, std::span<const uint8_t> payload) {
  PayloadReader reader(payload);
  switch (opcode) {
    case OP_STREAM_CONTENT: return read_stream_token(reader, StreamKind::Content);
    case OP_STREAM_THOUGHT: return read_stream_token(reader, StreamKind::Thought);
    case OP_TURN_COMPLETE: return read_turn_complete(reader);
    case OP_TOOL_CALL: return read_tool_call(reader);
    case OP_MEM_RESPONSE: return read_mem_response(reader);
    case OP_STATUS: return read_status(reader);
    case OP_SNAPSHOT_STATUS: return read_snapshot_status(reader);
    case OP_AUTONOMIC_RESULT: return read_autonomic_result(reader);
    case OP_PONG: return Pong{};
    case OP_ERROR: return ErrorMessage{.message = reader.rest()};
  }
  fail("not an outbound opcode");
}

// ---- encoders: the same fields in the same order ----

void write(PayloadWriter& out, const StreamToken& token) {
  out.u32(token.token_id).u64(token.clock).u64(token.active_layer_mask);
  out.u8(token.token_type).u8(0).prefixed(token.text, "text");
}

void write(PayloadWriter& out, const TurnComplete& turn) {
  out.u32(turn.tokens).u32(turn.elapsed_ms).f32(turn.tokens_per_second).u8(turn.reason).zeros(3);
}

void write(PayloadWriter& out, const ToolCall& call) {
  out.u16(call.call_id).prefixed(call.name, "tool name").bytes(call.arguments);
}

void write(PayloadWriter& out, const MemResponse& response) {
  out.u8(narrow_count<uint8_t>(response.timestamps.size(), "timestamp count")).u8(response.status);
  out.u16(response.cursor).u32(response.total_tokens);
  for (uint64_t timestamp : response.timestamps) out.u64(timestamp);
}

void write(PayloadWriter& out, const Status& status) {
  out.u8(status.status).u8(status.is_gpu ? 1 : 0).u16(status.active_slots).u16(status.archived_diffs);
  out.u16(status.flags).f32(status.tokens_per_second).u32(status.current).u32(status.total);
}

void write(PayloadWriter& out, const SnapshotStatus& snapshot) {
  out.u8(snapshot.status).u8(0).u16(snapshot.active_slots).u64(snapshot.clock);
  out.prefixed(snapshot.stream_id, "stream id");
}

void write(PayloadWriter& out, const AutonomicResult& result) {
  out.u16(result.index).f32(result.confidence).f32(result.entropy).f32(result.cost_ms);
  out.prefixed(result.text, "text");
}

void write(PayloadWriter&, const Pong&) {}

void write(PayloadWriter& out, const ErrorMessage& error) { out.bytes(error.message); }

}  // namespace

uint16_t opcode_of(const OutboundMessage& message) {
  return std::visit(
      [](const auto& payload) -> uint16_t {
        using Payload = std::decay_t<decltype(payload)>;
        if constexpr (std::is_same_v<Payload, StreamToken>) {
          return payload.kind == StreamKind::Thought ? OP_STREAM_THOUGHT : OP_STREAM_CONTENT;
        } else {
          return Payload::kOpcode;
        }
      },
      message);
}

std::vector<uint8_t> encode_frame(uint16_t msg_id, const OutboundMessage& message) {
  return encode_payload(msg_id, opcode_of(message), [&](PayloadWriter& out) {
    std::visit([&](const auto& payload) { write(out, payload); }, message);
  });
}

Decoded<OutboundMessage> decode_outbound(uint16_t opcode, std::span<const uint8_t> payload) {
  return decode_payload(opcode, [&] { return read_outbound(opcode, payload); });
}

}  // namespace channel::protocol
