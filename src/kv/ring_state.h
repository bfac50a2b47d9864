// Everything that makes a KvRing what it is between requests, as plain values (snapshots). The
// slot tables are not stored: they follow from these fields (anchor and recall keys are moved
// only as blocks, ring keys never), so a state cannot disagree with its own tables.
#pragma once

#include <cstdint>
#include <vector>

#include "kv/span.h"

namespace channel::kv {

struct RingState {
  uint32_t anchors = 0;          // N_sys
  int64_t clock = 0;             // next clock
  int64_t oldest_live = 0;       // first live ring clock (== clock while the ring is empty)
  std::vector<Span> spans;       // live ring spans, oldest first; the last one is open
  SpanType pending_type = SpanType::User;  // type of the span the next ring token opens
  int64_t anchor_position = 0;   // RoPE position of anchor slot 0's key (0 while none is written)
  uint32_t recall_count = 0;     // active recall slots kRecallBase .. + recall_count - 1
  int64_t recall_clock = 0;      // clock of the first recall slot (0 without recall)
  int64_t recall_position = 0;   // RoPE position of the first recall key (0 without recall)
  int64_t committed_first_query = 0;  // first query of the last committed batch (sliding view)
  bool operator==(const RingState&) const = default;
};

}  // namespace channel::kv
