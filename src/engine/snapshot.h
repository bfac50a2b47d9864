// The snapshot file (docs/snapshot-format.md): a session's whole state between requests, so that
// loading it continues exactly where saving left off. This file is the format only: the values a
// snapshot holds, their encoding, and the checks that need no model. Session::save_snapshot and
// Session::load_snapshot take and apply the state.
//
// Layout: a header (magic, format version, model fingerprint, KV geometry, clock, stream id)
// with its own checksum, then three sections in order (session, ring, KV), each with its
// length and a 64-bit checksum of its bytes (XXH3-64; FNV-1a in version 1 files, which are still
// read: core/checksum.h). All integers and floats are little-endian.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "engine/session_config.h"
#include "kv/ring_state.h"
#include "model/model_config.h"

namespace channel {

inline constexpr char kSnapshotMagic[8] = {'C', 'H', 'N', 'L', 'S', 'N', 'A', 'P'};
inline constexpr uint32_t kSnapshotVersion = 2;  // 1: FNV-1a checksums (read, not written)
inline constexpr size_t kMaxSnapshotStreamId = 64;  // bytes, as the protocol cuts it

// The KV layout a snapshot was taken in: it loads only into the same one.
struct SnapshotGeometry {
  uint32_t total_slots = 0;
  uint32_t scratch_slots = 0;
  std::vector<uint32_t> kv_widths;  // per layer that owns KV: n_head_kv * head_dim
  bool operator==(const SnapshotGeometry&) const = default;
};

SnapshotGeometry snapshot_geometry(const ModelConfig& config);

// Where the session is in the turn grammar (session.h has the meaning of each flag).
struct TurnState {
  bool turn_open = false;
  bool in_thought = false;
  bool suppress_thinking = true;
  bool mask_channel_close_once = false;
  std::optional<int32_t> pending_yield;
  bool operator==(const TurnState&) const = default;
};

struct Snapshot {
  uint64_t model_fingerprint = 0;
  SnapshotGeometry geometry;
  std::string stream_id;  // the client's id for this point of its log, at most 64 bytes
  TurnState turn;
  SessionConfig config;
  std::mt19937_64 generator;  // the sampler's
  Logits logits;              // after the last token fed: what the next token is sampled from
  kv::RingState ring;
  KvBlob kv;                  // the ring's live slots: anchors, recall and live ring
  bool operator==(const Snapshot&) const = default;
};

// The whole file in memory (tests, the fuzzer's corpus), in format `version`: kSnapshotVersion,
// or 1 (FNV-1a checksums, as older builds wrote: for the tests that read such files). Throws
// channel::Error for a stream id over 64 bytes or arrays that disagree with their counts (logits,
// KV slots, layers); values out of range are written as they are, for parse_snapshot to refuse.
std::vector<uint8_t> encode_snapshot(const Snapshot& snapshot, uint32_t version = kSnapshotVersion);

// Writes snapshot_temp_path(path), fsyncs it, renames it to `path` and fsyncs the directory, so
// `path` is the old file or the whole new one, even across a crash. Throws channel::Error (and
// removes the temp file) as encode_snapshot does, and on any I/O failure.
void write_snapshot_file(const Snapshot& snapshot, const std::string& path);
inline std::string snapshot_temp_path(const std::string& path) { return path + ".tmp"; }

// Decodes and checks everything that needs no model: magic, version, header and section
// checksums, every length against the bytes there are, the sections' order and their fields'
// ranges. Throws channel::Error with one line naming the first problem and its offset.
Snapshot parse_snapshot(std::span<const uint8_t> bytes);
Snapshot read_snapshot_file(const std::string& path);

// Throws channel::Error unless the snapshot was taken with this model (fingerprint) and this
// KV geometry.
void require_compatible(const Snapshot& snapshot, uint64_t model_fingerprint, const SnapshotGeometry& geometry);

}  // namespace channel
