// The 16-byte header against the layout of reference/original-channel.md §1.2.
#include "protocol/header.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "protocol/frame.h"
#include "protocol/opcodes.h"
#include "test_bytes.h"

namespace channel::protocol {
namespace {

using test::Bytes;

std::string reason_of(const Bytes& bytes) {
  const auto decoded = decode_header(std::span<const uint8_t, kHeaderSize>(bytes.data(), kHeaderSize));
  return decoded.ok() ? "" : decoded.error().reason;
}

TEST(Header, EncodesEveryFieldLittleEndian) {
  const Bytes expected = {
      0x58, 0x4C, 0x55, 0x53,  // magic 0x53554C58, "XLUS" on the wire
      0x01, 0x00,              // version 1
      0x34, 0x12,              // msg_id 0x1234
      0x0C, 0x01,              // opcode OP_AUTONOMIC_RESULT 0x010C
      0x00, 0x00,              // reserved
      0x78, 0x56, 0x34, 0x12,  // payload_len 0x12345678
  };
  const Header header{.msg_id = 0x1234, .opcode = OP_AUTONOMIC_RESULT, .payload_len = 0x12345678};
  const auto encoded = encode_header(header);
  EXPECT_EQ(Bytes(encoded.begin(), encoded.end()), expected);
  const auto decoded = decode_header(std::span<const uint8_t, kHeaderSize>(expected.data(), kHeaderSize));
  ASSERT_TRUE(decoded.ok()) << decoded.error().reason;
  EXPECT_EQ(decoded.value(), header);
}

TEST(Header, PrefixIsMagicAndVersion) {
  const auto encoded = encode_header({});
  EXPECT_TRUE(std::equal(kHeaderPrefix.begin(), kHeaderPrefix.end(), encoded.begin()));
}

TEST(Header, IgnoresTheReservedField) {
  const Bytes bytes = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x07, 0x00,
                       0x0E, 0x00, 0xAB, 0xCD, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(reason_of(bytes), "");
}

TEST(Header, RefusesBadMagic) {
  const Bytes bytes = {0x53, 0x55, 0x4C, 0x58, 0x01, 0x00, 0x07, 0x00,  // magic byte-swapped
                       0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(reason_of(bytes), "bad magic 0x584C5553 (expected 0x53554C58)");
}

TEST(Header, RefusesOtherVersions) {
  const Bytes bytes = {0x58, 0x4C, 0x55, 0x53, 0x02, 0x00, 0x07, 0x00,
                       0x0E, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(reason_of(bytes), "unsupported protocol version 2 (expected 1)");
}

TEST(Header, KeepsAnOversizedLengthForTheReaderToSkip) {
  const Bytes bytes = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x07, 0x00,
                       0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF};
  const auto decoded = decode_header(std::span<const uint8_t, kHeaderSize>(bytes.data(), kHeaderSize));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded.value().payload_len, 0xFFFFFFFFu);
}

TEST(Frame, IsTheHeaderFollowedByThePayload) {
  const Bytes payload = {0xAA, 0xBB, 0xCC};
  const Bytes expected = {0x58, 0x4C, 0x55, 0x53, 0x01, 0x00, 0x02, 0x00,
                          0xFF, 0x01, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0xAA, 0xBB, 0xCC};
  EXPECT_EQ(encode_frame(2, OP_ERROR, payload), expected);
}

TEST(Frame, RefusesToEncodeAPayloadOverTheMaximum) {
  const Bytes payload(size_t{kMaxPayload} + 1);
  EXPECT_THROW(encode_frame(1, OP_SET_SYSTEM, payload), Error);
  EXPECT_EQ(encode_frame(1, OP_SET_SYSTEM, std::span(payload).first(kMaxPayload)).size(),
            kHeaderSize + kMaxPayload);
}

TEST(Opcodes, HaveTheOriginalValuesAndNames) {
  EXPECT_EQ(OP_STREAM_INPUT, 0x0001);
  EXPECT_EQ(OP_PROBE_AUTONOMIC, 0x0012);
  EXPECT_EQ(OP_AUTONOMIC_RESULT, 0x010C);
  EXPECT_EQ(OP_ERROR, 0x01FF);
  EXPECT_EQ(opcode_name(OP_RESUME), "OP_RESUME");
  EXPECT_EQ(opcode_name(0x0010), "opcode 0x0010");
  EXPECT_EQ(STOP_ELASTIC_YIELD, 4);   // the code's value; the original's docs say 3
  EXPECT_EQ(MODE_RAW_IMAGE, 4);       // code order; the docs swap 4 and 5
  EXPECT_EQ(INPUT_FLAG_RAW, 0x80);
}

}  // namespace
}  // namespace channel::protocol
