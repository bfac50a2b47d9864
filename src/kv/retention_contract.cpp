#include "kv/retention_contract.h"

#include <algorithm>
#include <vector>

#include "core/error.h"

namespace channel::kv {
namespace {

void require_clock(int64_t value, const char* what) {
  if (value < 0 || value > kMaxClock) fail("{} must be a clock 0 .. {}, not {}", what, kMaxClock, value);
}

bool all_distinct(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return std::adjacent_find(values.begin(), values.end()) == values.end();
}

}  // namespace

RetentionContract::RetentionContract(int64_t cache_size) : RetentionContract(0, cache_size) {}

RetentionContract::RetentionContract(int64_t anchors, int64_t cache_size) : anchors_(anchors), cache_size_(cache_size) {
  if (cache_size < 1) fail("the cache size must be at least 1 slot, not {}", cache_size);
}

RetentionContract RetentionContract::channel_geometry(int64_t anchors) {
  if (anchors < 0 || anchors > kMaxAnchors) {
    fail("the anchor count must be 0 .. {} (the ring keeps at least {} of the slots below {}), not {}", kMaxAnchors,
         kMinRingSlots, kRecallBase, anchors);
  }
  return RetentionContract(anchors, ring_size(static_cast<uint32_t>(anchors)));
}

int64_t RetentionContract::slot(int64_t clock) const {
  require_clock(clock, "a token");
  if (is_anchor(clock)) return clock;
  return anchors_ + (clock - anchors_) % cache_size_;
}

bool RetentionContract::retained(int64_t current, int64_t clock) const {
  require_clock(current, "the current token");
  require_clock(clock, "a token");
  if (clock > current) return false;
  // The seed's current < clock + cache_size, written without the sum (it may pass 64 bits).
  return is_anchor(clock) || current - clock < cache_size_;
}

std::optional<int64_t> RetentionContract::next_overwrite(int64_t clock) const {
  require_clock(clock, "a token");
  if (is_anchor(clock)) return std::nullopt;
  if (clock > kMaxClock - cache_size_) {
    fail("token {} + cache size {} is past the largest clock {}: its next overwrite cannot be named", clock,
         cache_size_, kMaxClock);
  }
  return clock + cache_size_;
}

bool RetentionContract::stale(int64_t current, int64_t clock) const {
  return !retained(current, clock) && clock <= current;
}

LiveWindow RetentionContract::live_window(int64_t current) const {
  require_clock(current, "the current token");
  if (current < anchors_) return {{anchors_, 0}, false};
  // The seed's live_start = max(0, r + 1 - W) and live_length = min(W, r + 1) on the ring index
  // r = current - anchors, shifted back to clocks.
  const int64_t ring_seen = current - anchors_ + 1;
  const int64_t length = std::min(cache_size_, ring_seen);
  return {{current + 1 - length, length}, length == cache_size_};
}

SinkWindow RetentionContract::sink_window(int64_t current, int64_t sink_size) const {
  if (sink_size < 0) fail("the sink size must be at least 0, not {}", sink_size);
  const LiveWindow live = live_window(current);
  // sink_prefix_length = min(sink_size, ring clocks seen so far); the rolling suffix is the live
  // window filtered to clocks past that prefix.
  const int64_t ring_seen = std::max<int64_t>(0, current - anchors_ + 1);
  const ClockRange sink{anchors_, std::min(sink_size, ring_seen)};
  const int64_t rolling_start = std::max(live.clocks.start, sink.start + sink.length);
  return {sink, {rolling_start, std::max<int64_t>(0, current + 1 - rolling_start)}};
}

RequestCheck RetentionContract::check_request(int64_t current, std::span<const int64_t> clocks) const {
  RequestCheck check;
  std::vector<int64_t> slots;
  slots.reserve(clocks.size());
  for (const int64_t clock : clocks) {
    slots.push_back(slot(clock));
    if (clock > current) check.all_non_future = false;
    if (!retained(current, clock)) check.all_retained = false;
    if (stale(current, clock)) {
      ++check.stale_count;
      if (!check.first_stale_token) check.first_stale_token = clock;
    }
  }
  check.tokens_distinct = all_distinct({clocks.begin(), clocks.end()});
  check.slots_distinct = all_distinct(std::move(slots));
  return check;
}

}  // namespace channel::kv
