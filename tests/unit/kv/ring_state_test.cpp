// KvRing::state and KvRing::restore: a restored ring is the same ring (slot tables, views, spans,
// and what it does next) at every point of random streams; states the ring could never reach
// are refused and leave the ring as it was.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>

#include "core/error.h"
#include "kv/ring.h"

namespace channel::kv {
namespace {

void expect_same_ring(const KvRing& a, const KvRing& b, const std::string& where) {
  ASSERT_EQ(a.state(), b.state()) << where;
  ASSERT_EQ(a.global_view().to_vector(), b.global_view().to_vector()) << where;
  ASSERT_EQ(a.sliding_view().to_vector(), b.sliding_view().to_vector()) << where;
  ASSERT_EQ(a.max_global_distance(), b.max_global_distance()) << where;
  ASSERT_EQ(a.max_batch(), b.max_batch()) << where;
  for (uint32_t s = 0; s < kPhysicalSlots; ++s) {
    ASSERT_EQ(a.slot_clock(s), b.slot_clock(s)) << where << " slot " << s;
    ASSERT_EQ(a.slot_position(s), b.slot_position(s)) << where << " slot " << s;
  }
}

// One random step of a stream, the same on every ring given the same generator state.
void random_step(KvRing& ring, std::mt19937& rng) {
  const int op = std::uniform_int_distribution<int>(0, 9)(rng);
  if (op < 2) {
    ring.mark_span(static_cast<SpanType>(std::uniform_int_distribution<int>(0, 6)(rng)));
  } else if (op < 8) {
    ring.append(std::uniform_int_distribution<uint32_t>(1, std::min<uint32_t>(300, ring.ring_slots()))(rng));
  } else if (op == 8) {
    const int64_t saved = ring.begin_transient();
    ring.append(std::uniform_int_distribution<uint32_t>(1, kScratchSlots)(rng));
    ring.rollback(saved);
  } else {
    ring.write_recall(std::uniform_int_distribution<uint32_t>(0, 8)(rng));
  }
}

class RingStateRoundTrip : public ::testing::TestWithParam<uint32_t> {};

TEST_P(RingStateRoundTrip, RestoredRingIsTheSameRing) {
  const uint32_t anchors = GetParam();
  std::mt19937 rng(anchors + 17);
  KvRing ring(40);
  ring.set_anchor_count(anchors);
  for (int step = 0; step < 300; ++step) {
    random_step(ring, rng);
    const std::string where = "step " + std::to_string(step);
    KvRing restored(40);
    if (ring.state().recall_position < 0) {
      // A rebase early in a stream can move recall keys before position 0, where the backend
      // would not see them: such a state is refused rather than restored.
      EXPECT_THROW(restored.restore(ring.state()), Error) << where;
      continue;
    }
    restored.restore(ring.state());
    expect_same_ring(ring, restored, where);
    // And it goes on the same way.
    std::mt19937 a = rng, b = rng;
    random_step(ring, a);
    random_step(restored, b);
    expect_same_ring(ring, restored, where + " + 1");
    rng = a;
  }
}

INSTANTIATE_TEST_SUITE_P(Anchors, RingStateRoundTrip, ::testing::Values(0u, 5u, 300u, 3800u, kMaxAnchors));

TEST(RingState, NoStateWhileTransient) {
  KvRing ring(16);
  ring.append(5);
  ring.begin_transient();
  EXPECT_THROW(ring.state(), Error);
}

TEST(RingState, ImpossibleStatesAreRefusedAndChangeNothing) {
  // A ring that wrapped, with anchors moved and recall: the state every case below breaks.
  KvRing source(16);
  source.set_anchor_count(3800);
  while (source.clock() < 3800) source.append(100);
  for (int i = 0; i < 40; ++i) {
    source.mark_span(i % 2 ? SpanType::User : SpanType::ResponseSentence);
    source.append(11);
  }
  source.write_recall(4);
  const RingState good = source.state();
  ASSERT_GT(good.anchor_position, 0) << "the anchors have moved";
  ASSERT_GT(good.oldest_live, good.anchors) << "the ring has wrapped";
  ASSERT_GT(good.spans.size(), 2u);

  const std::vector<std::pair<std::string, std::function<void(RingState&)>>> breaks = {
      {"too many anchors", [](RingState& s) { s.anchors = kMaxAnchors + 1; }},
      {"other anchor count", [](RingState& s) { s.anchors -= 1; }},
      {"negative clock", [](RingState& s) { s.clock = -1; }},
      {"clock past the positions", [](RingState& s) { s.clock = int64_t{1} << 40; }},
      {"clock past the spans", [](RingState& s) { s.clock += 1; }},
      {"oldest live after a span start", [](RingState& s) { s.oldest_live += 1; }},
      {"live ring longer than the ring", [&](RingState& s) {
         s.oldest_live = s.spans.front().start_clock = s.clock - ring_size(s.anchors) - 1;
         s.spans.front().first_slot = slot_of_clock(s.spans.front().start_clock, s.anchors);
       }},
      {"no spans", [](RingState& s) { s.spans.clear(); }},
      {"gap between spans", [](RingState& s) { s.spans[1].start_clock += 1; }},
      {"span ends before it starts", [](RingState& s) { s.spans[1].end_clock = s.spans[1].start_clock - 1; }},
      {"empty span before the open one", [](RingState& s) {
         s.spans[1].end_clock = s.spans[1].start_clock;
         s.spans[2].start_clock = s.spans[1].start_clock;
         s.spans[2].first_slot = s.spans[1].first_slot;
       }},
      {"span in the wrong slot", [](RingState& s) { s.spans[1].first_slot += 1; }},
      {"unknown span type", [](RingState& s) { s.spans[0].type = static_cast<SpanType>(7); }},
      {"unknown pending type", [](RingState& s) { s.pending_type = static_cast<SpanType>(200); }},
      {"anchors overlapping the ring", [](RingState& s) { s.anchor_position = s.oldest_live - s.anchors + 1; }},
      {"negative anchor position", [](RingState& s) { s.anchor_position = -1; }},
      {"anchors out of reach", [](RingState& s) {
         s.anchor_position = 0;  // the last query would be more than 4096 positions away
       }},
      {"too much recall", [](RingState& s) { s.recall_count = kRecallSlots + 1; }},
      {"recall out of reach", [](RingState& s) { s.recall_position = 1; }},
      {"recall position without recall", [](RingState& s) {
         s.recall_count = 0;
         s.recall_clock = 0;
       }},
      {"first query in the future", [](RingState& s) { s.committed_first_query = s.clock; }},
  };
  for (const auto& [name, mutate] : breaks) {
    RingState bad = good;
    mutate(bad);
    KvRing ring(16);
    ring.set_anchor_count(7);
    ring.append(20);
    const RingState before = ring.state();
    EXPECT_THROW(ring.restore(bad), Error) << name;
    EXPECT_EQ(ring.state(), before) << name;
  }
  KvRing ring(16);
  ring.restore(good);
  expect_same_ring(source, ring, "the unbroken state");
}

}  // namespace
}  // namespace channel::kv
