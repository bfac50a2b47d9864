// Inbound payloads (host -> engine) against the layouts of reference/original-channel.md §1.5:
// every opcode byte for byte against frames written out by hand, the original's partial-payload
// rules, and every malformed case the decoder refuses.
#include "protocol/inbound.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "protocol/frame.h"
#include "protocol_samples.h"
#include "test_bytes.h"

namespace channel::protocol {
namespace {

using test::Bytes;
using test::cat;
using test::payload_of;
using test::text_bytes;

constexpr uint32_t kVocab = 262144;

Decoded<InboundMessage> decode(uint16_t opcode, const Bytes& payload) {
  return decode_inbound(opcode, payload, kVocab);
}

// The message encodes to exactly `frame` (msg_id 0x1234), and the frame's payload decodes back
// to the message.
void expect_wire(const InboundMessage& message, const Bytes& frame) {
  EXPECT_EQ(encode_frame(0x1234, message), frame);
  const auto decoded = decode_inbound(opcode_of(message), payload_of(frame), kVocab);
  ASSERT_TRUE(decoded.ok()) << decoded.error().reason;
  EXPECT_EQ(decoded.value(), message);
}

template <typename T>
T decode_as(uint16_t opcode, const Bytes& payload) {
  const auto decoded = decode(opcode, payload);
  EXPECT_TRUE(decoded.ok()) << decoded.error().reason;
  return decoded.ok() ? std::get<T>(decoded.value()) : T{};
}

// The reason a payload is refused, "" if it is not.
std::string refusal(uint16_t opcode, const Bytes& payload) {
  const auto decoded = decode(opcode, payload);
  return decoded.ok() ? "" : decoded.error().reason;
}

// ---- byte for byte ----

TEST(InboundWire, StreamInputText) {
  expect_wire(StreamInput{.mode = MODE_TEXT, .flags = INPUT_FLAG_REASON, .text = "Hi"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x01, 0x00, 0x00, 0x00, 0x0A, 0x00, 0x00, 0x00,
               0x00,                    // mode TEXT
               0x02,                    // flags REASON
               0x00, 0x00,              // token_count (unused for text)
               0x00, 0x00, 0x00, 0x00,  // unused
               'H', 'i'});
}

TEST(InboundWire, StreamInputTokens) {
  expect_wire(StreamInput{.mode = MODE_TOKENS, .flags = INPUT_FLAG_RAW, .tokens = {2, 105, 262143}},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
               0x01, 0x80, 0x03, 0x00,  // mode TOKENS, flags RAW, token_count 3
               0x00, 0x00, 0x00, 0x00,  // unused
               0x02, 0x00, 0x00, 0x00,  // 2
               0x69, 0x00, 0x00, 0x00,  // 105
               0xFF, 0xFF, 0x03, 0x00});  // 262143, the last id of the vocabulary
}

TEST(InboundWire, Abort) {
  expect_wire(Abort{}, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
}

TEST(InboundWire, MemQueryEngineLayout) {
  expect_wire(MemQuery{.layout = MemQueryLayout::Engine, .top_k = 5, .query = "sea"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x03, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
               0x05, 0x00,  // top_k 5
               0x00, 0x00,  // ignored
               's', 'e', 'a'});
}

TEST(InboundWire, MemQueryClientLayout) {
  // The reference client's 24-byte preamble; the original engine would read top_k 0x0800 and a
  // query starting with 20 NUL bytes.
  expect_wire(MemQuery{.layout = MemQueryLayout::Client, .mode = QUERY_KEYWORDS, .top_k = 8, .query = "sea"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x03, 0x00, 0x00, 0x00, 0x1B, 0x00, 0x00, 0x00,
               0x00, 0x08,                                      // mode KEYWORDS, top_k 8
               0x00, 0x00, 0x00, 0x00, 0x00, 0x00,              // bytes 2..7
               0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // u64 @8
               0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // u64 @16
               's', 'e', 'a'});
}

TEST(InboundWire, SetConfigAll41Bytes) {
  const SetConfig config{.thinking_budget = 512, .temperature = 1.0f, .top_p = 0.95f,
                         .quiescence_threshold = 0.001f, .max_tokens = 64, .min_p = 0.05f,
                         .repeat_penalty = 1.1f, .repeat_last_n = 64, .frequency_penalty = 0.1f,
                         .presence_penalty = 0.1f, .thinking_gate = true};
  expect_wire(config, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x04, 0x00, 0x00, 0x00, 0x29, 0x00, 0x00, 0x00,
                       0x00, 0x02, 0x00, 0x00,  // thinking_budget 512
                       0x00, 0x00, 0x80, 0x3F,  // temperature 1.0
                       0x33, 0x33, 0x73, 0x3F,  // top_p 0.95
                       0x6F, 0x12, 0x83, 0x3A,  // quiescence threshold 0.001
                       0x40, 0x00, 0x00, 0x00,  // max_tokens 64
                       0xCD, 0xCC, 0x4C, 0x3D,  // min_p 0.05
                       0xCD, 0xCC, 0x8C, 0x3F,  // repeat_penalty 1.1
                       0x40, 0x00, 0x00, 0x00,  // repeat_last_n 64
                       0xCD, 0xCC, 0xCC, 0x3D,  // frequency_penalty 0.1
                       0xCD, 0xCC, 0xCC, 0x3D,  // presence_penalty 0.1
                       0x01});                  // thinking_gate
}

TEST(InboundWire, SetConfigFirstStepOnly) {
  const SetConfig config{.thinking_budget = 0, .temperature = 0.7f, .top_p = 0.95f,
                         .quiescence_threshold = 0.0f, .max_tokens = 128};
  expect_wire(config, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x04, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
                       0x00, 0x00, 0x00, 0x00, 0x33, 0x33, 0x33, 0x3F, 0x33, 0x33, 0x73, 0x3F,
                       0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00});
}

