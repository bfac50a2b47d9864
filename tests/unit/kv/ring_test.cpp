// The KV ring against a brute-force model of the geometry: random streams of appends, span
// marks, transient tokens (scratch and displaced ring slots) with rollback and recall writes.
#include "kv/ring.h"
#include "kv/retention_contract.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "core/error.h"

namespace channel::kv {
namespace {

// The geometry written out the slow, obvious way: a map from slot to clock, and a list of spans
// as clock ranges.
class BruteForceRing {
 public:
  BruteForceRing(uint32_t anchors, int window) : anchors_(anchors), window_(window) {}

  void mark(SpanType) { pending_mark_ = true; }

  void append(uint32_t n) {
    first_query_ = clock_;
    const int64_t ring = kRecallBase - anchors_;
    for (uint32_t i = 0; i < n; ++i) {
      const int64_t c = clock_++;
      if (c < anchors_) {
        slots_[static_cast<uint32_t>(c)] = c;
        continue;
      }
      if (spans_.empty() || pending_mark_) spans_.push_back({c, c});
      pending_mark_ = false;
      const uint32_t slot = anchors_ + static_cast<uint32_t>((c - anchors_) % ring);
      if (auto it = slots_.find(slot); it != slots_.end()) {
        // The slot holds a live token: its span goes, whole unless it is the open span.
        const int64_t victim = it->second;
        for (size_t s = 0; s < spans_.size(); ++s) {
          auto& [start, end] = spans_[s];
          if (victim < start || victim >= end) continue;
          const bool open = s + 1 == spans_.size();
          for (int64_t v = start; v < (open ? victim + 1 : end); ++v) slots_.erase(slot_of(v));
          if (open) {
            start = victim + 1;
          } else {
            spans_.erase(spans_.begin() + static_cast<std::ptrdiff_t>(s));
          }
          break;
        }
      }
      slots_[slot] = c;
      spans_.back().second = c + 1;
    }
  }

  uint32_t slot_of(int64_t c) const {
    return c < anchors_ ? static_cast<uint32_t>(c) : anchors_ + static_cast<uint32_t>((c - anchors_) % (kRecallBase - anchors_));
  }

  bool live(int64_t c) const {
    auto it = slots_.find(slot_of(c));
    return it != slots_.end() && it->second == c;
  }

  std::vector<uint32_t> global_view(const std::set<uint32_t>& recall) const {
    std::vector<uint32_t> view;
    for (int64_t c = 0; c < std::min<int64_t>(anchors_, clock_); ++c) view.push_back(static_cast<uint32_t>(c));
    for (uint32_t r : recall) view.push_back(r);
    for (int64_t c = anchors_; c < clock_; ++c) {
      if (live(c)) view.push_back(slot_of(c));
    }
    return view;
  }

  std::vector<uint32_t> sliding_view() const {
    std::vector<uint32_t> view;
    for (int64_t c = std::max<int64_t>(0, first_query_ - window_ + 1); c < clock_; ++c) {
      if (live(c)) view.push_back(slot_of(c));
    }
    return view;
  }

  int64_t clock() const { return clock_; }
  const std::vector<std::pair<int64_t, int64_t>>& spans() const { return spans_; }

