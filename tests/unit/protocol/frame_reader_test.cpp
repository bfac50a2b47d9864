// The incremental frame reader: frames out of any split of the stream, one error per run of
// garbage and resynchronisation on the next header, oversized payloads skipped, OP_ABORT framed
// like every other opcode.
#include "protocol/frame_reader.h"

#include <gtest/gtest.h>

#include <random>

#include "protocol/inbound.h"
#include "protocol/outbound.h"
#include "protocol_samples.h"
#include "test_bytes.h"

namespace channel::protocol {
namespace {

using test::Bytes;
using test::cat;
using test::text_bytes;

const Bytes kPingFrame = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x05, 0x00,  // msg_id 5
                          0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
const Bytes kSystemFrame = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x06, 0x00,  // msg_id 6
                            0x07, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 'h', 'i'};
const Frame kPing{{.msg_id = 5, .opcode = OP_PING, .payload_len = 0}, {}};
const Frame kSystem{{.msg_id = 6, .opcode = OP_SET_SYSTEM, .payload_len = 2}, {'h', 'i'}};

std::vector<FrameReadResult> pop_all(FrameReader& reader) {
  std::vector<FrameReadResult> results;
  while (auto result = reader.pop()) results.push_back(std::move(*result));
  return results;
}

// Pushes `stream` in pieces of the sizes `next_size` gives, popping everything after each push.
template <typename NextSize>
std::vector<FrameReadResult> read_in_pieces(const Bytes& stream, NextSize next_size) {
  FrameReader reader;
  std::vector<FrameReadResult> results;
  for (size_t at = 0; at < stream.size();) {
    const size_t n = std::min(next_size(), stream.size() - at);
    reader.push(std::span(stream).subspan(at, n));
    at += n;
    for (auto& result : pop_all(reader)) results.push_back(std::move(result));
  }
  return results;
}

std::vector<FrameReadResult> read_whole(const Bytes& stream) {
  FrameReader reader;
  reader.push(stream);
  return pop_all(reader);
}

// Every sample message of both directions, one frame after the other.
Bytes all_sample_frames() {
  Bytes stream;
  uint16_t msg_id = 1;
  auto append = [&](const Bytes& frame) { stream.insert(stream.end(), frame.begin(), frame.end()); };
  for (const auto& message : test::inbound_samples()) append(encode_frame(msg_id++, message));
  for (const auto& message : test::outbound_samples()) append(encode_frame(msg_id++, message));
  return stream;
}

// Bytes that cannot contain a header prefix: no 'X' (0x58) at all.
Bytes garbage(size_t n, uint32_t seed) {
  std::mt19937 random(seed);
  Bytes bytes(n);
  for (auto& byte : bytes) {
    do byte = static_cast<uint8_t>(random()); while (byte == kHeaderPrefix[0]);
  }
  return bytes;
}

bool is_error_starting(const FrameReadResult& result, uint16_t msg_id, std::string_view start) {
  const auto* error = std::get_if<FrameError>(&result);
  return error && error->msg_id == msg_id && error->reason.starts_with(start);
}

TEST(FrameReader, ReadsHandWrittenFrames) {
  const auto results = read_whole(cat({kPingFrame, kSystemFrame}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(std::get<Frame>(results[0]), kPing);
  EXPECT_EQ(std::get<Frame>(results[1]), kSystem);
}

TEST(FrameReader, WaitsForTheRestOfAFrame) {
  FrameReader reader;
  reader.push(std::span(kSystemFrame).first(15));
  EXPECT_FALSE(reader.pop());
  reader.push(std::span(kSystemFrame).subspan(15, 2));
  EXPECT_FALSE(reader.pop());
  EXPECT_EQ(reader.buffered(), 1u);  // the header is consumed, one payload byte waits
  reader.push(std::span(kSystemFrame).subspan(17));
  const auto result = reader.pop();
  ASSERT_TRUE(result);
  EXPECT_EQ(std::get<Frame>(*result), kSystem);
  EXPECT_FALSE(reader.pop());
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(FrameReader, SplitsDoNotMatter) {
  const Bytes stream = all_sample_frames();
  const auto whole = read_whole(stream);
  ASSERT_EQ(whole.size(), test::inbound_samples().size() + test::outbound_samples().size());
  for (const auto& result : whole) EXPECT_TRUE(std::holds_alternative<Frame>(result));
  EXPECT_EQ(read_in_pieces(stream, [] { return size_t{1}; }), whole);
  std::mt19937 random(7);
  EXPECT_EQ(read_in_pieces(stream, [&] { return size_t{1} + random() % 40; }), whole);
}

TEST(FrameReader, EncodedFramesComeBackAsTheyWereSent) {
  uint16_t msg_id = 1;
  for (const auto& message : test::inbound_samples()) {
    const auto results = read_whole(encode_frame(msg_id, message));
    ASSERT_EQ(results.size(), 1u);
    const auto& frame = std::get<Frame>(results[0]);
    EXPECT_EQ(frame.header.msg_id, msg_id++);
    EXPECT_EQ(frame.header.opcode, opcode_of(message));
    const auto decoded = decode_inbound(frame.header.opcode, frame.payload, test::kSampleVocabSize);
    ASSERT_TRUE(decoded.ok()) << decoded.error().reason;
    EXPECT_EQ(decoded.value(), message);
  }
}

TEST(FrameReader, GarbageBeforeTheFirstFrameIsOneError) {
  const auto results = read_whole(cat({text_bytes("hello, this is not a frame"), kPingFrame}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(std::get<FrameError>(results[0]),
            (FrameError{0, "bad magic 0x6C6C6568 (expected 0x53554C58); skipping to the next frame header"}));
  EXPECT_EQ(std::get<Frame>(results[1]), kPing);
}

TEST(FrameReader, LongGarbageBetweenFramesIsOneErrorAndIsNotKept) {
  const Bytes stream = cat({kPingFrame, garbage(10000, 1), kSystemFrame, kPingFrame});
  FrameReader reader;
  std::vector<FrameReadResult> results;
  for (uint8_t byte : stream) {
    reader.push({&byte, 1});
    for (auto& result : pop_all(reader)) results.push_back(std::move(result));
    EXPECT_LE(reader.buffered(), kHeaderSize + 2);  // never more than a header and a payload
  }
  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(std::get<Frame>(results[0]), kPing);
  EXPECT_TRUE(is_error_starting(results[1], 0, "bad magic"));
  EXPECT_EQ(std::get<Frame>(results[2]), kSystem);
  EXPECT_EQ(std::get<Frame>(results[3]), kPing);
  EXPECT_EQ(read_whole(stream), results);
}

TEST(FrameReader, BadVersionIsOneErrorThenTheNextHeader) {
  const Bytes version2 = {0x58, 0x4C, 0x55, 0x53, 0x02, 0x00, 0x09, 0x00,
                          0x0E, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 'a', 'b', 'c'};
  const auto results = read_whole(cat({version2, kPingFrame}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(std::get<FrameError>(results[0]),
            (FrameError{0, "unsupported protocol version 2 (expected 1); skipping to the next frame header"}));
  EXPECT_EQ(std::get<Frame>(results[1]), kPing);
}

TEST(FrameReader, ResyncNeedsMagicAndVersion) {
  // Magic with a wrong version and a cut-off magic inside the garbage are scanned past silently.
  const Bytes stream = cat({garbage(20, 2), {0x58, 0x4C, 0x55, 0x53, 0x02, 0x00}, {0x58, 0x4C, 0x55},
                            garbage(20, 3), kSystemFrame});
  const auto results = read_whole(stream);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(is_error_starting(results[0], 0, "bad magic"));
  EXPECT_EQ(std::get<Frame>(results[1]), kSystem);
  EXPECT_EQ(read_in_pieces(stream, [] { return size_t{1}; }), results);
}

TEST(FrameReader, AValidHeaderInsideABadOneIsFound) {
  // Two bytes of garbage, then a frame: the first 16 bytes fail, the frame starts at byte 2.
  const auto results = read_whole(cat({{0x00, 0x01}, kSystemFrame}));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(is_error_starting(results[0], 0, "bad magic 0x4C580100"));
  EXPECT_EQ(std::get<Frame>(results[1]), kSystem);
}

TEST(FrameReader, SkipsAnOversizedPayloadWithoutKeepingIt) {
  const Bytes oversized = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x09, 0x00,
                           0x07, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x04};  // 64 MiB + 1
  FrameReader reader;
  reader.push(oversized);
  const auto error = reader.pop();
  ASSERT_TRUE(error);
  EXPECT_EQ(std::get<FrameError>(*error),
            (FrameError{9, "OP_SET_SYSTEM: payload of 67108865 bytes exceeds the maximum of 67108864 bytes; skipped"}));
  // The skipped payload is made of valid frames: none of them may come out.
  Bytes chunk;
  while (chunk.size() < (1u << 20)) chunk.insert(chunk.end(), kPingFrame.begin(), kPingFrame.end());
  size_t left = kMaxPayload + size_t{1};
  while (left > 0) {
    const size_t n = std::min(left, chunk.size());
    reader.push(std::span(chunk).first(n));
    EXPECT_FALSE(reader.pop());
    EXPECT_EQ(reader.buffered(), 0u);
    left -= n;
  }
  reader.push(kSystemFrame);
  const auto next = reader.pop();
  ASSERT_TRUE(next);
  EXPECT_EQ(std::get<Frame>(*next), kSystem);
}

TEST(FrameReader, AcceptsAPayloadOfExactlyTheMaximum) {
  Bytes stream = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x01, 0x00,
                  0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04};  // 64 MiB
  stream.resize(kHeaderSize + kMaxPayload, 'x');
  const auto results = read_whole(stream);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(std::get<Frame>(results[0]).payload.size(), kMaxPayload);
}

TEST(FrameReader, AbortWithAPayloadIsFramedByItsLength) {
  // The original reads no payload for OP_ABORT; here its payload_len bytes are its payload, so the
  // frame after it is read intact.
  const Bytes abort = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x03, 0x00,
                       0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0xAA, 0xBB, 0xCC};
  const auto results = read_whole(cat({abort, kPingFrame}));
  ASSERT_EQ(results.size(), 2u);
  const auto& frame = std::get<Frame>(results[0]);
  EXPECT_EQ(frame.header, (Header{.msg_id = 3, .opcode = OP_ABORT, .payload_len = 3}));
  EXPECT_EQ(frame.payload, (Bytes{0xAA, 0xBB, 0xCC}));
  EXPECT_TRUE(std::holds_alternative<Abort>(decode_inbound(OP_ABORT, frame.payload, 1).value()));
  EXPECT_EQ(std::get<Frame>(results[1]), kPing);
}

TEST(FrameReader, PassesUnknownOpcodesOnForTheDecoderToRefuse) {
  const Bytes unknown = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x04, 0x00,
                         0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x7F};
  const auto results = read_whole(cat({unknown, kPingFrame}));
  ASSERT_EQ(results.size(), 2u);
  const auto& frame = std::get<Frame>(results[0]);
  EXPECT_EQ(frame.header.opcode, 0x0010);
  EXPECT_FALSE(decode_inbound(frame.header.opcode, frame.payload, 1).ok());
  EXPECT_EQ(std::get<Frame>(results[1]), kPing);
}

}  // namespace
}  // namespace channel::protocol