TEST(InboundWire, ToolReturn) {
  expect_wire(ToolReturn{.call_id = 1, .status = 0, .name = "f", .result = "{}"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x05, 0x00, 0x00, 0x00, 0x09, 0x00, 0x00, 0x00,
               0x01, 0x00,  // call_id
               0x00, 0x00,  // status
               0x01, 0x00,  // name_len
               'f', '{', '}'});
}

TEST(InboundWire, MemCommit) {
  expect_wire(MemCommit{}, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x06, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
}

TEST(InboundWire, SetSystem) {
  expect_wire(SetSystem{.text = "You"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x07, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
               'Y', 'o', 'u'});
}

TEST(InboundWire, SnapshotSave) {
  expect_wire(SnapshotSave{.path = "a.bin", .stream_id = "ID"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x08, 0x00, 0x00, 0x00, 0x0B, 0x00, 0x00, 0x00,
               0x05, 0x00, 'a', '.', 'b', 'i', 'n',  // path
               0x02, 0x00, 'I', 'D'});                // stream id
}

TEST(InboundWire, SnapshotLoad) {
  expect_wire(SnapshotLoad{.path = "a.bin"},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x09, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
               'a', '.', 'b', 'i', 'n'});
}

TEST(InboundWire, ResumeContinueIsEmpty) {
  expect_wire(Resume{.action = RESUME_ACTION_CONTINUE},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
}

TEST(InboundWire, ResumeCloseThought) {
  expect_wire(Resume{.action = RESUME_ACTION_CLOSE_THOUGHT},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0A, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01});
}

