// libFuzzer target for the protocol codec. The input is a byte stream as a peer might send it.
// Properties, besides never crashing and no undefined behaviour:
// - the frame reader gives the same frames and errors whether the stream arrives whole, one byte
//   at a time or in random pieces;
// - every frame's payload decodes (as inbound and as outbound) to a message or a DecodeError;
// - a decoded message encodes without throwing, and its encoding is canonical: decoding it and
//   encoding again gives the same bytes, and the frame reader reads it back as one frame.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <span>
#include <vector>

#include "fuzz/fuzz_properties.h"
#include "protocol/frame_reader.h"
#include "protocol/inbound.h"
#include "protocol/outbound.h"

namespace {

using channel::fuzz::violated;

using namespace channel::protocol;

constexpr uint32_t kVocabSize = 262144;  // Gemma 4's

// Reads the whole stream, pushing it in pieces of the sizes `next_size` gives.
template <typename NextSize>
std::vector<FrameReadResult> read_stream(std::span<const uint8_t> stream, NextSize next_size) {
  FrameReader reader;
  std::vector<FrameReadResult> results;
  for (size_t at = 0; at < stream.size();) {
    const size_t n = std::min(next_size(), stream.size() - at);
    reader.push(stream.subspan(at, n));
    at += n;
    while (auto result = reader.pop()) results.push_back(std::move(*result));
  }
  return results;
}

// The piece sizes depend on the input only, so a crash reproduces from its input file.
uint32_t fnv1a(std::span<const uint8_t> bytes) {
  uint32_t hash = 2166136261u;
  for (uint8_t byte : bytes) hash = (hash ^ byte) * 16777619u;
  return hash;
}

std::span<const uint8_t> payload_of(const std::vector<uint8_t>& frame) {
  return std::span(frame).subspan(kHeaderSize);
}

template <typename Decode>
void check_canonical(const Frame& frame, Decode decode) {
  const auto decoded = decode(frame.header.opcode, frame.payload);
  if (!decoded.ok()) {
    if (decoded.error().reason.empty()) violated("a refusal has a reason");
    return;
  }
  // An Error thrown here escapes and is reported as a crash: what decodes must encode.
  const auto encoded = encode_frame(frame.header.msg_id, decoded.value());
  const auto again = decode(frame.header.opcode, payload_of(encoded));
  if (!again.ok()) violated("an encoded message decodes");
  if (encode_frame(frame.header.msg_id, again.value()) != encoded) violated("encoding is canonical");

  FrameReader reader;
  reader.push(encoded);
  const auto read_back = reader.pop();
  if (!read_back || reader.pop()) violated("an encoded frame reads back as one frame");
  const auto* frame_back = std::get_if<Frame>(&*read_back);
  if (!frame_back || frame_back->header.msg_id != frame.header.msg_id ||
      frame_back->header.opcode != frame.header.opcode ||
      !std::equal(frame_back->payload.begin(), frame_back->payload.end(), payload_of(encoded).begin(),
                  payload_of(encoded).end())) {
    violated("an encoded frame reads back as itself");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> stream(data, size);
  const auto whole = read_stream(stream, [&] { return stream.size(); });
  if (read_stream(stream, [] { return size_t{1}; }) != whole) violated("byte by byte reads like whole");
  std::minstd_rand random(fnv1a(stream));
  if (read_stream(stream, [&] { return size_t{1} + random() % 64; }) != whole) {
    violated("random pieces read like whole");
  }

  for (const auto& result : whole) {
    const auto* frame = std::get_if<Frame>(&result);
    if (!frame) continue;
    check_canonical(*frame, [](uint16_t opcode, std::span<const uint8_t> payload) {
      return decode_inbound(opcode, payload, kVocabSize);
    });
    check_canonical(*frame, decode_outbound);
  }
  return 0;
}
