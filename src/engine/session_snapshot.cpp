// Session::save_snapshot and Session::load_snapshot: the session's state to a snapshot file and
// back (the format is engine/snapshot.h). Both run between requests on the session's thread,
// so the state they copy is consistent: nothing decodes while they run.
//
// Saving is synchronous: the state is copied (the KV of the live slots only), written and
// fsynced before the reply. A background writer would let decoding resume sooner, but it would
// have to hold the copy, order its reply among later frames and refuse overlapping saves; the
// write is bounded by the live KV (a few MB for small models; a full ring of Gemma 3 27B,
// 62 layers x 8 KiB per slot, is 2 GB), and clients save between turns.
#include "engine/session.h"

#include "core/error.h"
#include "engine/snapshot.h"
#include "model/fingerprint.h"

namespace channel {

Snapshot Session::capture_snapshot(std::string stream_id) const {
  Snapshot s;
  s.model_fingerprint = model_fingerprint(*model_);
  s.geometry = snapshot_geometry(model_->config());
  s.stream_id = std::move(stream_id);
  s.turn = TurnState{turn_open_, in_thought_, suppress_thinking_, mask_channel_close_once_, pending_yield_};
  s.config = config_;
  s.generator = sampler_.generator();
  s.logits = logits_;
  context_.capture(s.ring, s.kv);
  return s;
}

SnapshotReport Session::save_snapshot(const std::string& path, std::string_view stream_id) {
  std::string id(stream_id.substr(0, kMaxSnapshotStreamId));
  // Zero-delta gate, as the original: nothing new since the last save or load.
  if (last_snapshot_clock_ == clock()) return {SnapshotOutcome::Exists, active_slots(), clock(), std::move(id)};
  try {
    write_snapshot_file(capture_snapshot(id), path);
  } catch (const Error& e) {
    fail("cannot save snapshot '{}': {}", path, e.what());
  }
  last_snapshot_clock_ = clock();
  return {SnapshotOutcome::Saved, active_slots(), clock(), std::move(id)};
}

void Session::apply_snapshot(const Snapshot& s) {
  // Checks that need this session, before anything changes.
  require_compatible(s, model_fingerprint(*model_), snapshot_geometry(model_->config()));
  const int n_vocab = model_->config().n_vocab;
  const bool has_tokens = s.ring.clock > 0;
  if (s.logits.n_rows != (has_tokens ? 1 : 0) || (has_tokens && s.logits.n_cols != n_vocab)) {
    fail("the snapshot holds {} x {} logits at clock {}; this model needs {}", s.logits.n_rows, s.logits.n_cols,
         s.ring.clock, has_tokens ? fmt::format("1 x {}", n_vocab) : std::string("none before the first token"));
  }
  if (s.turn.pending_yield && *s.turn.pending_yield >= n_vocab) {
    fail("the held token {} is outside the vocabulary (0..{})", *s.turn.pending_yield, n_vocab - 1);
  }
  context_.restore(s.ring, s.kv);  // checks the ring and the KV before it changes anything

  turn_open_ = s.turn.turn_open;
  in_thought_ = s.turn.in_thought;
  suppress_thinking_ = s.turn.suppress_thinking;
  mask_channel_close_once_ = s.turn.mask_channel_close_once;
  pending_yield_ = s.turn.pending_yield;
  config_ = s.config;
  sampler_.set_options(config_.sampler);
  sampler_.set_generator(s.generator);
  logits_ = s.logits;
  stage_ = EpisodeStage{};  // staged tokens of the stream the snapshot replaced
  last_snapshot_clock_ = clock();
}

SnapshotReport Session::load_snapshot(const std::string& path) {
  try {
    const Snapshot snapshot = read_snapshot_file(path);
    apply_snapshot(snapshot);
    return {SnapshotOutcome::Loaded, active_slots(), clock(), snapshot.stream_id};
  } catch (const Error& e) {
    fail("cannot load snapshot '{}': {}", path, e.what());
  }
}

}  // namespace channel
