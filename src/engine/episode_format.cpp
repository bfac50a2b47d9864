#include "engine/episode_format.h"

#include <algorithm>
#include <cstring>

#include "core/byte_reader.h"
#include "core/byte_writer.h"
#include "core/error.h"
#include "core/checksum.h"
#include "engine/snapshot.h"
#include "kv/geometry.h"

namespace channel {
namespace {

// The checksum function of the store's format version.
ChecksumKind checksum_kind(const EpisodeFileHeader& header) {
  return file_checksum_kind("episode store", header.version, kEpisodeFileVersion);
}

// An episode's tokens all had their KV in the ring at once, so no episode is longer than it.
constexpr uint32_t kMaxEpisodeTokens = kv::kTotalSlots;

void check_encodable(const Episode& e, const EpisodeFileHeader& header) {
  const size_t n = e.tokens.size();
  if (n == 0 || n > kMaxEpisodeTokens) fail("an episode of {} tokens cannot be stored (1 to {})", n, kMaxEpisodeTokens);
  if (e.clocks.size() != n) fail("episode {} has {} tokens but {} clocks", e.id, n, e.clocks.size());
  if (!e.centroid.empty() && e.centroid.size() != header.centroid_width) {
    fail("episode {} has a centroid of {} values, the store's width is {}", e.id, e.centroid.size(), header.centroid_width);
  }
  const KvBlob& kv = e.kv;
  if (kv.slots.size() != n || kv.positions.size() != n || kv.moved_by.size() != n ||
      kv.layers.size() != header.kv_widths.size()) {
    fail("episode {}: the KV's {} slots, {} positions, {} moves and {} layers do not match its {} tokens and the "
         "store's {} layers",
         e.id, kv.slots.size(), kv.positions.size(), kv.moved_by.size(), kv.layers.size(), n, header.kv_widths.size());
  }
  for (size_t il = 0; il < kv.layers.size(); ++il) {
    const size_t values = n * header.kv_widths[il];
    if (kv.layers[il].k_as_written.size() != values || kv.layers[il].v.size() != values) {
      fail("episode {}: the KV of layer {} does not hold {} slots of width {}", e.id, il, n, header.kv_widths[il]);
    }
  }
}

Episode read_episode(ByteReader& r, const EpisodeFileHeader& header) {
  Episode e;
  e.id = r.integer<uint64_t>("id");
  e.parent_id = r.integer<uint64_t>("parent_id");
  e.created_ms = r.integer<int64_t>("created_ms");
  e.last_accessed_ms = r.integer<int64_t>("last_accessed_ms");
  e.start_clock = r.integer<int64_t>("start_clock");
  e.access_count = r.integer<uint32_t>("access_count");
  e.child_count = r.integer<uint32_t>("child_count");
  e.salience = r.f32("salience");
  e.interrupted = r.flag("interrupted");
  e.continuation_token = r.integer<int32_t>("continuation_token");
  if (e.continuation_token < -1) fail("{}: continuation token {} is negative", r.where(), e.continuation_token);

  const uint32_t centroid_length = r.integer<uint32_t>("centroid_length");
  if (centroid_length != 0 && centroid_length != header.centroid_width) {
    fail("{}: a centroid of {} values, the store's width is {}", r.where(), centroid_length, header.centroid_width);
  }
  e.centroid = r.array<float>(centroid_length, "centroid");

  const uint32_t n = r.integer<uint32_t>("token_count");
  if (n == 0 || n > kMaxEpisodeTokens) fail("{}: {} tokens, an episode holds 1 to {}", r.where(), n, kMaxEpisodeTokens);
  e.tokens = r.array<int32_t>(n, "tokens");
  if (std::any_of(e.tokens.begin(), e.tokens.end(), [](int32_t t) { return t < 0; })) {
    fail("{}: a negative token id", r.where());
  }
  e.clocks = r.array<int64_t>(n, "clocks");
  e.kv.slots = r.array<uint32_t>(n, "KV slots");
  if (std::any_of(e.kv.slots.begin(), e.kv.slots.end(), [](uint32_t s) { return s >= kv::kTotalSlots; })) {
    fail("{}: a KV slot at or past {}", r.where(), kv::kTotalSlots);
  }
  e.kv.positions = r.array<int32_t>(n, "KV positions");
  e.kv.moved_by = r.array<int64_t>(n, "KV moves");
  for (size_t il = 0; il < header.kv_widths.size(); ++il) {
    const uint64_t values = uint64_t{n} * header.kv_widths[il];
    KvBlob::Layer layer;
    layer.k_as_written = r.array<uint16_t>(values, fmt::format("layer {} keys", il));
    layer.v = r.array<uint16_t>(values, fmt::format("layer {} values", il));
    e.kv.layers.push_back(std::move(layer));
  }
  r.expect_end();
  return e;
}

bool all_zero(std::span<const uint8_t> bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

EpisodeFileHeader episode_file_header(uint64_t model_fingerprint, const ModelConfig& config) {
  return {model_fingerprint, static_cast<uint32_t>(config.n_embd), snapshot_geometry(config).kv_widths};
}

std::vector<uint8_t> encode_episode_header(const EpisodeFileHeader& header) {
  ByteWriter w;
  w.raw({reinterpret_cast<const uint8_t*>(kEpisodeFileMagic), sizeof(kEpisodeFileMagic)});
  w.integer(header.version).integer(header.model_fingerprint).integer(header.centroid_width);
  w.integer(static_cast<uint32_t>(header.kv_widths.size()));
  for (uint32_t width : header.kv_widths) w.integer(width);
  w.integer(checksum(checksum_kind(header), w.bytes()));
  return std::move(w.bytes());
}

std::vector<uint8_t> encode_episode_record(const Episode& e, const EpisodeFileHeader& header) {
  check_encodable(e, header);
  ByteWriter p;
  p.integer(e.id).integer(e.parent_id).integer(e.created_ms).integer(e.last_accessed_ms).integer(e.start_clock);
  p.integer(e.access_count).integer(e.child_count).f32(e.salience).flag(e.interrupted).integer(e.continuation_token);
  p.integer(static_cast<uint32_t>(e.centroid.size())).raw(bytes_of(e.centroid));
  p.integer(static_cast<uint32_t>(e.tokens.size())).raw(bytes_of(e.tokens)).raw(bytes_of(e.clocks));
  p.raw(bytes_of(e.kv.slots)).raw(bytes_of(e.kv.positions)).raw(bytes_of(e.kv.moved_by));
  for (const KvBlob::Layer& layer : e.kv.layers) p.raw(bytes_of(layer.k_as_written)).raw(bytes_of(layer.v));

  ByteWriter record;
  record.integer(kEpisodeRecordTag).integer(static_cast<uint64_t>(p.bytes().size()));
  record.integer(checksum(checksum_kind(header), p.bytes()));
  record.raw(p.bytes());
  return std::move(record.bytes());
}

EpisodeFileHeader parse_episode_header(std::span<const uint8_t> bytes, size_t& header_length) {
  ByteReader r(bytes, 0, "header");
  const auto magic = r.take(sizeof(kEpisodeFileMagic), "magic");
  if (std::memcmp(magic.data(), kEpisodeFileMagic, sizeof(kEpisodeFileMagic)) != 0) {
    fail("not a Channel episode store (the file does not start with \"CHNLEPIS\")");
  }
  EpisodeFileHeader header;
  header.version = r.integer<uint32_t>("format version");
  const ChecksumKind kind = checksum_kind(header);
  header.model_fingerprint = r.integer<uint64_t>("model fingerprint");
  header.centroid_width = r.integer<uint32_t>("centroid width");
  const uint32_t n_layer = r.integer<uint32_t>("n_layer");
  for (uint32_t il = 0; il < n_layer; ++il) header.kv_widths.push_back(r.integer<uint32_t>("kv width"));
  const uint64_t expected = checksum(kind, r.consumed());
  const size_t checksum_at = r.offset();
  if (r.integer<uint64_t>("header checksum") != expected) {
    fail("header checksum mismatch at offset {}: the header is corrupt", checksum_at);
  }
  header_length = r.offset();
  return header;
}

EpisodeFileScan scan_episode_file(std::span<const uint8_t> bytes, const std::function<void(Episode&&)>& on_episode) {
  EpisodeFileScan scan;
  scan.header = parse_episode_header(bytes, scan.good_length);
  uint64_t last_id = 0;
  while (scan.good_length < bytes.size()) {
    const size_t at = scan.good_length;
    const auto rest = bytes.subspan(at);
    const auto stop = [&](bool torn, std::string why) {
      scan.torn_tail = torn || all_zero(rest);
      scan.problem = fmt::format("record {} at offset {}: {}", scan.records + 1, at, why);
    };
    if (rest.size() < kEpisodeRecordFrameBytes) {
      stop(true, fmt::format("only {} bytes of its {}-byte frame", rest.size(), kEpisodeRecordFrameBytes));
      break;
    }
    ByteReader frame(rest, at, "record frame");
    const uint32_t tag = frame.integer<uint32_t>("tag");
    const uint64_t length = frame.integer<uint64_t>("length");
    const uint64_t expected_checksum = frame.integer<uint64_t>("checksum");
    if (tag != kEpisodeRecordTag) {
      stop(false, fmt::format("tag {:08x}, not a record's", tag));
      break;
    }
    const size_t payload_at = at + kEpisodeRecordFrameBytes;
    if (length > bytes.size() - payload_at) {
      stop(true, fmt::format("{} bytes long, only {} left", length, bytes.size() - payload_at));
      break;
    }
    const auto payload = bytes.subspan(payload_at, static_cast<size_t>(length));
    if (checksum(checksum_kind(scan.header), payload) != expected_checksum) {
      // A crash can leave a record's bytes unwritten only at the end of the file.
      stop(payload_at + length == bytes.size(), fmt::format("checksum mismatch over its {} bytes", length));
      break;
    }
    Episode episode;
    try {
      ByteReader r(payload, payload_at, "fields");
      episode = read_episode(r, scan.header);
    } catch (const Error& error) {
      stop(false, error.what());
      break;
    }
    if (episode.id <= last_id) {
      stop(false, fmt::format("id {} does not follow id {}", episode.id, last_id));
      break;
    }
    last_id = episode.id;
    scan.good_length = payload_at + static_cast<size_t>(length);
    ++scan.records;
    on_episode(std::move(episode));
  }
  return scan;
}

}  // namespace channel