TEST(InboundWire, PingAndShutdown) {
  expect_wire(Ping{}, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
  expect_wire(Shutdown{}, {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x0F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00});
}

TEST(InboundWire, ProbeAutonomic) {
  expect_wire(ProbeAutonomic{.max_decode_tokens = 1, .min_certainty = 0.6f, .prompt = "Q?", .candidates = {"yes", "no"}},
              {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x34, 0x12, 0x12, 0x00, 0x00, 0x00, 0x15, 0x00, 0x00, 0x00,
               0x01, 0x00,              // max_decode_tokens
               0x02, 0x00,              // candidate_count
               0x9A, 0x99, 0x19, 0x3F,  // min_certainty 0.6
               0x02, 0x00, 'Q', '?',    // prompt
               0x03, 0x00, 'y', 'e', 's',
               0x02, 0x00, 'n', 'o'});
}

TEST(InboundWire, EverySampleRoundTrips) {
  for (const auto& message : test::inbound_samples()) {
    const auto frame = encode_frame(7, message);
    const auto decoded = decode_inbound(opcode_of(message), payload_of(frame), test::kSampleVocabSize);
    ASSERT_TRUE(decoded.ok()) << decoded.error().reason;
    EXPECT_EQ(decoded.value(), message) << opcode_name(opcode_of(message));
  }
}

// ---- the original's partial-payload rules ----

TEST(InboundPartial, SetConfigAppliesWholeStepsOnly) {
  const Bytes full = {0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x80, 0x3F, 0x33, 0x33, 0x73, 0x3F,
                      0x6F, 0x12, 0x83, 0x3A, 0x40, 0x00, 0x00, 0x00, 0xCD, 0xCC, 0x4C, 0x3D,
                      0xCD, 0xCC, 0x8C, 0x3F, 0x40, 0x00, 0x00, 0x00, 0xCD, 0xCC, 0xCC, 0x3D,
                      0xCD, 0xCC, 0xCC, 0x3D, 0x01};
  auto prefix = [&](size_t n) { return decode_as<SetConfig>(OP_SET_CONFIG, Bytes(full.begin(), full.begin() + n)); };
  for (size_t n : {20, 27}) {
    const auto config = prefix(n);
    EXPECT_EQ(config.thinking_budget, 512u);
    EXPECT_EQ(config.max_tokens, 64u);
    EXPECT_FALSE(config.min_p || config.repeat_penalty) << n;
  }
  for (size_t n : {28, 31}) {
    const auto config = prefix(n);
    EXPECT_EQ(config.min_p, 0.05f);
    EXPECT_EQ(config.repeat_penalty, 1.1f);
    EXPECT_FALSE(config.repeat_last_n) << n;
  }
  for (size_t n : {32, 39}) {
    const auto config = prefix(n);
    EXPECT_EQ(config.repeat_last_n, 64u);
    EXPECT_FALSE(config.frequency_penalty || config.presence_penalty) << n;
  }
  const auto forty = prefix(40);
  EXPECT_EQ(forty.frequency_penalty, 0.1f);
  EXPECT_EQ(forty.presence_penalty, 0.1f);
  EXPECT_FALSE(forty.thinking_gate);
  EXPECT_EQ(prefix(41).thinking_gate, true);
  EXPECT_EQ(decode_as<SetConfig>(OP_SET_CONFIG, cat({full, {0xEE, 0xEE}})), prefix(41));  // extra bytes ignored
}

TEST(InboundPartial, SetConfigThinkingGateIsAnyNonZeroByte) {
  Bytes payload(41, 0);
  payload[40] = 0x02;
  EXPECT_EQ(decode_as<SetConfig>(OP_SET_CONFIG, payload).thinking_gate, true);
}

TEST(InboundPartial, SnapshotStreamIdRunningPastThePayloadIsEmpty) {
  const Bytes payload = {0x01, 0x00, 'p', 0x05, 0x00, 'a', 'b'};  // stream_id_len 5, 2 bytes follow
  const auto save = decode_as<SnapshotSave>(OP_SNAPSHOT_SAVE, payload);
  EXPECT_EQ(save.path, "p");
  EXPECT_EQ(save.stream_id, "");
}

TEST(InboundPartial, SnapshotStreamIdIsCutTo64Bytes) {
  const std::string id(100, 'x');
  const Bytes payload = cat({{0x01, 0x00, 'p', 100, 0x00}, text_bytes(id)});
  EXPECT_EQ(decode_as<SnapshotSave>(OP_SNAPSHOT_SAVE, payload).stream_id, std::string(kMaxStreamIdBytes, 'x'));
}

TEST(InboundPartial, ResumeActionOtherThanOneContinues) {
  EXPECT_EQ(decode_as<Resume>(OP_RESUME, {0x07}).action, RESUME_ACTION_CONTINUE);
  EXPECT_EQ(decode_as<Resume>(OP_RESUME, {0x01, 0xFF}).action, RESUME_ACTION_CLOSE_THOUGHT);
}

TEST(InboundPartial, StreamInputIgnoresBytesAfterTheTokens) {
  const Bytes payload = {0x01, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0xEE};
  EXPECT_EQ(decode_as<StreamInput>(OP_STREAM_INPUT, payload).tokens, std::vector<uint32_t>{5});
}

TEST(InboundPartial, StreamInputTextIgnoresTokenCountAndUnusedBytes) {
  const Bytes payload = {0x00, 0x00, 0x09, 0x00, 0x11, 0x22, 0x33, 0x44, 'o', 'k'};
  const auto input = decode_as<StreamInput>(OP_STREAM_INPUT, payload);
  EXPECT_EQ(input.text, "ok");
  EXPECT_TRUE(input.tokens.empty());
}

TEST(InboundPartial, OpcodesWithoutPayloadIgnoreOne) {
  for (uint16_t opcode : {OP_ABORT, OP_MEM_COMMIT, OP_PING, OP_SHUTDOWN}) {
    EXPECT_EQ(refusal(opcode, {0x01, 0x02, 0x03}), "") << opcode_name(opcode);
  }
}

TEST(InboundPartial, EmptySetSystemDecodes) {
  EXPECT_EQ(decode_as<SetSystem>(OP_SET_SYSTEM, {}).text, "");
}

TEST(InboundPartial, MemQueryThatOnlyAlmostLooksLikeTheClientLayoutIsReadAsEngineLayout) {
  Bytes client = cat({{0x00, 0x08}, Bytes(22, 0), text_bytes("q")});
  EXPECT_EQ(decode_as<MemQuery>(OP_MEM_QUERY, client).layout, MemQueryLayout::Client);
  client[0] = QUERY_PINNED + 1;  // not a query mode
  const auto query = decode_as<MemQuery>(OP_MEM_QUERY, client);
  EXPECT_EQ(query.layout, MemQueryLayout::Engine);
  EXPECT_EQ(query.top_k, 0x0804);
  EXPECT_EQ(text_bytes(query.query), cat({Bytes(20, 0), text_bytes("q")}));
  client[0] = 0;
  client[23] = 1;  // a non-zero byte in the preamble
  EXPECT_EQ(decode_as<MemQuery>(OP_MEM_QUERY, client).layout, MemQueryLayout::Engine);
  const Bytes short_client = cat({{0x00, 0x08}, Bytes(21, 0)});  // 23 bytes
  EXPECT_EQ(decode_as<MemQuery>(OP_MEM_QUERY, short_client).layout, MemQueryLayout::Engine);
}

// ---- malformed payloads ----

TEST(InboundMalformed, PayloadTooShortForItsOpcode) {
  EXPECT_EQ(refusal(OP_STREAM_INPUT, {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}),
            "OP_STREAM_INPUT: payload of 7 bytes ends inside unused bytes 4..7 (needs bytes 4..7)");
  EXPECT_EQ(refusal(OP_STREAM_INPUT, {}), "OP_STREAM_INPUT: payload of 0 bytes ends inside mode (needs bytes 0..0)");
  EXPECT_EQ(refusal(OP_MEM_QUERY, {0x05, 0x00, 0x00}),
            "OP_MEM_QUERY: payload of 3 bytes ends inside ignored bytes 2..3 (needs bytes 2..3)");
  EXPECT_EQ(refusal(OP_SET_CONFIG, Bytes(19, 0)),
            "OP_SET_CONFIG: payload of 19 bytes ends inside max_tokens (needs bytes 16..19)");
  EXPECT_EQ(refusal(OP_TOOL_RETURN, {0x01, 0x00, 0x00, 0x00, 0x01}),
            "OP_TOOL_RETURN: payload of 5 bytes ends inside tool name (needs bytes 4..5)");
  EXPECT_EQ(refusal(OP_SNAPSHOT_SAVE, {0x01, 0x00, 'p'}),
            "OP_SNAPSHOT_SAVE: payload of 3 bytes ends inside stream_id_len (needs bytes 3..4)");
  EXPECT_EQ(refusal(OP_PROBE_AUTONOMIC, Bytes(9, 0)),
            "OP_PROBE_AUTONOMIC: payload of 9 bytes ends inside prompt (needs bytes 8..9)");
}

TEST(InboundMalformed, LengthsRunningPastThePayload) {
  EXPECT_EQ(refusal(OP_TOOL_RETURN, {0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 'a', 'b'}),
            "OP_TOOL_RETURN: payload of 8 bytes ends inside tool name (needs bytes 6..9)");
  EXPECT_EQ(refusal(OP_SNAPSHOT_SAVE, {0x09, 0x00, 'a', 'b', 0x00, 0x00}),
            "OP_SNAPSHOT_SAVE: payload of 6 bytes ends inside path (needs bytes 2..10)");
  EXPECT_EQ(refusal(OP_PROBE_AUTONOMIC, {0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0x03, 0x00, 'Q'}),
            "OP_PROBE_AUTONOMIC: payload of 11 bytes ends inside prompt (needs bytes 10..12)");
  EXPECT_EQ(refusal(OP_PROBE_AUTONOMIC, {0x01, 0x00, 0x02, 0x00, 0, 0, 0, 0, 0x00, 0x00, 0x01, 0x00, 'y'}),
            "OP_PROBE_AUTONOMIC: payload of 13 bytes ends inside candidate (needs bytes 13..14)");
}

TEST(InboundMalformed, TokenCountBeyondThePayload) {
  const Bytes payload = {0x01, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,
                         0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00};  // 2 of 3 tokens
  EXPECT_EQ(refusal(OP_STREAM_INPUT, payload),
            "OP_STREAM_INPUT: token_count 3 needs 12 bytes of token ids but only 8 follow the 8-byte header");
}

TEST(InboundMalformed, TokenIdNotBelowTheVocabulary) {
  const Bytes payload = {0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
                         0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00};  // 2, 262144
  EXPECT_EQ(refusal(OP_STREAM_INPUT, payload),
            "OP_STREAM_INPUT: token id 262144 at index 1 is not below the vocabulary size 262144");
  EXPECT_TRUE(decode_inbound(OP_STREAM_INPUT, payload, kVocab + 1).ok());
}

TEST(InboundMalformed, UnimplementedInputModes) {
  for (uint8_t mode : {MODE_SOFT_VECTORS, MODE_AUDIO_PCM, MODE_RAW_IMAGE, MODE_ENCODED_IMAGE, MODE_VIDEO_FRAME}) {
    const Bytes payload = {mode, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
    EXPECT_EQ(refusal(OP_STREAM_INPUT, payload),
              fmt::format("OP_STREAM_INPUT: input mode {} is not supported (0 text, 1 tokens)", mode));
  }
}

TEST(InboundMalformed, EmptySnapshotPath) {
  EXPECT_EQ(refusal(OP_SNAPSHOT_LOAD, {}), "OP_SNAPSHOT_LOAD: empty snapshot path");
}

TEST(InboundMalformed, UnknownAndOutboundOpcodes) {
  EXPECT_EQ(refusal(0x0010, {}), "opcode 0x0010: not an inbound opcode");
  EXPECT_EQ(refusal(0x0000, {}), "opcode 0x0000: not an inbound opcode");
  EXPECT_EQ(refusal(OP_PONG, {}), "OP_PONG: not an inbound opcode");
}

// ---- what the encoder refuses to write ----

TEST(InboundEncode, RefusesWhatTheLayoutCannotCarry) {
  EXPECT_THROW(encode_frame(1, StreamInput{.mode = MODE_AUDIO_PCM}), Error);
  EXPECT_THROW(encode_frame(1, StreamInput{.mode = MODE_TOKENS, .tokens = std::vector<uint32_t>(65536)}), Error);
  EXPECT_THROW(encode_frame(1, ToolReturn{.name = std::string(65536, 'n')}), Error);
  EXPECT_THROW(encode_frame(1, MemQuery{.layout = MemQueryLayout::Client, .top_k = 256}), Error);
  EXPECT_NO_THROW(encode_frame(1, ToolReturn{.name = std::string(65535, 'n')}));
  try {
    encode_frame(1, ToolReturn{.name = std::string(65536, 'n')});
  } catch (const Error& error) {
    EXPECT_STREQ(error.what(), "OP_TOOL_RETURN: tool name (65536) does not fit its 16-bit field");
  }
}

TEST(InboundEncode, SetConfigFieldsOnlyInTheOriginalsSteps) {
  SetConfig config;
  config.min_p = 0.05f;  // without repeat_penalty
  EXPECT_THROW(encode_frame(1, config), Error);
  config.repeat_penalty = 1.1f;
  EXPECT_NO_THROW(encode_frame(1, config));
  config.thinking_gate = true;  // without the steps before it
  EXPECT_THROW(encode_frame(1, config), Error);
}

}  // namespace
}  // namespace channel::protocol
