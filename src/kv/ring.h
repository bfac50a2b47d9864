// The KV ring: which physical slot each token of the endless stream is written to, which slots
// each layer type may read, and when anchor and recall keys must be re-rotated. It is host
// bookkeeping only (integers); the backend holds the keys and values.
//
// - Anchors (Tier 1): clocks 0 .. N_sys-1 in slots 0 .. N_sys-1, never evicted. N_sys is set
//   before anything is written (the system prompt's length).
// - Ring (Tier 2): clock c >= N_sys goes to slot N_sys + (c - N_sys) mod W. Before a write would
//   overwrite a live token, the whole oldest span is evicted, so the live ring is always a
//   suffix of whole spans. (A single span longer than the ring loses its oldest tokens one by
//   one: there is no whole span to evict.)
// - Recall (Tier 3): slots 3968..4095, written only through write_recall().
// - Transient tokens (probes) go to the scratch slots after the 4096, and those beyond the
//   scratch to the ring slots the next committed tokens would take (up to a whole ring). A ring
//   slot that holds a live token is reported as displaced: while the probe runs the views leave
//   it out, the caller keeps its KV, and rollback() puts the slot tables back (the caller puts
//   back the KV), so the state after a rollback is exactly the state before the probe.
// - Bounded positions: RoPE positions are clocks, but before a global-layer query could see a
//   key 4096 or more positions back, the anchors and recall keys are moved forward (the step
//   returns the rotations the backend must apply first) to sit just before the live ring, in
//   the order recall, anchors, ring. Anchors + ring + recall span at most 4096 positions, so a
//   committed query is always within reach; transient queries past that move the anchors and
//   recall a little further for the duration of the probe, and rollback() moves them back.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kv/geometry.h"
#include "kv/retention_contract.h"
#include "kv/ring_state.h"
#include "kv/slot_runs.h"
#include "kv/span.h"
#include "kv/span_queue.h"

namespace channel::kv {

// Keys of these slots must be re-rotated `delta` positions forward before the next forward pass.
struct Rotation {
  std::vector<uint32_t> slots;
  int64_t delta = 0;
};

// Where one appended batch goes.
struct Placement {
  std::vector<uint32_t> slots;
  std::vector<int32_t> positions;
  std::vector<Rotation> rotations;  // apply before running the batch
  // Transient tokens only: live ring slots among `slots`, whose KV must be kept before the batch
  // runs and written back after rollback().
  std::vector<uint32_t> displaced;
};

class KvRing {
 public:
  explicit KvRing(int sliding_window);

  // Sets N_sys; only before the first token (throws channel::Error otherwise or when
  // anchors > kMaxAnchors).
  void set_anchor_count(uint32_t anchors);
  uint32_t anchor_count() const { return anchors_; }
  uint32_t ring_slots() const { return ring_size(anchors_); }

  // Starts a new span at the current clock; tokens appended before any mark form a User span.
  void mark_span(SpanType type);

  // Places the next `n` tokens (1..max_batch()) and updates the views to include them. The
  // second form refills `placement`, keeping its vectors' storage: a decode loop that keeps one
  // Placement appends a token at a time without allocating.
  Placement append(uint32_t n) {
    Placement placement;
    append(n, placement);
    return placement;
  }
  void append(uint32_t n, Placement& placement);
  uint32_t max_batch() const;

  // Transient tokens: begin_transient() returns the clock to roll back to; appends until
  // rollback() go to scratch slots, then to ring slots (at most transient_capacity() tokens,
  // see Placement::displaced).
  int64_t begin_transient();
  // Returns the rotations that undo what the transient tokens needed (apply them to the backend).
  // Costs O(slots the transient tokens wrote or moved).
  std::vector<Rotation> rollback(int64_t clock);
  bool transient() const { return transient_; }
  uint32_t transient_capacity() const { return kScratchSlots + ring_slots(); }

  // Recall (Tier 3): activates `count` recall slots, placed at the positions just before the
  // live ring, and returns them (with any rotations of other keys); clear_recall() deactivates
  // all. Not while transient tokens are pending.
  Placement write_recall(uint32_t count);
  void clear_recall();

