// Cuts a byte stream into frames. Bytes go in as they arrive, in pieces of any size; complete
// frames, and errors for what cannot be a frame, come out in stream order. The result depends
// only on the bytes, never on how they were split into pushes.
//
// Rules (the original reader stops for good on the first bad header; this one recovers):
// - Bad magic or version: one FrameError (msg_id 0: nothing in a refused header is trusted),
//   then the bytes are scanned one by one for the next magic+version (kHeaderPrefix), where
//   reading resumes. Garbage between frames therefore costs one error, however long it is.
// - payload_len over kMaxPayload: one FrameError with the header's msg_id, then exactly
//   payload_len bytes are skipped without being kept. The header itself was valid, so the
//   stream stays in step with the peer, as it would with the original (which reads them).
// - Every opcode is framed the same way, OP_ABORT included: its payload_len bytes are its
//   payload (the original reads none for an abort and would take them as the next header).
// - The reserved header field and unknown opcodes are passed through; judging the payload is
//   decode_inbound's or decode_outbound's job.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "protocol/frame.h"

namespace channel::protocol {

// A stretch of the stream that is not a frame; the server answers it with OP_ERROR.
struct FrameError {
  uint16_t msg_id = 0;
  std::string reason;
  bool operator==(const FrameError&) const = default;
};

using FrameReadResult = std::variant<Frame, FrameError>;

class FrameReader {
 public:
  void push(std::span<const uint8_t> bytes);

  // The next frame or error, or nothing until more bytes are pushed.
  std::optional<FrameReadResult> pop();

  // Bytes pushed but not yet returned or dropped: at most a partial frame, or the tail of a
  // garbage run too short to rule out a header prefix, plus what was pushed since the last pop.
  size_t buffered() const { return buffer_.size() - start_; }

 private:
  enum class State { Header, Payload, Skip, Resync };

  std::span<const uint8_t> unread() const { return std::span(buffer_).subspan(start_); }
  void drop(size_t n) { start_ += n; }
  // The steps of pop(), each for its state and called when its bytes may be there.
  std::optional<FrameReadResult> read_header();  // a FrameError, or nullopt when the header is good
  FrameReadResult take_frame();
  bool skip_payload();  // false: more of the oversized payload is still to come
  bool resync();        // false: no header prefix yet

  std::vector<uint8_t> buffer_;
  size_t start_ = 0;  // bytes of buffer_ already consumed; compacted away on the next push
  State state_ = State::Header;
  Header header_;           // of the frame whose payload is awaited or skipped
  uint32_t skip_left_ = 0;  // bytes of an oversized payload still to drop (Skip state)
};

}  // namespace channel::protocol
