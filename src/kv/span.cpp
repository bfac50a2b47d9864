#include "kv/span.h"

namespace channel::kv {

std::string_view span_type_name(SpanType type) {
  switch (type) {
    case SpanType::System: return "system";
    case SpanType::User: return "user";
    case SpanType::Thought: return "thought";
    case SpanType::ToolCall: return "tool_call";
    case SpanType::ToolResult: return "tool_result";
    case SpanType::ResponseSentence: return "response_sentence";
    case SpanType::TurnEnd: return "turn_end";
  }
  return "unknown";
}

}  // namespace channel::kv