 private:
  uint32_t anchors_;
  int window_;
  int64_t clock_ = 0;
  int64_t first_query_ = 0;
  bool pending_mark_ = false;
  std::map<uint32_t, int64_t> slots_;
  std::vector<std::pair<int64_t, int64_t>> spans_;
};

void expect_same_state(const KvRing& ring, const BruteForceRing& model, const std::set<uint32_t>& recall,
                       uint32_t anchors, const std::string& where) {
  ASSERT_EQ(ring.clock(), model.clock()) << where;
  ASSERT_EQ(ring.global_view().to_vector(), model.global_view(recall)) << where;
  ASSERT_EQ(ring.sliding_view().to_vector(), model.sliding_view()) << where;
  // Anchors are never overwritten.
  for (uint32_t a = 0; a < anchors && a < ring.clock(); ++a) ASSERT_EQ(ring.slot_clock(a), a) << where;
  // The live ring is a suffix of whole spans: spans are contiguous and end at the clock.
  const auto& spans = ring.live_spans();
  for (size_t s = 1; s < spans.size(); ++s) ASSERT_EQ(spans[s].start_clock, spans[s - 1].end_clock) << where;
  if (!spans.empty()) {
    ASSERT_EQ(spans.back().end_clock, ring.clock()) << where;
    ASSERT_EQ(ring.oldest_live_clock(), spans.front().start_clock) << where;
  }
  // The contract and the ring agree: every live token is retained and sits in the contract's
  // slot; tokens the ring dropped (whole spans, possibly before the contract would) are really
  // gone from their slots.
  const RetentionContract contract = RetentionContract::channel_geometry(anchors);
  const int64_t current = ring.clock() - 1;
  for (int64_t c = std::max<int64_t>(0, current - kRecallBase); c <= current; ++c) {
    const bool live = c < anchors || c >= ring.oldest_live_clock();
    if (live) {
      ASSERT_TRUE(contract.retained(current, c)) << where << " clock " << c;
      ASSERT_EQ(ring.slot_clock(ring.slot_of(c)), c) << where << " clock " << c;
    } else {
      ASSERT_NE(ring.slot_clock(ring.slot_of(c)), c) << where << " clock " << c;
    }
  }
  ASSERT_LT(ring.max_global_distance(), kMaxRelativeDistance) << where;
}

using SlotTables = std::vector<std::pair<int64_t, int64_t>>;  // clock and position of every slot

SlotTables slot_tables(const KvRing& ring) {
  SlotTables tables;
  for (uint32_t s = 0; s < kPhysicalSlots; ++s) tables.emplace_back(ring.slot_clock(s), ring.slot_position(s));
  return tables;
}

// Transient tokens fill the scratch in order, then the ring slots of the next ring clocks; the
// ones they take from live tokens are reported displaced and leave the views, which then read
// the transient tokens after everything else.
void expect_transient_placement(const KvRing& ring, const BruteForceRing& model, const std::vector<uint32_t>& global,
                                const Placement& p, const std::string& where) {
  const int64_t start = ring.clock() - static_cast<int64_t>(p.slots.size());
  const int64_t first_ring_clock = std::max<int64_t>(start, ring.anchor_count());
  const std::set<uint32_t> live(global.begin(), global.end());
  std::vector<uint32_t> displaced;
  for (size_t i = 0; i < p.slots.size(); ++i) {
    const uint32_t expected = i < kScratchSlots ? kScratchBase + static_cast<uint32_t>(i)
                                                : model.slot_of(first_ring_clock + static_cast<int64_t>(i - kScratchSlots));
    ASSERT_EQ(p.slots[i], expected) << where << " transient token " << i;
    if (live.contains(p.slots[i])) displaced.push_back(p.slots[i]);
  }
  ASSERT_EQ(p.displaced, displaced) << where;
  const std::set<uint32_t> gone(displaced.begin(), displaced.end());
  std::vector<uint32_t> expected_global;
  for (uint32_t slot : global) {
    if (!gone.contains(slot)) expected_global.push_back(slot);
  }
  expected_global.insert(expected_global.end(), p.slots.begin(), p.slots.end());
  ASSERT_EQ(ring.global_view().to_vector(), expected_global) << where;
  std::vector<uint32_t> expected_sliding;
  for (int64_t c = std::max<int64_t>(0, start - ring.sliding_window() + 1); c < start; ++c) {
    const uint32_t slot = model.slot_of(c);
    if (model.live(c) && !gone.contains(slot)) {
      expected_sliding.push_back(slot);
    }
  }
  expected_sliding.insert(expected_sliding.end(), p.slots.begin(), p.slots.end());
  ASSERT_EQ(ring.sliding_view().to_vector(), expected_sliding) << where;
}

class RingProperty : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RingProperty, MatchesBruteForceModel) {
  const uint32_t anchors = GetParam();
  std::mt19937 rng(anchors * 7919 + 1);
  for (int round = 0; round < 3; ++round) {
    const int window = std::uniform_int_distribution<int>(1, 600)(rng);
    KvRing ring(window);
    ring.set_anchor_count(anchors);
    BruteForceRing model(anchors, window);
    std::set<uint32_t> recall;
    const uint32_t max_n = std::max<uint32_t>(1, std::min<uint32_t>(300, ring.ring_slots()));
    for (int step = 0; step < 400; ++step) {
      const std::string where = "round " + std::to_string(round) + " step " + std::to_string(step);
      const int op = std::uniform_int_distribution<int>(0, 9)(rng);
      if (op < 2) {
        const auto type = static_cast<SpanType>(std::uniform_int_distribution<int>(0, 6)(rng));
        ring.mark_span(type);
        if (ring.clock() >= anchors) model.mark(type);
      } else if (op < 8) {
        const uint32_t n = std::uniform_int_distribution<uint32_t>(1, max_n)(rng);
        ring.append(n);
        model.append(n);
      } else if (op == 8) {
        // Transient tokens, in the scratch and then in ring slots, leave no trace.
        const auto global = ring.global_view().to_vector();
        const auto sliding = ring.sliding_view().to_vector();
        const SlotTables tables_before = slot_tables(ring);
        const int64_t saved = ring.begin_transient();
        const uint32_t n = std::uniform_int_distribution<uint32_t>(1, ring.transient_capacity())(rng);
        const Placement p = ring.append(n);
        expect_transient_placement(ring, model, global, p, where);
        ASSERT_LT(ring.max_global_distance(), kMaxRelativeDistance)
            << where << " clock " << ring.clock() << " oldest " << ring.oldest_live_clock() << " n " << n
            << " recall " << recall.size();
        const auto undo = ring.rollback(saved);
        for (const Rotation& r : undo) ASSERT_LT(r.delta, 0) << where;
        ASSERT_EQ(ring.global_view().to_vector(), global) << where;
        ASSERT_EQ(ring.sliding_view().to_vector(), sliding) << where;
        ASSERT_EQ(slot_tables(ring), tables_before) << where;
      } else {
        const uint32_t n = std::uniform_int_distribution<uint32_t>(0, kRecallSlots)(rng);
        ring.write_recall(n);
        recall.clear();
        for (uint32_t r = 0; r < n; ++r) recall.insert(kRecallBase + r);
      }
      expect_same_state(ring, model, recall, anchors, where);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Anchors, RingProperty, ::testing::Values(0u, 1u, 37u, 1000u, 3904u));

TEST(Ring, AnchorsOnlyBeforeTheFirstToken) {
  KvRing ring(16);
  EXPECT_THROW(ring.set_anchor_count(kMaxAnchors + 1), Error);
  ring.set_anchor_count(10);
  ring.append(3);
  EXPECT_THROW(ring.set_anchor_count(5), Error);
}

TEST(Ring, BatchAndRollbackLimits) {
  KvRing ring(16);
  ring.set_anchor_count(kMaxAnchors);
  EXPECT_THROW(ring.append(ring.ring_slots() + 1), Error);
  EXPECT_THROW(ring.append(0), Error);
  const int64_t saved = ring.begin_transient();
  EXPECT_THROW(ring.begin_transient(), Error);
  EXPECT_EQ(ring.transient_capacity(), kScratchSlots + ring.ring_slots());
  EXPECT_THROW(ring.append(ring.transient_capacity() + 1), Error);
  EXPECT_THROW(ring.rollback(saved + 1), Error);
  ring.rollback(saved);
  EXPECT_THROW(ring.rollback(saved), Error);
}

TEST(Ring, AnchorsMoveForwardToKeepDistancesBounded) {
  KvRing ring(8);
  ring.set_anchor_count(100);
  int64_t moved = 0;
  for (int i = 0; i < 20000; ++i) {
    const Placement p = ring.append(7);
    for (const Rotation& r : p.rotations) {
      EXPECT_EQ(r.slots.size(), 100u);
      EXPECT_GT(r.delta, 0);
      moved += r.delta;
    }
    ASSERT_LT(ring.max_global_distance(), kMaxRelativeDistance);
    // Anchors stay older than every live ring token.
    if (ring.clock() > 100) {
      ASSERT_LT(ring.slot_position(99), ring.slot_position(ring.slot_of(ring.oldest_live_clock())));
    }
  }
  EXPECT_EQ(ring.slot_position(0), moved);
  EXPECT_GT(moved, 100000);
}

// Found by tests/reliability/soak.py: recall written while the live ring still starts fewer
// than anchors + recall positions after 0 (short spans, the first wrap just evicted) sits at
// position 0; the first rebase must not move it below 0 (a backend refuses to rotate a key at a
// negative position: "cannot rotate empty slot 3968").
TEST(Ring, RecallNeverMovesBelowPositionZero) {
  constexpr uint32_t anchors = 45;
  KvRing ring(32);
  ring.set_anchor_count(anchors);
  ring.append(anchors);
  for (int64_t c = anchors; c < 6000; ++c) {
    if (c % 10 == 0) ring.mark_span(SpanType::ResponseSentence);
    if (c == 3970) ring.write_recall(kRecallSlots);  // the oldest live clock is 50 here
    ring.append(1);
    for (uint32_t s = 0; s < kTotalSlots; ++s) {
      if (ring.slot_clock(s) >= 0) {
        ASSERT_GE(ring.slot_position(s), 0) << "clock " << c << " slot " << s;
      }
    }
    ASSERT_LT(ring.max_global_distance(), kMaxRelativeDistance) << "clock " << c;
  }
}

}  // namespace
}  // namespace channel::kv
