// One continuous token stream on one backend: the KV ring decides where each token goes and
// what each layer reads; this class feeds the backend accordingly, in chunks the ring accepts.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "backend/backend.h"
#include "kv/ring.h"
#include "model/model_config.h"

namespace channel {

class StreamContext {
 public:
  // Largest batch sent to the backend at once; longer inputs are prefilled in chunks.
  static constexpr uint32_t kMaxChunk = 512;

  StreamContext(Backend& backend, const ModelConfig& config);

  // Runs `tokens` after everything so far. Logits: LogitsWanted::Last gives the last token's
  // row, All every token's row (in order), Candidates the last token's logits of `candidates`
  // only. Token ids are checked before anything changes: an invalid id throws channel::Error
  // and leaves the stream as it was.
  //
  // `cancelled` (an abort) is asked before every layer of every chunk. Once it answers true,
  // append returns false: the chunks already done stay in the stream, the interrupted chunk
  // leaves no trace (the ring's state, moved keys and the KV of the slots it overwrote are put
  // back). A backend that throws is undone the same way, then the exception goes on (a chunk
  // that is not cancellable gets its ring state and keys back, not the KV it overwrote).
  //
  // `last_hidden`, if set, receives the last token's final hidden state (Batch::last_hidden).
  bool append(std::span<const int32_t> tokens, LogitsWanted wanted, Logits& out,
              std::span<const int32_t> candidates = {}, const std::function<bool()>& cancelled = {},
              std::vector<float>* last_hidden = nullptr);

  // Probes: tokens appended between begin_transient() and rollback() leave no trace, up to
  // ring().transient_capacity() of them. Those past the scratch slots overwrite the oldest live
  // ring slots: their KV is kept when a chunk displaces them and written back by rollback(),
  // which touches only the slots the transient tokens changed.
  // TransientTokens (below) pairs the two so that a failure in between cannot skip the rollback.
  int64_t begin_transient();
  void rollback(int64_t clock);

  // Snapshots: the ring's state and the KV of its live slots (anchors, recall, live ring).
  // restore() checks the ring state, that the KV is exactly its live slots at their positions,
  // and that the backend accepts the KV, before it changes anything; it throws channel::Error
  // otherwise.
  void capture(kv::RingState& ring, KvBlob& kv) const;
  void restore(const kv::RingState& ring, const KvBlob& kv);

  // Memory recall (Tier 3): `recalled`, the KV of whole episodes as read where they were
  // decoded, goes into the recall slots in its order, at the positions just before the live ring
  // that the ring gives them (kv_moved_to). It replaces the recall before; global layers read
  // the recall slots, sliding layers do not (the ring's views). Throws channel::Error, with the
  // stream unchanged, when the KV does not fit the model or holds more than kRecallSlots tokens.
  void write_recall(const KvBlob& recalled);

  kv::KvRing& ring() { return ring_; }
  const kv::KvRing& ring() const { return ring_; }
  int64_t clock() const { return ring_.clock(); }
  const Backend& backend() const { return backend_; }
  Backend& backend() { return backend_; }

 private:
  void apply(const std::vector<kv::Rotation>& rotations);
  // Puts the stream back as it was before a chunk that was cancelled halfway.
  void undo_chunk(const kv::RingState& ring_before, const std::vector<kv::Rotation>& rotations,
                  const KvBlob& overwritten);

  Backend& backend_;
  int n_vocab_;
  kv::KvRing ring_;
  std::vector<KvBlob> displaced_kv_;  // of the live slots the pending transient tokens overwrote
  // The logits of one chunk of a call of several chunks, kept so that its storage is reused (a
  // call of one chunk, every decode step, has the backend write straight into the caller's).
  Logits chunk_logits_;
  // A chunk's placement and the ring's state before it, kept likewise: a decode step allocates
  // nothing here.
  kv::Placement placement_;
  kv::RingState ring_before_;
};

// The same keys and values placed in `slots` at `positions`: each key moves by the difference of
// its positions, counted in KvBlob::moved_by, so the backend derives it from the key as first
// written (one exact Givens rotation, never a rotation of a rotated key). RoPE attention depends
// on relative positions only, so tokens moved with their context's spacing act as if run there.
KvBlob kv_moved_to(const KvBlob& kv, std::span<const uint32_t> slots, std::span<const int32_t> positions);

// Appends `more`'s slots, in order, to `kv` (an empty `kv` takes its layer count).
void append_kv(KvBlob& kv, const KvBlob& more);

// Transient tokens as a scope: begun when it is made, rolled back exactly when it ends, whether
// normally (end(), which reports a failing rollback) or by an exception (the destructor, which
// keeps the exception already on its way: a second one could only replace it or terminate).
class TransientTokens {
 public:
  explicit TransientTokens(StreamContext& context) : context_(context), clock_(context.begin_transient()) {}
  TransientTokens(const TransientTokens&) = delete;
  TransientTokens& operator=(const TransientTokens&) = delete;
  ~TransientTokens() {
    if (ended_) return;
    try {
      context_.rollback(clock_);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the exception that ended the scope goes on
    }
  }

  void end() {
    ended_ = true;
    context_.rollback(clock_);
  }

 private:
  StreamContext& context_;
  int64_t clock_;
  bool ended_ = false;
};

}  // namespace channel
