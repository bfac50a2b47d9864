// Semantic spans of the token stream (seed 000): the ring evicts whole spans, never a part of
// one, so what the model still sees always starts at a span boundary.
#pragma once

#include <cstdint>
#include <string_view>

namespace channel::kv {

enum class SpanType : uint8_t {
  System = 0,
  User = 1,
  Thought = 2,
  ToolCall = 3,
  ToolResult = 4,
  ResponseSentence = 5,
  TurnEnd = 6,
};

std::string_view span_type_name(SpanType type);
inline constexpr SpanType kLastSpanType = SpanType::TurnEnd;  // types are 0 .. kLastSpanType

// Clocks [start_clock, end_clock) of one span; its ring slots start at first_slot (wrapping).
struct Span {
  SpanType type = SpanType::User;
  int64_t start_clock = 0;
  int64_t end_clock = 0;
  uint32_t first_slot = 0;
  uint32_t slot_count() const { return static_cast<uint32_t>(end_clock - start_clock); }
  bool operator==(const Span&) const = default;
};

}  // namespace channel::kv
