#include "protocol/inbound.h"

#include <algorithm>

#include "core/error.h"
#include "protocol/payload_io.h"

namespace channel::protocol {

namespace {

constexpr size_t kMemQueryClientPreamble = 24;

// ---- decoders: the fields in wire order; PayloadReader throws on a short payload ----

StreamInput read_stream_input(PayloadReader& reader, uint32_t vocab_size) {
  StreamInput input;
  const uint8_t mode = reader.u8("mode");
  input.flags = reader.u8("flags");
  const uint16_t token_count = reader.u16("token_count");
  reader.skip(4, "unused bytes 4..7");
  if (mode == MODE_TEXT) {
    input.text = reader.rest();
    return input;
  }
  // The original parses every non-zero mode as token ids; only MODE_TOKENS really is.
  if (mode != MODE_TOKENS) fail("input mode {} is not supported (0 text, 1 tokens)", mode);
  input.mode = MODE_TOKENS;
  if (size_t{token_count} * 4 > reader.remaining()) {
    fail("token_count {} needs {} bytes of token ids but only {} follow the 8-byte header",
         token_count, size_t{token_count} * 4, reader.remaining());
  }
  input.tokens.reserve(token_count);
  for (size_t i = 0; i < token_count; ++i) {
    const uint32_t token = reader.u32("token id");
    if (token >= vocab_size) {
      fail("token id {} at index {} is not below the vocabulary size {}", token, i, vocab_size);
    }
    input.tokens.push_back(token);
  }
  return input;
}

bool is_client_mem_query(std::span<const uint8_t> payload) {
  return payload.size() >= kMemQueryClientPreamble && payload[0] <= QUERY_PINNED &&
         std::all_of(payload.begin() + 2, payload.begin() + kMemQueryClientPreamble,
                     [](uint8_t byte) { return byte == 0; });
}

MemQuery read_mem_query(PayloadReader& reader, std::span<const uint8_t> payload) {
  MemQuery query;
  if (is_client_mem_query(payload)) {
    query.layout = MemQueryLayout::Client;
    query.mode = static_cast<QueryMode>(reader.u8("mode"));
    query.top_k = reader.u8("top_k");
    reader.skip(kMemQueryClientPreamble - 2, "zero bytes 2..23");
  } else {
    query.top_k = reader.u16("top_k");
    reader.skip(2, "ignored bytes 2..3");
  }
  query.query = reader.rest();
  return query;
}

SetConfig read_set_config(PayloadReader& reader) {
  SetConfig config;
  config.thinking_budget = reader.u32("thinking_budget");
  config.temperature = reader.f32("temperature");
  config.top_p = reader.f32("top_p");
  config.quiescence_threshold = reader.f32("quiescence_threshold");
  config.max_tokens = reader.u32("max_tokens");
  // The optional steps, each read only when the payload holds all of it.
  if (reader.remaining() < 8) return config;
  config.min_p = reader.f32("min_p");
  config.repeat_penalty = reader.f32("repeat_penalty");
  if (reader.remaining() < 4) return config;
  config.repeat_last_n = reader.u32("repeat_last_n");
  if (reader.remaining() < 8) return config;
  config.frequency_penalty = reader.f32("frequency_penalty");
  config.presence_penalty = reader.f32("presence_penalty");
  if (reader.remaining() < 1) return config;
  config.thinking_gate = reader.u8("thinking_gate") != 0;
  return config;
}

ToolReturn read_tool_return(PayloadReader& reader) {
  ToolReturn tool;
  tool.call_id = reader.u16("call_id");
  tool.status = reader.u16("status");
  tool.name = reader.prefixed("tool name");
  tool.result = reader.rest();
  return tool;
}

SnapshotSave read_snapshot_save(PayloadReader& reader) {
  SnapshotSave save;
  save.path = reader.prefixed("path");
  const uint16_t stream_id_len = reader.u16("stream_id_len");
  if (stream_id_len <= reader.remaining()) {
    save.stream_id = reader.bytes(std::min<size_t>(stream_id_len, kMaxStreamIdBytes), "stream id");
  }
  return save;
}

SnapshotLoad read_snapshot_load(PayloadReader& reader) {
  SnapshotLoad load{.path = reader.rest()};
  if (load.path.empty()) fail("empty snapshot path");
  return load;
}

Resume read_resume(PayloadReader& reader) {
  const bool close_thought =
      reader.remaining() > 0 && reader.u8("action") == RESUME_ACTION_CLOSE_THOUGHT;
  return {.action = close_thought ? RESUME_ACTION_CLOSE_THOUGHT : RESUME_ACTION_CONTINUE};
}

ProbeAutonomic read_probe(PayloadReader& reader) {
  ProbeAutonomic probe;
  probe.max_decode_tokens = reader.u16("max_decode_tokens");
  const uint16_t candidate_count = reader.u16("candidate_count");
  probe.min_certainty = reader.f32("min_certainty");
  probe.prompt = reader.prefixed("prompt");
  for (size_t i = 0; i < candidate_count; ++i) probe.candidates.push_back(reader.prefixed("candidate"));
  return probe;
}

InboundMessage read_inbound(uint16_t opcode, std::span<const uint8_t> payload, uint32_t vocab_size) {
  PayloadReader reader(payload);
  switch (opcode) {
    case OP_STREAM_INPUT: return read_stream_input(reader, vocab_size);
    case OP_ABORT: return Abort{};
    case OP_MEM_QUERY: return read_mem_query(reader, payload);
    case OP_SET_CONFIG: return read_set_config(reader);
    case OP_TOOL_RETURN: return read_tool_return(reader);
    case OP_MEM_COMMIT: return MemCommit{};
    case OP_SET_SYSTEM: return SetSystem{.text = reader.rest()};
    case OP_SNAPSHOT_SAVE: return read_snapshot_save(reader);
    case OP_SNAPSHOT_LOAD: return read_snapshot_load(reader);
    case OP_RESUME: return read_resume(reader);
    case OP_PING: return Ping{};
    case OP_SHUTDOWN: return Shutdown{};
    case OP_PROBE_AUTONOMIC: return read_probe(reader);
  }
  fail("not an inbound opcode");
}

// ---- encoders: the same fields in the same order ----

void write(PayloadWriter& out, const StreamInput& input) {
  if (input.mode == MODE_TEXT) {
    out.u8(MODE_TEXT).u8(input.flags).u16(0).zeros(4).bytes(input.text);
    return;
  }
  if (input.mode != MODE_TOKENS) fail("input mode {} has no encoding", +input.mode);
  out.u8(MODE_TOKENS).u8(input.flags);
  out.u16(narrow_count<uint16_t>(input.tokens.size(), "token_count")).zeros(4);
  for (uint32_t token : input.tokens) out.u32(token);
}

void write(PayloadWriter&, const Abort&) {}

void write(PayloadWriter& out, const MemQuery& query) {
  if (query.layout == MemQueryLayout::Client) {
    out.u8(query.mode).u8(narrow_count<uint8_t>(query.top_k, "top_k"));
    out.zeros(kMemQueryClientPreamble - 2);
  } else {
    out.u16(query.top_k).zeros(2);
  }
  out.bytes(query.query);
}

void write(PayloadWriter& out, const SetConfig& config) {
  out.u32(config.thinking_budget).f32(config.temperature).f32(config.top_p);
  out.f32(config.quiescence_threshold).u32(config.max_tokens);
  // The payload can only end where the original's steps end, so each step is written whole and
  // only after the ones before it.
  const bool sampling = config.min_p && config.repeat_penalty;
  const bool window = sampling && config.repeat_last_n;
  const bool penalties = window && config.frequency_penalty && config.presence_penalty;
  const bool gate = penalties && config.thinking_gate;
  const int set = config.min_p.has_value() + config.repeat_penalty.has_value() +
                  config.repeat_last_n.has_value() + config.frequency_penalty.has_value() +
                  config.presence_penalty.has_value() + config.thinking_gate.has_value();
  if (set != 2 * sampling + window + 2 * penalties + gate) {
    fail("optional fields go in steps (min_p with repeat_penalty, repeat_last_n, "
         "frequency with presence penalty, thinking_gate), each only after all before it");
  }
  if (sampling) out.f32(*config.min_p).f32(*config.repeat_penalty);
  if (window) out.u32(*config.repeat_last_n);
  if (penalties) out.f32(*config.frequency_penalty).f32(*config.presence_penalty);
  if (gate) out.u8(*config.thinking_gate ? 1 : 0);
}

void write(PayloadWriter& out, const ToolReturn& tool) {
  out.u16(tool.call_id).u16(tool.status).prefixed(tool.name, "tool name").bytes(tool.result);
}

void write(PayloadWriter&, const MemCommit&) {}

void write(PayloadWriter& out, const SetSystem& system) { out.bytes(system.text); }

void write(PayloadWriter& out, const SnapshotSave& save) {
  out.prefixed(save.path, "path").prefixed(save.stream_id, "stream id");
}

void write(PayloadWriter& out, const SnapshotLoad& load) { out.bytes(load.path); }

// The reference client sends CONTINUE as an empty payload.
void write(PayloadWriter& out, const Resume& resume) {
  if (resume.action != RESUME_ACTION_CONTINUE) out.u8(resume.action);
}

void write(PayloadWriter&, const Ping&) {}

void write(PayloadWriter&, const Shutdown&) {}

void write(PayloadWriter& out, const ProbeAutonomic& probe) {
  out.u16(probe.max_decode_tokens);
  out.u16(narrow_count<uint16_t>(probe.candidates.size(), "candidate_count"));
  out.f32(probe.min_certainty).prefixed(probe.prompt, "prompt");
  for (const auto& candidate : probe.candidates) out.prefixed(candidate, "candidate");
}

}  // namespace

uint16_t opcode_of(const InboundMessage& message) {
  return std::visit([](const auto& payload) { return std::decay_t<decltype(payload)>::kOpcode; }, message);
}

std::vector<uint8_t> encode_frame(uint16_t msg_id, const InboundMessage& message) {
  return encode_payload(msg_id, opcode_of(message), [&](PayloadWriter& out) {
    std::visit([&](const auto& payload) { write(out, payload); }, message);
  });
}

Decoded<InboundMessage> decode_inbound(uint16_t opcode, std::span<const uint8_t> payload,
                                       uint32_t vocab_size) {
  return decode_payload(opcode, [&] { return read_inbound(opcode, payload, vocab_size); });
}

}  // namespace channel::protocol
