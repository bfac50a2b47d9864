// The fixed KV geometry every layer shares (DESIGN.md §4, seed 000):
//
//   slots 0 .. N_sys-1        Tier 1 anchors: the system prompt and tool contracts, never evicted
//   slots N_sys .. 3967       Tier 2 ring of W = 3968 - N_sys slots: the dialogue, FIFO
//   slots 3968 .. 4095        Tier 3: 128 recall slots, written only by memory recall
//   slots 4096 .. 4096+127    scratch for transient tokens (probes), so a short probe's rollback
//                             never has to restore a ring slot; longer probes go on in ring slots
//                             whose KV the engine keeps and writes back
#pragma once

#include <cstdint>

namespace channel::kv {

inline constexpr uint32_t kTotalSlots = 4096;
inline constexpr uint32_t kRecallSlots = 128;
inline constexpr uint32_t kRecallBase = kTotalSlots - kRecallSlots;  // 3968
inline constexpr uint32_t kMinRingSlots = 64;
inline constexpr uint32_t kMaxAnchors = kRecallBase - kMinRingSlots;  // 3904, as the original engine
inline constexpr uint32_t kScratchSlots = 128;
inline constexpr uint32_t kScratchBase = kTotalSlots;
inline constexpr uint32_t kPhysicalSlots = kTotalSlots + kScratchSlots;  // what a backend allocates
// Global-layer queries never see a key more than this many positions back.
inline constexpr int64_t kMaxRelativeDistance = kTotalSlots;

// Physical slot of a ring clock: clocks below the anchor count are anchors; later clocks cycle
// through the W ring slots.
constexpr uint32_t ring_size(uint32_t anchors) { return kRecallBase - anchors; }
// Most transient tokens a ring can take: the scratch, then a whole ring (the longest, without
// anchors).
inline constexpr uint32_t kMaxTransientTokens = kScratchSlots + ring_size(0);
constexpr uint32_t slot_of_clock(int64_t clock, uint32_t anchors) {
  if (clock < anchors) return static_cast<uint32_t>(clock);
  return anchors + static_cast<uint32_t>((clock - anchors) % ring_size(anchors));
}

}  // namespace channel::kv