  int64_t clock() const { return clock_; }
  int sliding_window() const { return sliding_window_; }
  // Physical slot of a clock, by the retention contract of the current geometry.
  uint32_t slot_of(int64_t clock) const { return static_cast<uint32_t>(contract_.slot(clock)); }
  int64_t oldest_live_clock() const { return oldest_live_; }
  const SpanQueue& live_spans() const { return spans_; }

  // Slots each layer type reads, chronological: global = anchors, recall, live ring, then the
  // transient tokens (scratch, ring slots); sliding = the clocks within the window of the last
  // append's queries, and the transient tokens. While transient tokens are pending the live ring
  // leaves out the slots they displaced.
  const SlotRuns& global_view() const { return global_view_; }
  const SlotRuns& sliding_view() const { return sliding_view_; }

  // Clock stored in a slot (-1: empty or evicted), for checks and snapshots.
  int64_t slot_clock(uint32_t slot) const { return slot_clock_[slot]; }
  // RoPE position of the key in a slot as the backend holds it now.
  int64_t slot_position(uint32_t slot) const { return slot_position_[slot]; }
  // Largest distance from a query of the last append to any key in the global view.
  int64_t max_global_distance() const;

  // Snapshots (ring_state.cpp). state() throws channel::Error while transient tokens are
  // pending. restore() checks the state against the geometry and the retention contract and
  // throws channel::Error, with the ring unchanged, if this ring could never have been in it;
  // otherwise the ring, its slot tables and its views are exactly as when the state was taken.
  RingState state() const;
  // state() into `out`, reusing its storage (the decode loop keeps the state before each token;
  // debug builds check that a state rebuilds the slot tables in state() only, since the check
  // allocates).
  void save_state(RingState& out) const;
  void restore(const RingState& state);

 private:
  void use_anchor_count(uint32_t anchors);  // the geometry of N_sys = anchors
  int64_t committed_clock() const { return transient_ ? transient_start_ : clock_; }
  uint32_t place_transient(int64_t clock, Placement& placement);
  void evict_through(int64_t clock);
  std::vector<uint32_t> anchor_slots() const;
  std::vector<uint32_t> recall_slots() const;
  // Moves slots' positions by delta and returns the rotation (none for no slots or delta 0).
  void move(std::vector<uint32_t> slots, int64_t delta, std::vector<Rotation>& out);
  int64_t oldest_movable_position() const;  // INT64_MAX when there is nothing to move
  void rebase_if_needed(std::vector<Rotation>& out);
  void rebuild_views(int64_t first_query_clock);

  int sliding_window_;
  uint32_t anchors_ = 0;
  RetentionContract contract_ = RetentionContract::channel_geometry(0);
  int64_t clock_ = 0;
  int64_t oldest_live_ = 0;     // first live ring clock (== clock_ when the ring is empty)
  SpanQueue spans_{kMaxLiveSpans};  // live ring spans, oldest first; the last one is open
  SpanType pending_type_ = SpanType::User;  // type of the span the next ring token opens
  std::vector<int64_t> slot_clock_;
  std::vector<int64_t> slot_position_;
  uint32_t recall_count_ = 0;   // recall slots kRecallBase .. + recall_count_ - 1 are active

  bool transient_ = false;
  int64_t transient_start_ = 0;
  int64_t transient_shift_ = 0;  // how far a probe moved anchors and recall
  uint32_t scratch_used_ = 0;
  // Transient tokens past the scratch: the k-th goes to the slot of ring clock spill_base_ + k,
  // which held clock and position spilled_from_[k] (-1: no live token).
  struct SlotEntry {
    int64_t clock, position;
  };
  int64_t spill_base_ = 0;
  std::vector<SlotEntry> spilled_from_;
  int64_t last_query_clock_ = -1;
  int64_t committed_first_query_ = 0;  // first query of the last committed batch

  std::vector<uint32_t> identity_;       // identity_[s] = s: runs of consecutive slots
  std::vector<uint32_t> ring_sequence_;  // slot of ring index k mod W, for k < 2W: runs that wrap
  SlotRuns global_view_;
  SlotRuns sliding_view_;
};

}  // namespace channel::kv
