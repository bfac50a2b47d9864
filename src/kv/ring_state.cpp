// KvRing::state and KvRing::restore: the ring as plain values and back. restore() accepts only
// states the ring itself could have reached between requests, so a snapshot that passed its
// checksums but was made by another build or edited by hand cannot put the ring into a layout
// the views, the eviction or the position bound were never written for.
#include "kv/ring.h"

#include <algorithm>
#include <cassert>
#include <limits>

#include "core/error.h"

namespace channel::kv {
namespace {

// Positions reach the backend as int32; transient tokens may add kMaxTransientTokens to the clock.
constexpr int64_t kMaxStateClock = std::numeric_limits<int32_t>::max() - int64_t{kMaxTransientTokens};

void check_range(int64_t value, int64_t low, int64_t high, const char* what) {
  if (value < low || value > high) fail("ring state: {} {} is outside {}..{}", what, value, low, high);
}

void validate(const RingState& s) {
  if (s.anchors > kMaxAnchors) fail("ring state: {} anchors exceed the {} the geometry allows", s.anchors, kMaxAnchors);
  check_range(s.clock, 0, kMaxStateClock, "clock");
  check_range(s.oldest_live, 0, s.clock, "oldest live clock");
  check_range(s.committed_first_query, 0, std::max<int64_t>(0, s.clock - 1), "first query of the last batch");
  if (static_cast<uint8_t>(s.pending_type) > static_cast<uint8_t>(kLastSpanType)) {
    fail("ring state: pending span type {} is unknown", static_cast<int>(s.pending_type));
  }

  // The live ring: whole spans, contiguous and in order, from oldest_live up to the clock.
  const RetentionContract contract = RetentionContract::channel_geometry(s.anchors);
  if (s.clock <= s.anchors) {
    if (!s.spans.empty()) fail("ring state: {} spans before the ring's first token", s.spans.size());
    if (s.oldest_live != s.clock) fail("ring state: oldest live clock {} with an empty ring at clock {}", s.oldest_live, s.clock);
  } else {
    if (s.spans.empty()) fail("ring state: no spans for ring clocks {}..{}", s.anchors, s.clock - 1);
    if (s.oldest_live < s.anchors || s.oldest_live >= s.clock) {
      fail("ring state: oldest live clock {} is not a ring clock below {}", s.oldest_live, s.clock);
    }
    // Every live clock is retained by the contract: the live ring is at most one ring long.
    if (!contract.retained(s.clock - 1, s.oldest_live)) {
      fail("ring state: {} live ring tokens exceed the {} ring slots", s.clock - s.oldest_live, contract.cache_size());
    }
    int64_t expected_start = s.oldest_live;
    for (size_t i = 0; i < s.spans.size(); ++i) {
      const Span& span = s.spans[i];
      const bool last = i + 1 == s.spans.size();
      if (static_cast<uint8_t>(span.type) > static_cast<uint8_t>(kLastSpanType)) {
        fail("ring state: span {} has unknown type {}", i, static_cast<int>(span.type));
      }
      if (span.start_clock != expected_start) {
        fail("ring state: span {} starts at clock {}, expected {}", i, span.start_clock, expected_start);
      }
      // Only the open span may be empty (marked, nothing written in it yet).
      if (span.end_clock > s.clock || span.end_clock < span.start_clock || (!last && span.end_clock == span.start_clock)) {
        fail("ring state: span {} ends at clock {} (starts {}, clock {})", i, span.end_clock, span.start_clock, s.clock);
      }
      if (span.first_slot != slot_of_clock(span.start_clock, s.anchors)) {
        fail("ring state: span {} starts in slot {}, its clock {} writes slot {}", i, span.first_slot, span.start_clock,
             slot_of_clock(span.start_clock, s.anchors));
      }
      expected_start = span.end_clock;
    }
    if (expected_start != s.clock) fail("ring state: the spans end at clock {}, not at the clock {}", expected_start, s.clock);
  }

  // Anchor and recall keys: each a block of consecutive positions, behind the live ring.
  const int64_t written_anchors = std::min<int64_t>(s.anchors, s.clock);
  if (written_anchors == 0) {
    check_range(s.anchor_position, 0, 0, "anchor position without anchors");
  } else {
    check_range(s.anchor_position, 0, s.oldest_live - written_anchors, "first anchor position");
  }
  if (s.recall_count > kRecallSlots) fail("ring state: {} recall tokens exceed the {} recall slots", s.recall_count, kRecallSlots);
  if (s.recall_count == 0) {
    check_range(s.recall_clock, 0, 0, "recall clock without recall");
    check_range(s.recall_position, 0, 0, "recall position without recall");
  } else {
    check_range(s.recall_clock, 0, kMaxStateClock - s.recall_count, "first recall clock");
    check_range(s.recall_position, 0, kMaxStateClock - s.recall_count, "first recall position");
  }
  // Bounded positions: a committed query reaches every key it reads.
  if (s.clock > 0) {
    int64_t oldest = s.clock - 1;
    if (written_anchors > 0) oldest = std::min(oldest, s.anchor_position);
    if (s.recall_count > 0) oldest = std::min(oldest, s.recall_position);
    if (s.clock - 1 - oldest >= kMaxRelativeDistance) {
      fail("ring state: the last query at {} would read a key at position {}, {} or more positions back", s.clock - 1,
           oldest, kMaxRelativeDistance);
    }
  }
}

// The ring's slot tables as the state implies them (scratch empty).
void derive_slot_tables(const RingState& s, std::vector<int64_t>& clocks, std::vector<int64_t>& positions) {
  clocks.assign(kPhysicalSlots, -1);
  positions.assign(kPhysicalSlots, -1);
  for (int64_t a = 0; a < std::min<int64_t>(s.anchors, s.clock); ++a) {
    clocks[a] = a;
    positions[a] = s.anchor_position + a;
  }
  for (int64_t c = std::max<int64_t>(s.oldest_live, s.anchors); c < s.clock; ++c) {
    const uint32_t slot = slot_of_clock(c, s.anchors);
    clocks[slot] = positions[slot] = c;
  }
  for (uint32_t r = 0; r < s.recall_count; ++r) {
    clocks[kRecallBase + r] = s.recall_clock + r;
    positions[kRecallBase + r] = s.recall_position + r;
  }
}

}  // namespace

void KvRing::save_state(RingState& s) const {
  if (transient_) fail("the KV ring cannot be saved while transient tokens are pending");
  const bool anchors_written = anchors_ > 0 && clock_ > 0;
  const bool recall = recall_count_ > 0;
  s.anchors = anchors_;
  s.clock = clock_;
  s.oldest_live = oldest_live_;
  s.spans.assign(spans_.begin(), spans_.end());
  s.pending_type = pending_type_;
  s.anchor_position = anchors_written ? slot_position_[0] : 0;
  s.recall_count = recall_count_;
  s.recall_clock = recall ? slot_clock_[kRecallBase] : 0;
  s.recall_position = recall ? slot_position_[kRecallBase] : 0;
  s.committed_first_query = committed_first_query_;
}

RingState KvRing::state() const {
  RingState s;
  save_state(s);
#ifndef NDEBUG
  std::vector<int64_t> clocks, positions;
  derive_slot_tables(s, clocks, positions);
  assert(clocks == slot_clock_ && positions == slot_position_);  // the state says it all
#endif
  return s;
}

void KvRing::restore(const RingState& s) {
  validate(s);
  use_anchor_count(s.anchors);
  clock_ = s.clock;
  oldest_live_ = s.oldest_live;
  spans_.assign(s.spans.begin(), s.spans.end());
  pending_type_ = s.pending_type;
  recall_count_ = s.recall_count;
  derive_slot_tables(s, slot_clock_, slot_position_);
  transient_ = false;
  transient_start_ = 0;
  transient_shift_ = 0;
  scratch_used_ = 0;
  spilled_from_.clear();
  committed_first_query_ = s.committed_first_query;
  rebuild_views(committed_first_query_);
}

}  // namespace channel::kv
