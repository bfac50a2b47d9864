// Helpers for spelling out expected wire bytes by hand in the protocol tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "protocol/header.h"

namespace channel::test {

using Bytes = std::vector<uint8_t>;

inline Bytes text_bytes(std::string_view text) { return {text.begin(), text.end()}; }

inline Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// What follows the 16-byte header of a whole frame.
inline std::span<const uint8_t> payload_of(const Bytes& frame) {
  return std::span(frame).subspan(protocol::kHeaderSize);
}

}  // namespace channel::test
