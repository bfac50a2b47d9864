// Opcodes, enumerations and flags of the original engine's wire protocol, with its names and
// values (reference/original-channel.md §1.3-1.4, which follow its src/protocol.zig). The enums
// are unscoped with a fixed width so that a field decoded from the wire can hold any value, known
// or not, and compares directly with the names.
#pragma once

#include <cstdint>
#include <string>

namespace channel::protocol {

enum Opcode : uint16_t {
  // Inbound (host -> engine).
  OP_STREAM_INPUT = 0x0001,
  OP_ABORT = 0x0002,
  OP_MEM_QUERY = 0x0003,
  OP_SET_CONFIG = 0x0004,
  OP_TOOL_RETURN = 0x0005,
  OP_MEM_COMMIT = 0x0006,
  OP_SET_SYSTEM = 0x0007,
  OP_SNAPSHOT_SAVE = 0x0008,
  OP_SNAPSHOT_LOAD = 0x0009,
  OP_RESUME = 0x000A,
  OP_PING = 0x000E,
  OP_SHUTDOWN = 0x000F,
  OP_PROBE_AUTONOMIC = 0x0012,
  // Outbound (engine -> host).
  OP_STREAM_CONTENT = 0x0101,
  OP_STREAM_THOUGHT = 0x0102,
  OP_TURN_COMPLETE = 0x0103,
  OP_TOOL_CALL = 0x0104,
  OP_MEM_RESPONSE = 0x0105,
  OP_STATUS = 0x0106,
  OP_SNAPSHOT_STATUS = 0x0107,
  OP_AUTONOMIC_RESULT = 0x010C,
  OP_PONG = 0x010E,
  OP_ERROR = 0x01FF,
};

// "OP_STREAM_INPUT" for a known opcode, "opcode 0x0010" otherwise: for error messages and logs.
std::string opcode_name(uint16_t opcode);

// OP_STREAM_INPUT byte 0. The original implements only text and tokens (it parses every non-zero
// mode as token ids); 0x04/0x05 are as in its code, swapped relative to its docs.
enum InputMode : uint8_t {
  MODE_TEXT = 0x00,
  MODE_TOKENS = 0x01,
  MODE_SOFT_VECTORS = 0x02,
  MODE_AUDIO_PCM = 0x03,
  MODE_RAW_IMAGE = 0x04,
  MODE_ENCODED_IMAGE = 0x05,
  MODE_VIDEO_FRAME = 0x06,
};

// OP_STREAM_INPUT byte 1, a bitmask. DIRECT is never tested by the original (same as NONE).
inline constexpr uint8_t INPUT_FLAG_NONE = 0x00;
inline constexpr uint8_t INPUT_FLAG_DIRECT = 0x01;
inline constexpr uint8_t INPUT_FLAG_REASON = 0x02;
inline constexpr uint8_t INPUT_FLAG_RAW = 0x80;

// OP_RESUME byte 0 (an empty payload means CONTINUE).
enum ResumeAction : uint8_t {
  RESUME_ACTION_CONTINUE = 0x00,
  RESUME_ACTION_CLOSE_THOUGHT = 0x01,
};

// Token frame byte 20; the original only ever sends TEXT.
enum TokenType : uint8_t {
  TOKEN_TYPE_TEXT = 0x00,
  TOKEN_TYPE_AUDIO = 0x01,
  TOKEN_TYPE_IMAGE = 0x02,
  TOKEN_TYPE_CONTROL = 0x03,
};

// OP_TURN_COMPLETE byte 12.
enum StopReason : uint8_t {
  STOP_END_OF_TURN = 0x00,
  STOP_MAX_TOKENS = 0x01,
  STOP_ABORTED = 0x02,
  STOP_TOOL_CALL = 0x03,
  STOP_ELASTIC_YIELD = 0x04,
};

// OP_STATUS byte 0. MEMORY and CONSOLIDATING are defined by the original but never sent.
enum EngineStatus : uint8_t {
  STATUS_IDLE = 0,
  STATUS_ENCODING = 1,
  STATUS_GENERATING = 2,
  STATUS_MEMORY = 3,
  STATUS_CONSOLIDATING = 4,
};

// OP_STATUS flags (u16 at offset 6). FLAG_GPU and FLAG_THINKING_GATE are defined by the original
// and never used (FLAG_GPU is the same bit as STATUS_FLAG_SATURATED in the original too).
inline constexpr uint16_t STATUS_FLAG_SATURATED = 0x0001;
inline constexpr uint16_t FLAG_GPU = 1 << 0;
inline constexpr uint16_t FLAG_THINKING_GATE = 1 << 1;

// OP_SNAPSHOT_STATUS byte 0.
enum SnapshotStatusCode : uint8_t {
  SNAPSHOT_STATUS_SAVED = 0,
  SNAPSHOT_STATUS_LOADED = 1,
  SNAPSHOT_STATUS_EXISTS = 2,
};

// OP_MEM_QUERY search mode (byte 0 of the reference client's layout); the original ignores it.
enum QueryMode : uint8_t {
  QUERY_KEYWORDS = 0,
  QUERY_FULLTEXT = 1,
  QUERY_TEMPORAL = 2,
  QUERY_PINNED = 3,
};

// OP_MEM_RESPONSE byte 1. The original has no names for these values; these are ours.
enum MemResponseStatus : uint8_t {
  MEM_STATUS_OK = 0x00,
  MEM_STATUS_NO_MATCH = 0x01,
};

// Token frames carry this constant where a per-layer mask was planned (48 bits set), as the
// original does. The name is ours.
inline constexpr uint64_t ACTIVE_LAYER_MASK_ALL = 0x0000FFFFFFFFFFFFull;

}  // namespace channel::protocol
