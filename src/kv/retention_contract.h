// The KV-cache retention contract (seed 002): which slot a token writes in a ring of cache_size
// slots, and whether it is still live at the current read point. This is the one implementation
// of the contract; the certificate and `channel kv certify` are built on it.
//
// Clocks are token positions (0, 1, 2, ...). A contract has `anchors` leading clocks that sit
// outside the ring (Channel's Tier 1: written once, never overwritten) followed by a ring of
// cache_size slots. The seed's plain contract is the case anchors = 0. Channel's geometry
// (DESIGN.md §4) is anchors = N_sys and a ring of W = 3968 - N_sys slots starting at slot N_sys:
// on ring indices (clock - N_sys) it is exactly the plain contract with cache_size = W, with
// every ring index and slot offset by N_sys.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>

#include "kv/geometry.h"

namespace channel::kv {

// The largest clock the contract accepts: one below the 64-bit maximum so that the end of any
// window (current + 1) is representable.
inline constexpr int64_t kMaxClock = std::numeric_limits<int64_t>::max() - 1;

// Clocks start .. start + length - 1.
struct ClockRange {
  int64_t start = 0;
  int64_t length = 0;
};

// The retained ring clocks at a read point: the seed's live_start .. live_start + live_length - 1.
struct LiveWindow {
  ClockRange clocks;
  bool full = false;  // one full ring of tokens has been seen: every ring slot holds a live token
};

// The seed's sink-window policy: the first sink_size ring clocks pinned (those already seen),
// followed by the live window without them (the rolling suffix).
struct SinkWindow {
  ClockRange sink;
  ClockRange rolling;
};

// A read request checked against the contract. It passes exactly when every requested clock is
// non-future, the clocks are duplicate-free and each one is retained (trace-fresh).
struct RequestCheck {
  bool all_non_future = true;
  bool tokens_distinct = true;
  bool all_retained = true;
  bool slots_distinct = true;
  int64_t stale_count = 0;                   // non-future clocks whose next overwrite <= current
  std::optional<int64_t> first_stale_token;  // the first such clock, in request order

  bool pass() const { return all_non_future && tokens_distinct && all_retained; }
};

class RetentionContract {
 public:
  // The seed's plain ring of cache_size slots; throws channel::Error unless cache_size >= 1.
  explicit RetentionContract(int64_t cache_size);

  // Channel's 4096-slot layout (kv/geometry.h): `anchors` (N_sys) Tier 1 slots, then the Tier 2
  // ring of kRecallBase - anchors slots. Throws channel::Error unless 0 <= anchors <= kMaxAnchors,
  // the limit the ring enforces.
  static RetentionContract channel_geometry(int64_t anchors);

  int64_t anchors() const { return anchors_; }
  int64_t cache_size() const { return cache_size_; }  // ring slots (W in Channel's geometry)
  bool is_anchor(int64_t clock) const { return clock < anchors_; }

  // Every function below throws channel::Error for a clock or current outside 0 .. kMaxClock.

  // Physical slot written by `clock`: the clock itself for an anchor, otherwise
  // anchors + (clock - anchors) mod cache_size.
  int64_t slot(int64_t clock) const;

  // Whether `clock` still holds its slot at read point `current`: it is not in the future and,
  // for a ring clock, its next same-slot overwrite has not happened
  // (clock <= current < clock + cache_size). Anchors are retained once written.
  bool retained(int64_t current, int64_t clock) const;

  // The clock that next writes the slot of `clock` (clock + cache_size); nullopt for an anchor,
  // which is never overwritten. Throws channel::Error if that clock would be past kMaxClock.
  std::optional<int64_t> next_overwrite(int64_t clock) const;

  // A non-future clock whose slot has already been rewritten (next overwrite <= current).
  bool stale(int64_t current, int64_t clock) const;

  // The ring clocks retained at `current` (anchors are not part of it); empty while
  // current < anchors.
  LiveWindow live_window(int64_t current) const;

  // The sink-window policy over the ring's first sink_size clocks; throws channel::Error for a
  // negative sink_size.
  SinkWindow sink_window(int64_t current, int64_t sink_size) const;

  RequestCheck check_request(int64_t current, std::span<const int64_t> clocks) const;

 private:
  RetentionContract(int64_t anchors, int64_t cache_size);

  int64_t anchors_;
  int64_t cache_size_;
};

}  // namespace channel::kv
