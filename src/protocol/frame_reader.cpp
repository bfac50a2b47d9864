#include "protocol/frame_reader.h"

#include <fmt/format.h>

#include <algorithm>

#include "protocol/opcodes.h"

namespace channel::protocol {

void FrameReader::push(std::span<const uint8_t> bytes) {
  // Consumed bytes go once per push, not per frame: a push holding many frames is compacted once.
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(start_));
  start_ = 0;
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::optional<FrameReadResult> FrameReader::pop() {
  for (;;) {
    switch (state_) {
      case State::Header:
        if (unread().size() < kHeaderSize) return std::nullopt;
        if (auto error = read_header()) return error;
        break;
      case State::Payload:
        if (unread().size() < header_.payload_len) return std::nullopt;
        return take_frame();
      case State::Skip:
        if (!skip_payload()) return std::nullopt;
        break;
      case State::Resync:
        if (!resync()) return std::nullopt;
        break;
    }
  }
}

std::optional<FrameReadResult> FrameReader::read_header() {
  auto decoded = decode_header(unread().first<kHeaderSize>());
  if (!decoded.ok()) {
    // The prefix is not at this byte, so the scan starts at the next one.
    drop(1);
    state_ = State::Resync;
    return FrameError{0, decoded.error().reason + "; skipping to the next frame header"};
  }
  header_ = std::move(decoded).value();
  drop(kHeaderSize);
  if (header_.payload_len > kMaxPayload) {
    skip_left_ = header_.payload_len;
    state_ = State::Skip;
    return FrameError{header_.msg_id,
                      fmt::format("{}: payload of {} bytes exceeds the maximum of {} bytes; skipped",
                                  opcode_name(header_.opcode), header_.payload_len, kMaxPayload)};
  }
  state_ = State::Payload;
  return std::nullopt;
}

FrameReadResult FrameReader::take_frame() {
  const auto payload = unread().first(header_.payload_len);
  Frame frame{header_, {payload.begin(), payload.end()}};
  drop(payload.size());
  state_ = State::Header;
  return frame;
}

bool FrameReader::skip_payload() {
  const size_t n = std::min<size_t>(skip_left_, unread().size());
  drop(n);
  skip_left_ -= static_cast<uint32_t>(n);
  if (skip_left_ > 0) return false;
  state_ = State::Header;
  return true;
}

bool FrameReader::resync() {
  const auto bytes = unread();
  const auto found = std::search(bytes.begin(), bytes.end(), kHeaderPrefix.begin(), kHeaderPrefix.end());
  if (found == bytes.end()) {
    // The last few bytes may be the start of a prefix whose rest has not arrived yet.
    drop(bytes.size() - std::min(bytes.size(), kHeaderPrefix.size() - 1));
    return false;
  }
  drop(static_cast<size_t>(found - bytes.begin()));
  state_ = State::Header;
  return true;
}

}  // namespace channel::protocol
