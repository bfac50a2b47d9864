#include "kv/ring.h"

#include <algorithm>
#include <limits>

#include <cassert>

#include "core/error.h"

namespace channel::kv {

KvRing::KvRing(int sliding_window)
    : sliding_window_(sliding_window),
      slot_clock_(kPhysicalSlots, -1),
      slot_position_(kPhysicalSlots, -1),
      identity_(kPhysicalSlots),
      ring_sequence_(2 * static_cast<size_t>(kRecallBase)) {
  if (sliding_window < 0) fail("sliding window {} is negative", sliding_window);
  for (uint32_t s = 0; s < kPhysicalSlots; ++s) identity_[s] = s;
  set_anchor_count(0);
}

void KvRing::set_anchor_count(uint32_t anchors) {
  if (clock_ != 0) fail("the anchor count can only be set before the first token (clock is {})", clock_);
  if (anchors > kMaxAnchors) fail("{} anchor tokens exceed the {} the geometry allows", anchors, kMaxAnchors);
  use_anchor_count(anchors);
}

void KvRing::use_anchor_count(uint32_t anchors) {
  anchors_ = anchors;
  contract_ = RetentionContract::channel_geometry(anchors);
  const uint32_t ring = ring_size(anchors);
  for (uint32_t k = 0; k < 2 * ring; ++k) ring_sequence_[k] = anchors + k % ring;
}

void KvRing::mark_span(SpanType type) {
  if (transient_) return;  // transient tokens are not part of the stream
  if (clock_ < anchors_ || spans_.empty()) {
    pending_type_ = type;
    return;
  }
  Span& open = spans_.back();
  if (open.end_clock == open.start_clock) {
    open.type = type;  // nothing written in it yet: relabel instead of keeping an empty span
    return;
  }
  spans_.push_back(Span{type, clock_, clock_, slot_of(clock_)});
}

uint32_t KvRing::max_batch() const {
  return transient_ ? transient_capacity() - scratch_used_ - static_cast<uint32_t>(spilled_from_.size()) : ring_slots();
}

void KvRing::evict_through(int64_t clock) {
  while (!spans_.empty() && spans_.front().start_clock <= clock) {
    Span& front = spans_.front();
    const bool open = spans_.size() == 1;
    // A closed span goes as a whole; the open span (longer than the ring) only up to `clock`.
    const int64_t end = open ? std::min(front.end_clock, clock + 1) : front.end_clock;
    for (int64_t c = front.start_clock; c < end; ++c) {
      const uint32_t slot = slot_of(c);
      if (slot_clock_[slot] == c) slot_clock_[slot] = slot_position_[slot] = -1;
    }
    if (open) {
      front.start_clock = end;
      front.first_slot = slot_of(end);
      break;
    }
    spans_.pop_front();
  }
}

void KvRing::append(uint32_t n, Placement& placement) {
  if (n == 0) fail("nothing to append");
  if (n > max_batch()) {
    fail("{} tokens do not fit: at most {} {} tokens per batch", n, max_batch(), transient_ ? "transient" : "ring");
  }
  placement.slots.clear();
  placement.positions.clear();
  placement.rotations.clear();
  placement.displaced.clear();
  const int64_t first_query = clock_;
  if (transient_) {
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t slot = place_transient(clock_ + i, placement);
      placement.slots.push_back(slot);
      placement.positions.push_back(static_cast<int32_t>(clock_ + i));
    }
    clock_ += n;
    // Beyond what the committed layout allows: move anchors and recall just far enough.
    const int64_t oldest_movable = oldest_movable_position();
    const int64_t excess = oldest_movable == std::numeric_limits<int64_t>::max()
                               ? 0  // no anchors or recall keys: nothing can be too far back
                               : (clock_ - 1) - oldest_movable - (kMaxRelativeDistance - 1);
    if (excess > 0) {
      std::vector<uint32_t> movable = anchor_slots();
      const auto recall = recall_slots();
      movable.insert(movable.end(), recall.begin(), recall.end());
      move(std::move(movable), excess, placement.rotations);
      transient_shift_ += excess;
    }
    rebuild_views(first_query);
    return;
  }

