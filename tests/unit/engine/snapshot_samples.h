// Valid snapshots without a model, for the format's unit tests and the fuzzer's seed corpus.
#pragma once

#include <vector>

#include "engine/snapshot.h"
#include "kv/geometry.h"
#include "kv/ring.h"

namespace channel::test {

// KV of the ring's live slots (its global view) with made-up values, `widths` per layer.
inline KvBlob made_up_kv(const kv::KvRing& ring, const std::vector<uint32_t>& widths) {
  KvBlob kv;
  kv.slots = ring.global_view().to_vector();
  for (uint32_t slot : kv.slots) {
    kv.positions.push_back(static_cast<int32_t>(ring.slot_position(slot)));
    kv.moved_by.push_back(ring.slot_position(slot) - ring.slot_clock(slot));
  }
  for (uint32_t width : widths) {
    KvBlob::Layer layer;
    for (size_t i = 0; i < kv.slots.size() * width; ++i) {
      layer.k_as_written.push_back(static_cast<uint16_t>(i * 3 + width));
      layer.v.push_back(static_cast<uint16_t>(i * 5 + 1));
    }
    kv.layers.push_back(std::move(layer));
  }
  return kv;
}

// A snapshot of `ring` with every other field away from its default.
inline Snapshot sample_snapshot(const kv::KvRing& ring) {
  Snapshot s;
  s.model_fingerprint = 0x0123456789abcdefull;
  s.geometry = {kv::kTotalSlots, kv::kScratchSlots, {4, 8}};
  s.stream_id = "01J0000000000000000000000";
  s.turn = {.turn_open = true, .in_thought = true, .suppress_thinking = false, .mask_channel_close_once = true,
            .pending_yield = 77};
  s.config.thinking_budget = 99;
  s.config.max_tokens = 5;
  s.config.sampler = {.temperature = 0.25f, .top_k = 3, .top_p = 0.5f, .min_p = 0.125f, .repeat_penalty = 1.5f,
                      .repeat_last_n = 9, .frequency_penalty = -0.5f, .presence_penalty = 2.0f, .seed = 1ull << 60};
  s.config.quiescence_threshold = 0.75f;
  s.config.thinking_gate = true;
  s.generator.seed(11);
  s.generator.discard(1000);
  s.logits = {.n_rows = 1, .n_cols = 3, .values = {1.0f, -2.5f, 1e-30f}};
  s.ring = ring.state();
  s.kv = made_up_kv(ring, s.geometry.kv_widths);
  return s;
}

// Rings in the states a snapshot meets: empty, a few spans with recall, wrapped with the
// anchors moved.
inline std::vector<Snapshot> snapshot_samples() {
  std::vector<Snapshot> samples;
  kv::KvRing empty(16);
  Snapshot at_start;
  at_start.geometry = {kv::kTotalSlots, kv::kScratchSlots, {4, 8}};
  at_start.ring = empty.state();
  at_start.kv = made_up_kv(empty, at_start.geometry.kv_widths);
  samples.push_back(at_start);

  kv::KvRing short_ring(16);
  short_ring.set_anchor_count(2);
  short_ring.append(4);
  short_ring.mark_span(kv::SpanType::Thought);
  short_ring.append(1);
  short_ring.write_recall(1);
  samples.push_back(sample_snapshot(short_ring));

  kv::KvRing wrapped(16);
  wrapped.set_anchor_count(3800);
  for (int i = 0; wrapped.clock() < 4300; ++i) {
    wrapped.mark_span(i % 3 ? kv::SpanType::ResponseSentence : kv::SpanType::User);
    wrapped.append(37);
  }
  Snapshot moved = sample_snapshot(wrapped);
  moved.geometry.kv_widths = {1};
  moved.kv = made_up_kv(wrapped, moved.geometry.kv_widths);
  samples.push_back(moved);
  return samples;
}

}  // namespace channel::test
