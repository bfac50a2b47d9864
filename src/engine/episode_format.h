// The episode store's file (docs/memory-format.md): episodic memory kept across runs. This file
// is the format only: the header and record encodings and the scan that reads them back and
// says where and why it stopped. episode_file.h keeps the file on disk.
//
// Layout: a header (magic, format version, model fingerprint, centroid width, KV widths) with
// its own checksum, then episode records in commit order, each framed by a tag, its length and a
// 64-bit checksum of its bytes: XXH3-64, or FNV-1a in a version 1 file (core/checksum.h), which
// is still read and appended to until a compaction rewrites it. All integers and floats are
// little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/episode.h"
#include "model/model_config.h"

namespace channel {

inline constexpr char kEpisodeFileMagic[8] = {'C', 'H', 'N', 'L', 'E', 'P', 'I', 'S'};
inline constexpr uint32_t kEpisodeFileVersion = 2;  // 1: FNV-1a checksums
inline constexpr uint32_t kEpisodeRecordTag = 0x43525045;  // the bytes "EPRC" in the file
inline constexpr size_t kEpisodeRecordFrameBytes = 4 + 8 + 8;  // tag, length, checksum

// What a store's episodes need of the model that wrote them: only the same model can use their
// KV and centroids.
struct EpisodeFileHeader {
  uint64_t model_fingerprint = 0;
  uint32_t centroid_width = 0;      // n_embd: the hidden state a centroid averages
  std::vector<uint32_t> kv_widths;  // per layer that owns KV: n_head_kv * head_dim
  uint32_t version = kEpisodeFileVersion;  // the format its records are written in
  bool operator==(const EpisodeFileHeader&) const = default;
  // The same model and geometry, whatever the format version.
  bool fits(const EpisodeFileHeader& other) const {
    return model_fingerprint == other.model_fingerprint && centroid_width == other.centroid_width &&
           kv_widths == other.kv_widths;
  }
};

EpisodeFileHeader episode_file_header(uint64_t model_fingerprint, const ModelConfig& config);

std::vector<uint8_t> encode_episode_header(const EpisodeFileHeader& header);

// One record, frame included. Throws channel::Error for an episode the file cannot hold: no
// tokens or more than kv::kTotalSlots, clocks or KV that disagree with the tokens or the header.
std::vector<uint8_t> encode_episode_record(const Episode& episode, const EpisodeFileHeader& header);

// Reads the header; throws channel::Error with one line naming the first problem. Sets
// `header_length` to the bytes it takes.
EpisodeFileHeader parse_episode_header(std::span<const uint8_t> bytes, size_t& header_length);

// How far a file reads back.
struct EpisodeFileScan {
  EpisodeFileHeader header;
  size_t good_length = 0;  // header and the records that read back whole, from the start
  size_t records = 0;      // how many records those are
  // Why reading stopped before the end of the file; nothing when every byte read back.
  std::optional<std::string> problem;
  // The problem is the last record cut short by a crash (it ends at or past the end of the
  // file, or the file is zeros from it on): the good prefix is the whole store. Otherwise the
  // problem is corruption with bytes after it.
  bool torn_tail = false;
};

// Checks the header (throws channel::Error as parse_episode_header), then hands each record that
// reads back whole to `on_episode`, in file order, until the end or the first bad record. A
// record is bad when its frame or checksum is wrong, a field is out of range, its KV does not fit
// the header, or its id is not above the one before it.
EpisodeFileScan scan_episode_file(std::span<const uint8_t> bytes, const std::function<void(Episode&&)>& on_episode);

}  // namespace channel