  const int64_t ring = ring_slots();
  for (uint32_t i = 0; i < n; ++i) {
    const int64_t c = clock_;
    if (c >= anchors_) {
      if (c - ring >= anchors_) evict_through(c - ring);  // the slot's previous token must go first
      if (spans_.empty()) spans_.push_back(Span{pending_type_, c, c, slot_of(c)});
      spans_.back().end_clock = c + 1;
    }
    const uint32_t slot = slot_of(c);
    slot_clock_[slot] = slot_position_[slot] = c;
    placement.slots.push_back(slot);
    placement.positions.push_back(static_cast<int32_t>(c));
    clock_ = c + 1;
  }
  while (!spans_.empty() && spans_.front().start_clock == spans_.front().end_clock && spans_.size() > 1) spans_.pop_front();
  oldest_live_ = spans_.empty() ? clock_ : spans_.front().start_clock;
  // The live ring is what the retention contract retains, less whole spans evicted early.
  assert(oldest_live_ == clock_ || contract_.retained(clock_ - 1, oldest_live_));
  rebase_if_needed(placement.rotations);
  committed_first_query_ = first_query;
  rebuild_views(first_query);
}

uint32_t KvRing::place_transient(int64_t clock, Placement& placement) {
  uint32_t slot = 0;
  if (scratch_used_ < kScratchSlots) {
    slot = kScratchBase + scratch_used_++;
  } else {
    // The slot the next committed token would take: the oldest live ring token's, if any.
    slot = slot_of(spill_base_ + static_cast<int64_t>(spilled_from_.size()));
    spilled_from_.push_back(SlotEntry{slot_clock_[slot], slot_position_[slot]});
    if (slot_clock_[slot] >= 0) placement.displaced.push_back(slot);
  }
  slot_clock_[slot] = slot_position_[slot] = clock;
  return slot;
}

std::vector<uint32_t> KvRing::anchor_slots() const {
  // Only written anchors: while transient tokens are pending, the clock is past the committed one.
  std::vector<uint32_t> slots;
  for (uint32_t a = 0; a < anchors_ && a < committed_clock(); ++a) slots.push_back(a);
  return slots;
}

std::vector<uint32_t> KvRing::recall_slots() const {
  return {identity_.begin() + kRecallBase, identity_.begin() + kRecallBase + recall_count_};
}

void KvRing::move(std::vector<uint32_t> slots, int64_t delta, std::vector<Rotation>& out) {
  if (slots.empty() || delta == 0) return;
  for (uint32_t slot : slots) slot_position_[slot] += delta;
  out.push_back(Rotation{std::move(slots), delta});
}

int64_t KvRing::oldest_movable_position() const {
  // Anchors and recall move as blocks, so their first slots hold their oldest positions.
  int64_t oldest = std::numeric_limits<int64_t>::max();
  if (anchors_ > 0 && committed_clock() > 0) oldest = std::min(oldest, slot_position_[0]);
  if (recall_count_ > 0) oldest = std::min(oldest, slot_position_[kRecallBase]);
  return oldest;
}

void KvRing::rebase_if_needed(std::vector<Rotation>& out) {
  // Transient tokens may follow: keep room for a scratch's worth of queries where the layout
  // allows (longer probes move anchors and recall for their duration, see append).
  const int64_t last_query = clock_ - 1;
  if (last_query + kScratchSlots - oldest_movable_position() < kMaxRelativeDistance) return;
  // New layout behind the live ring: recall, then anchors, then the ring. Just after the first
  // wrap the live ring may start fewer than recall-count clocks after the anchors: there is no
  // room before the anchors, and recall starts at position 0, overlapping them, as write_recall
  // places it. No query reaches 4096 positions back from there yet: the live ring starts at or
  // after clock - 3968 + anchors, so a start below 0 means clock < 4096.
  const auto anchors = anchor_slots();
  const auto recall = recall_slots();
  const int64_t anchors_start = oldest_live_ - static_cast<int64_t>(anchors.size());
  const int64_t recall_start = std::max<int64_t>(0, anchors_start - static_cast<int64_t>(recall.size()));
  if (!anchors.empty()) move(anchors, anchors_start - slot_position_[anchors.front()], out);
  if (!recall.empty()) move(recall, recall_start - slot_position_[recall.front()], out);
}

int64_t KvRing::begin_transient() {
  if (transient_) fail("already running transient tokens");
  transient_ = true;
  transient_start_ = clock_;
  transient_shift_ = 0;
  scratch_used_ = 0;
  spill_base_ = std::max<int64_t>(clock_, anchors_);  // a ring clock, also before the anchors are all written
  spilled_from_.clear();
  return clock_;
}

