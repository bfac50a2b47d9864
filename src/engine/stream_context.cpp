#include "engine/stream_context.h"

#include <algorithm>
#include <cassert>

#include "core/error.h"

namespace channel {

StreamContext::StreamContext(Backend& backend, const ModelConfig& config)
    : backend_(backend), n_vocab_(config.n_vocab), ring_(config.sliding_window) {
  // Every step saves the ring's spans here; with room for all it can hold, marking a new span
  // (a sentence, a thought) never makes the save allocate.
  ring_before_.spans.reserve(kv::kMaxLiveSpans);
}

void StreamContext::apply(const std::vector<kv::Rotation>& rotations) {
  for (const kv::Rotation& rotation : rotations) backend_.rotate_keys(rotation.slots, rotation.delta);
}

int64_t StreamContext::begin_transient() {
  const int64_t clock = ring_.begin_transient();
  displaced_kv_.clear();
  return clock;
}

void StreamContext::rollback(int64_t clock) {
  apply(ring_.rollback(clock));
  for (const KvBlob& kv : displaced_kv_) backend_.write_kv(kv);
  displaced_kv_.clear();
}

void StreamContext::capture(kv::RingState& ring, KvBlob& kv) const {
  ring = ring_.state();
  // Outside transient tokens the global view is exactly the live slots.
  backend_.read_kv(ring_.global_view().to_vector(), kv);
}

void StreamContext::restore(const kv::RingState& ring, const KvBlob& kv) {
  if (kv.positions.size() != kv.slots.size()) {
    fail("the KV has {} slots but {} positions", kv.slots.size(), kv.positions.size());
  }
  // A fresh ring takes the state first: if it refuses, nothing here has changed.
  kv::KvRing staged(ring_.sliding_window());
  staged.restore(ring);
  if (staged.global_view().to_vector() != kv.slots) fail("the KV does not hold exactly the live slots of the ring");
  for (size_t i = 0; i < kv.slots.size(); ++i) {
    if (kv.positions[i] != staged.slot_position(kv.slots[i])) {
      fail("the KV of slot {} is at position {}, the ring has it at {}", kv.slots[i], kv.positions[i],
           staged.slot_position(kv.slots[i]));
    }
  }
  backend_.write_kv(kv);  // checks the KV against the model before it writes
  ring_.restore(ring);    // accepted above
}

KvBlob kv_moved_to(const KvBlob& kv, std::span<const uint32_t> slots, std::span<const int32_t> positions) {
  if (slots.size() != kv.slots.size() || positions.size() != kv.slots.size() || kv.positions.size() != kv.slots.size() ||
      kv.moved_by.size() != kv.slots.size()) {
    fail("cannot place the KV of {} slots in {} slots at {} positions", kv.slots.size(), slots.size(),
         positions.size());
  }
  KvBlob moved = kv;
  moved.slots.assign(slots.begin(), slots.end());
  for (size_t i = 0; i < slots.size(); ++i) {
    moved.moved_by[i] += int64_t{positions[i]} - kv.positions[i];
    moved.positions[i] = positions[i];
  }
  return moved;
}

void append_kv(KvBlob& kv, const KvBlob& more) {
  if (kv.slots.empty() && kv.layers.empty()) kv.layers.resize(more.layers.size());
  if (kv.layers.size() != more.layers.size()) fail("cannot join KV of {} and {} layers", kv.layers.size(), more.layers.size());
  kv.slots.insert(kv.slots.end(), more.slots.begin(), more.slots.end());
  kv.positions.insert(kv.positions.end(), more.positions.begin(), more.positions.end());
  kv.moved_by.insert(kv.moved_by.end(), more.moved_by.begin(), more.moved_by.end());
  for (size_t l = 0; l < kv.layers.size(); ++l) {
    auto& to = kv.layers[l];
    const auto& from = more.layers[l];
    to.k_as_written.insert(to.k_as_written.end(), from.k_as_written.begin(), from.k_as_written.end());
    to.v.insert(to.v.end(), from.v.begin(), from.v.end());
  }
}

void StreamContext::write_recall(const KvBlob& recalled) {
  if (recalled.slots.size() > kv::kRecallSlots) {
    fail("{} recalled tokens exceed the {} recall slots", recalled.slots.size(), kv::kRecallSlots);
  }
  const kv::RingState before = ring_.state();
  kv::Placement placement = ring_.write_recall(static_cast<uint32_t>(recalled.slots.size()));
  try {
    // The positions are the ring's before any rebase it asked for; the rotations then move the
    // recall keys on with the anchors, as for every other key.
    backend_.write_kv(kv_moved_to(recalled, placement.slots, placement.positions));
  } catch (...) {
    ring_.restore(before);  // the backend checked the KV before it wrote anything
    throw;
  }
  apply(placement.rotations);
}

void StreamContext::undo_chunk(const kv::RingState& ring_before, const std::vector<kv::Rotation>& rotations,
                               const KvBlob& overwritten) {
  ring_.restore(ring_before);
  // rotate_keys works from the keys as written, so moving back by -delta is exact.
  for (auto it = rotations.rbegin(); it != rotations.rend(); ++it) backend_.rotate_keys(it->slots, -it->delta);
  if (!overwritten.slots.empty()) backend_.write_kv(overwritten);
}

namespace {
// A call that throws or is cancelled leaves no rows of logits behind (a one-chunk call lets the
// backend write into `out` directly, a longer one may have added earlier chunks' rows).
void discard_logits(Logits& out) {
  out.values.clear();
  out.n_rows = 0;
}
}  // namespace

bool StreamContext::append(std::span<const int32_t> tokens, LogitsWanted wanted, Logits& out,
                           std::span<const int32_t> candidates, const std::function<bool()>& cancelled,
                           std::vector<float>* last_hidden) {
  if (tokens.empty()) fail("nothing to evaluate: the token list is empty");
  for (int32_t token : tokens) {
    if (token < 0 || token >= n_vocab_) fail("token id {} is outside the vocabulary (0..{})", token, n_vocab_ - 1);
  }
  if (ring_.transient() && tokens.size() > ring_.max_batch()) {
    fail("{} transient tokens exceed the {} transient slots left", tokens.size(), ring_.max_batch());
  }
  discard_logits(out);
  size_t done = 0;
  while (done < tokens.size()) {
    if (cancelled && cancelled()) return false;
    const size_t n = std::min<size_t>({tokens.size() - done, kMaxChunk, ring_.max_batch()});
    const bool last_chunk = done + n == tokens.size();
    // Every chunk outside transient tokens (which roll back their own way) keeps the ring's
    // state, so a backend that throws leaves the stream as it was; a cancellable chunk also
    // keeps the KV of the live slots it overwrites (only once the ring has wrapped). A chunk
    // that is not cancellable (decoding, one token) keeps no KV: copying it per token would cost
    // a readback on a GPU, so a backend that throws after writing part of a wrapped ring's slot
    // leaves that slot damaged.
    const bool undoable = !ring_.transient();
    if (undoable) ring_.save_state(ring_before_);
    std::vector<uint32_t> live_before;
    if (cancelled) {
      live_before = ring_.global_view().to_vector();
      std::sort(live_before.begin(), live_before.end());
    }
    ring_.append(static_cast<uint32_t>(n), placement_);
    const kv::Placement& placement = placement_;
    apply(placement.rotations);
    if (!placement.displaced.empty()) {
      KvBlob displaced;
      backend_.read_kv(placement.displaced, displaced);
      displaced_kv_.push_back(std::move(displaced));
    }
    assert(ring_.max_global_distance() < kv::kMaxRelativeDistance);
    const LogitsWanted chunk_wanted = wanted == LogitsWanted::All ? LogitsWanted::All
                                      : last_chunk                ? wanted
                                                                  : LogitsWanted::None;
    KvBlob overwritten;
    if (cancelled) {
      std::vector<uint32_t> slots;
      for (uint32_t slot : placement.slots) {
        if (std::binary_search(live_before.begin(), live_before.end(), slot)) slots.push_back(slot);
      }
      if (!slots.empty()) backend_.read_kv(slots, overwritten);
    }
    const Batch batch{tokens.subspan(done, n), placement.positions, placement.slots, cancelled,
                      last_chunk ? last_hidden : nullptr};
    const bool only_chunk = done == 0 && last_chunk;
    Logits& chunk_logits = only_chunk ? out : chunk_logits_;
    bool finished = false;
    try {
      finished = backend_.forward(batch, AttentionView{ring_.global_view(), ring_.sliding_view()}, chunk_wanted,
                                  chunk_wanted == LogitsWanted::Candidates ? candidates : std::span<const int32_t>(),
                                  chunk_logits);
    } catch (...) {
      if (undoable) undo_chunk(ring_before_, placement.rotations, overwritten);
      discard_logits(out);
      throw;
    }
    if (!finished) {
      undo_chunk(ring_before_, placement.rotations, overwritten);
      discard_logits(out);
      return false;
    }
    if (chunk_wanted != LogitsWanted::None && !only_chunk) {
      out.n_cols = chunk_logits.n_cols;
      out.n_rows += chunk_logits.n_rows;
      out.values.insert(out.values.end(), chunk_logits.values.begin(), chunk_logits.values.end());
    }
    done += n;
  }
  return true;
}

}  // namespace channel
