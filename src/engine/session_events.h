// What a session reports while it works. The server turns these into frames; the CLI chat
// prints them. The engine knows nothing of the wire format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/tool_call.h"

namespace channel {

enum class EngineStatus : uint8_t { Idle = 0, Encoding = 1, Generating = 2 };

// Why a decode burst ended (values as on the wire).
enum class StopReason : uint8_t { EndOfTurn = 0, MaxTokens = 1, Aborted = 2, ToolCall = 3, ElasticYield = 4 };

struct StatusReport {
  EngineStatus status = EngineStatus::Idle;
  uint16_t active_slots = 0;  // slots the global layers read
  uint16_t flags = 0;
  float tokens_per_second = 0.0f;
  uint32_t current = 0;  // progress ...
  uint32_t total = 0;    // ... of this many tokens
  uint16_t archived_episodes = 0;  // episodes in the memory store (STATUS archived_diffs)
};

struct TurnSummary {
  uint32_t tokens = 0;
  uint32_t elapsed_ms = 0;
  float tokens_per_second = 0.0f;
  StopReason reason = StopReason::EndOfTurn;
};

class SessionEvents {
 public:
  virtual ~SessionEvents() = default;
  // One generated token: its id, the clock it occupies when fed, the raw vocabulary piece
  // (spaces as U+2581, as the original sends them) and whether it is part of a thought.
  virtual void token(int32_t id, int64_t clock, std::string_view piece, bool thought) = 0;
  virtual void status(const StatusReport& report) = 0;
  virtual void turn_complete(const TurnSummary& summary) = 0;
  virtual void tool_call(const ToolCall& call) = 0;
};

}  // namespace channel