std::vector<Rotation> KvRing::rollback(int64_t clock) {
  if (!transient_ || clock != transient_start_) {
    fail("rollback to clock {} does not match the transient start {}", clock, transient_ ? transient_start_ : -1);
  }
  for (uint32_t i = 0; i < scratch_used_; ++i) slot_clock_[kScratchBase + i] = slot_position_[kScratchBase + i] = -1;
  for (size_t k = 0; k < spilled_from_.size(); ++k) {
    const uint32_t slot = slot_of(spill_base_ + static_cast<int64_t>(k));
    slot_clock_[slot] = spilled_from_[k].clock;
    slot_position_[slot] = spilled_from_[k].position;
  }
  spilled_from_.clear();
  std::vector<Rotation> undo;
  if (transient_shift_ != 0) {
    std::vector<uint32_t> movable = anchor_slots();
    const auto recall = recall_slots();
    movable.insert(movable.end(), recall.begin(), recall.end());
    move(std::move(movable), -transient_shift_, undo);
  }
  clock_ = transient_start_;
  transient_ = false;
  transient_shift_ = 0;
  scratch_used_ = 0;
  rebuild_views(committed_first_query_);
  return undo;
}

Placement KvRing::write_recall(uint32_t count) {
  if (transient_) fail("recall cannot be written while transient tokens are pending");
  if (count > kRecallSlots) fail("{} recall tokens exceed the {} recall slots", count, kRecallSlots);
  clear_recall();
  Placement placement;
  const int64_t start = std::max<int64_t>(0, oldest_live_ - count);
  for (uint32_t r = 0; r < count; ++r) {
    const uint32_t slot = kRecallBase + r;
    slot_clock_[slot] = slot_position_[slot] = start + r;
    placement.slots.push_back(slot);
    placement.positions.push_back(static_cast<int32_t>(start + r));
  }
  recall_count_ = count;
  rebase_if_needed(placement.rotations);
  rebuild_views(committed_first_query_);
  return placement;
}

void KvRing::clear_recall() {
  for (uint32_t r = 0; r < recall_count_; ++r) slot_clock_[kRecallBase + r] = slot_position_[kRecallBase + r] = -1;
  recall_count_ = 0;
  rebuild_views(committed_first_query_);
}

void KvRing::rebuild_views(int64_t first_query_clock) {
  last_query_clock_ = clock_ - 1;
  const int64_t committed_end = transient_ ? transient_start_ : clock_;
  const auto identity_run = [this](int64_t begin, int64_t end) {
    return end > begin ? std::span<const uint32_t>(identity_.data() + begin, static_cast<size_t>(end - begin))
                       : std::span<const uint32_t>();
  };
  // Ring clocks [begin, end) are consecutive entries of the ring sequence, even across a wrap.
  const auto ring_run = [this](int64_t begin, int64_t end) {
    if (end <= begin) return std::span<const uint32_t>();
    const size_t start = static_cast<size_t>((begin - anchors_) % ring_size(anchors_));
    return std::span<const uint32_t>(ring_sequence_.data() + start, static_cast<size_t>(end - begin));
  };
  // Transient tokens past the scratch took the slots of the oldest ring clocks, up to this one.
  const int64_t spill_end = spill_base_ + static_cast<int64_t>(spilled_from_.size());
  const int64_t displaced_end = spilled_from_.empty() ? 0 : spill_end - ring_size(anchors_);
  const int64_t ring_begin = std::max({oldest_live_, int64_t{anchors_}, displaced_end});
  const auto scratch = identity_run(kScratchBase, kScratchBase + scratch_used_);
  const auto spilled = ring_run(spill_base_, spill_end);
  global_view_.runs = {identity_run(0, std::min<int64_t>(anchors_, committed_end)),
                       identity_run(kRecallBase, kRecallBase + recall_count_), ring_run(ring_begin, committed_end),
                       scratch, spilled};
  // Sliding layers: every clock some query of the batch can see, if it is still live.
  const int64_t sliding_begin = std::max<int64_t>(0, first_query_clock - sliding_window_ + 1);
  sliding_view_.runs = {identity_run(sliding_begin, std::min<int64_t>(anchors_, committed_end)),
                        ring_run(std::max(sliding_begin, ring_begin), committed_end), scratch, spilled, {}};
}

int64_t KvRing::max_global_distance() const {
  // Positions only grow along each run except where anchors and recall were moved, which
  // moves whole runs: the first slot of each run holds its oldest position.
  int64_t oldest_position = std::numeric_limits<int64_t>::max();
  for (const auto& run : global_view_.runs) {
    if (!run.empty()) oldest_position = std::min(oldest_position, slot_position_[run.front()]);
  }
  return oldest_position == std::numeric_limits<int64_t>::max() ? 0 : last_query_clock_ - oldest_position;
}

}  // namespace channel::kv
