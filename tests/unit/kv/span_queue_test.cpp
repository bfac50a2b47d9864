// The ring's span queue (kv/span_queue.h): first in, first out, and once its capacity is
// reserved, pushing after pops reuses the popped room instead of growing.
#include "kv/span_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace channel::kv {
namespace {

Span span_at(int64_t clock) { return Span{SpanType::ResponseSentence, clock, clock + 1, 0}; }

TEST(SpanQueue, KeepsSpansInOrderAcrossPopsAndCompaction) {
  SpanQueue queue(4);
  std::vector<int64_t> expected;  // clocks of the spans the queue should hold, oldest first
  int64_t next = 0;
  for (int round = 0; round < 20; ++round) {
    while (queue.size() < 4) {
      queue.push_back(span_at(next));
      expected.push_back(next++);
    }
    for (int pop = 0; pop <= round % 4; ++pop) {
      queue.pop_front();
      expected.erase(expected.begin());
    }
    ASSERT_EQ(queue.size(), expected.size());
    std::vector<int64_t> held;
    for (const Span& span : queue) held.push_back(span.start_clock);
    EXPECT_EQ(held, expected) << "round " << round;
    if (!expected.empty()) {
      EXPECT_EQ(queue.front().start_clock, expected.front());
      EXPECT_EQ(queue.back().start_clock, expected.back());
      EXPECT_EQ(queue[expected.size() - 1].start_clock, expected.back());
    }
  }
}

TEST(SpanQueue, ReusesPoppedRoomWithinItsCapacity) {
  SpanQueue queue(3);
  for (int64_t c = 0; c < 3; ++c) queue.push_back(span_at(c));
  const Span* storage = &queue.front();
  queue.pop_front();
  queue.push_back(span_at(3));  // full with one popped: compacts into the same storage
  EXPECT_EQ(&queue.front(), storage);
  EXPECT_EQ(queue.front().start_clock, 1);
  EXPECT_EQ(queue.back().start_clock, 3);
  queue.back().end_clock = 9;  // the open span grows in place
  EXPECT_EQ(queue[2].end_clock, 9);
  const std::vector<Span> saved(queue.begin(), queue.end());
  queue.assign(saved.begin() + 1, saved.end());
  ASSERT_EQ(queue.size(), 2u);
  EXPECT_EQ(queue.front().start_clock, 2);
  queue.pop_front();
  queue.pop_front();
  EXPECT_TRUE(queue.empty());
}

// A copy (the ring state a step saves for its undo, a snapshot's ring) holds the live spans only,
// and takes spans up to the original's capacity without moving its storage.
TEST(SpanQueue, CopiesKeepTheLiveSpansAndTheCapacity) {
  SpanQueue queue(5);
  for (int64_t c = 0; c < 4; ++c) queue.push_back(span_at(c));
  queue.pop_front();
  const auto expect_live_spans_and_room = [](SpanQueue& copy) {
    ASSERT_EQ(copy.size(), 3u);
    EXPECT_EQ(copy.front().start_clock, 1);
    const Span* storage = &copy.front();
    copy.push_back(span_at(4));
    copy.push_back(span_at(5));  // 5 live spans: the capacity, in the same storage
    EXPECT_EQ(&copy.front(), storage);
    EXPECT_EQ(copy.back().start_clock, 5);
  };
  SpanQueue constructed(queue);
  expect_live_spans_and_room(constructed);
  SpanQueue assigned(1);
  assigned = queue;
  expect_live_spans_and_room(assigned);
}

}  // namespace
}  // namespace channel::kv
