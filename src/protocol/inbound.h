// Payloads of the inbound opcodes (host -> engine), laid out as the original engine's code reads
// them (reference/original-channel.md §1.5; docs/protocol.md has the tables). Decoding validates
// everything the layout alone can tell, including token ids against the vocabulary, so that the
// server only ever sees well-formed requests; what a request means is the engine's business.
//
// Common rules: bytes after the last field the original reads are ignored (room for extensions,
// as the original ignores them too); every string is raw bytes, not checked for UTF-8 here.
//
// Every member has an initializer (`{}` for strings, vectors and optionals) so that designated
// initializers may leave any of them out without -Wmissing-field-initializers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/decoded.h"
#include "protocol/opcodes.h"

namespace channel::protocol {

// u8 mode | u8 flags | u16 token_count | 4 unused bytes | text to the end, or token_count u32 ids.
struct StreamInput {
  static constexpr uint16_t kOpcode = OP_STREAM_INPUT;
  InputMode mode = MODE_TEXT;  // MODE_TEXT or MODE_TOKENS: no other mode decodes
  uint8_t flags = INPUT_FLAG_NONE;
  std::string text{};              // MODE_TEXT only
  std::vector<uint32_t> tokens{};  // MODE_TOKENS only; each below the vocabulary size
  bool operator==(const StreamInput&) const = default;
};

// Header only. A payload, which the original never reads, is consumed and ignored here.
struct Abort {
  static constexpr uint16_t kOpcode = OP_ABORT;
  bool operator==(const Abort&) const = default;
};

// The engine reads u16 top_k | 2 ignored bytes | query; the reference client sends u8 mode |
// u8 top_k | 22 zero bytes | query. Both are accepted: see decode_inbound.
enum class MemQueryLayout : uint8_t { Engine, Client };

struct MemQuery {
  static constexpr uint16_t kOpcode = OP_MEM_QUERY;
  MemQueryLayout layout = MemQueryLayout::Engine;
  QueryMode mode = QUERY_KEYWORDS;  // carried by the client layout only; the original ignores it
  uint16_t top_k = 0;               // at most 255 in the client layout
  std::string query{};
  bool operator==(const MemQuery&) const = default;
};

// 41 bytes: u32 thinking_budget | f32 temperature | f32 top_p | f32 quiescence_threshold |
// u32 max_tokens | f32 min_p | f32 repeat_penalty | u32 repeat_last_n | f32 frequency_penalty |
// f32 presence_penalty | u8 thinking_gate. The original needs the first 20 bytes and applies the
// rest in steps as far as the payload reaches (>= 28, >= 32, >= 40, >= 41 bytes); a field of a
// step the payload does not complete is absent here and keeps its current value there.
struct SetConfig {
  static constexpr uint16_t kOpcode = OP_SET_CONFIG;
  uint32_t thinking_budget = 0;
  float temperature = 0;
  float top_p = 0;
  float quiescence_threshold = 0;
  uint32_t max_tokens = 0;
  std::optional<float> min_p{};  // min_p and repeat_penalty: both or neither
  std::optional<float> repeat_penalty{};
  std::optional<uint32_t> repeat_last_n{};
  std::optional<float> frequency_penalty{};  // frequency and presence penalty: both or neither
  std::optional<float> presence_penalty{};
  std::optional<bool> thinking_gate{};  // stored but never read by the original
  bool operator==(const SetConfig&) const = default;
};

// u16 call_id | u16 status | u16 name_len | name | result to the end. The original ignores
// call_id and status.
struct ToolReturn {
  static constexpr uint16_t kOpcode = OP_TOOL_RETURN;
  uint16_t call_id = 1;  // what the reference client sends
  uint16_t status = 0;
  std::string name{};
  std::string result{};
  bool operator==(const ToolReturn&) const = default;
};

// No payload.
struct MemCommit {
  static constexpr uint16_t kOpcode = OP_MEM_COMMIT;
  bool operator==(const MemCommit&) const = default;
};

// The whole payload: a JSON object ({instructions, tools}) or a raw pre-templated system turn.
// Empty decodes (the original ignores an empty one).
struct SetSystem {
  static constexpr uint16_t kOpcode = OP_SET_SYSTEM;
  std::string text{};
  bool operator==(const SetSystem&) const = default;
};

// u16 path_len | path | u16 stream_id_len | stream_id. As in the original, a stream id whose
// bytes run past the payload is taken as empty, and a longer one is cut to 64 bytes.
inline constexpr size_t kMaxStreamIdBytes = 64;

struct SnapshotSave {
  static constexpr uint16_t kOpcode = OP_SNAPSHOT_SAVE;
  std::string path{};
  std::string stream_id{};
  bool operator==(const SnapshotSave&) const = default;
};

// The whole payload is the path; it must not be empty.
struct SnapshotLoad {
  static constexpr uint16_t kOpcode = OP_SNAPSHOT_LOAD;
  std::string path{};
  bool operator==(const SnapshotLoad&) const = default;
};

// Empty (CONTINUE) or one action byte; as in the original, any byte but 1 means CONTINUE.
struct Resume {
  static constexpr uint16_t kOpcode = OP_RESUME;
  ResumeAction action = RESUME_ACTION_CONTINUE;
  bool operator==(const Resume&) const = default;
};

// No payload.
struct Ping {
  static constexpr uint16_t kOpcode = OP_PING;
  bool operator==(const Ping&) const = default;
};

// No payload.
struct Shutdown {
  static constexpr uint16_t kOpcode = OP_SHUTDOWN;
  bool operator==(const Shutdown&) const = default;
};

// u16 max_decode_tokens | u16 candidate_count | f32 min_certainty | u16 prompt_len | prompt |
// candidate_count x (u16 len | candidate string).
struct ProbeAutonomic {
  static constexpr uint16_t kOpcode = OP_PROBE_AUTONOMIC;
  uint16_t max_decode_tokens = 0;
  float min_certainty = 0;  // ignored by the original
  std::string prompt{};
  std::vector<std::string> candidates{};
  bool operator==(const ProbeAutonomic&) const = default;
};

using InboundMessage = std::variant<StreamInput, Abort, MemQuery, SetConfig, ToolReturn, MemCommit,
                                    SetSystem, SnapshotSave, SnapshotLoad, Resume, Ping, Shutdown,
                                    ProbeAutonomic>;

uint16_t opcode_of(const InboundMessage& message);

// The whole frame (header and payload) as a client writes it; throws channel::Error for what the
// layout cannot carry (a string over 65535 bytes, more than 65535 tokens, a mode other than text
// or tokens, SET_CONFIG fields set out of their steps, top_k over 255 in the client layout).
std::vector<uint8_t> encode_frame(uint16_t msg_id, const InboundMessage& message);

// Decodes the payload of an inbound frame. Refused, with a reason naming the opcode and field: an
// unknown opcode (outbound ones included), a payload too short for its layout, a length or count
// running past the payload, an input mode other than text or tokens, a token id >= vocab_size,
// an empty snapshot path. MEM_QUERY is read in the client layout when the payload has at least 24
// bytes, byte 0 is a QueryMode and bytes 2..23 are zero (a query text of the engine layout would
// have to start with 20 NUL bytes to look like that), otherwise in the engine layout.
Decoded<InboundMessage> decode_inbound(uint16_t opcode, std::span<const uint8_t> payload,
                                       uint32_t vocab_size);

}  // namespace channel::protocol
