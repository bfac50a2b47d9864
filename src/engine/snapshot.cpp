#include "engine/snapshot.h"

#include <fmt/ranges.h>

#include <bit>
#include <cstring>
#include <limits>
#include <locale>
#include <sstream>

#include "core/byte_reader.h"
#include "core/byte_writer.h"
#include "core/durable_file.h"
#include "core/error.h"
#include "core/checksum.h"
#include "core/mapped_file.h"
#include "kv/geometry.h"

namespace channel {
namespace {

enum class SectionId : uint32_t { Session = 1, Ring = 2, Kv = 3 };
constexpr SectionId kSectionOrder[] = {SectionId::Session, SectionId::Ring, SectionId::Kv};

const char* section_name(SectionId id) {
  switch (id) {
    case SectionId::Session: return "session";
    case SectionId::Ring: return "ring";
    case SectionId::Kv: return "KV";
  }
  return "unknown";
}

// Longest generator text accepted; std::mt19937_64 writes about 6.5 KB (313 decimal numbers).
constexpr size_t kMaxGeneratorText = 16 * 1024;

// ---- writing ----

// A section's bytes: small fields it owns, then views of large arrays in the snapshot, so the
// KV is written straight from the captured state without another copy.
struct Section {
  SectionId id;
  ByteWriter head;
  std::vector<std::span<const uint8_t>> arrays;
};

Section session_section(const Snapshot& s) {
  Section section{SectionId::Session, {}, {}};
  ByteWriter& w = section.head;
  w.flag(s.turn.turn_open).flag(s.turn.in_thought).flag(s.turn.suppress_thinking).flag(s.turn.mask_channel_close_once);
  w.flag(s.turn.pending_yield.has_value()).integer<int32_t>(s.turn.pending_yield.value_or(-1));
  const SessionConfig& c = s.config;
  w.integer(c.thinking_budget).integer(c.max_tokens);
  w.f32(c.sampler.temperature).integer<int32_t>(c.sampler.top_k).f32(c.sampler.top_p).f32(c.sampler.min_p);
  w.f32(c.sampler.repeat_penalty).integer<int32_t>(c.sampler.repeat_last_n);
  w.f32(c.sampler.frequency_penalty).f32(c.sampler.presence_penalty).integer(c.sampler.seed);
  w.f32(c.quiescence_threshold).flag(c.thinking_gate);
  std::ostringstream generator;
  generator.imbue(std::locale::classic());
  generator << s.generator;
  w.integer(static_cast<uint32_t>(generator.str().size())).text(generator.str());
  w.integer(static_cast<uint32_t>(s.logits.n_rows)).integer(static_cast<uint32_t>(s.logits.n_cols));
  section.arrays.push_back(bytes_of(s.logits.values));
  return section;
}

Section ring_section(const kv::RingState& r) {
  Section section{SectionId::Ring, {}, {}};
  ByteWriter& w = section.head;
  w.integer(r.anchors).integer(r.clock).integer(r.oldest_live).integer(static_cast<uint8_t>(r.pending_type));
  w.integer(r.anchor_position).integer(r.recall_count).integer(r.recall_clock).integer(r.recall_position);
  w.integer(r.committed_first_query).integer(static_cast<uint32_t>(r.spans.size()));
  for (const kv::Span& span : r.spans) {
    w.integer(static_cast<uint8_t>(span.type)).integer(span.start_clock).integer(span.end_clock).integer(span.first_slot);
  }
  return section;
}

Section kv_section(const KvBlob& kv) {
  Section section{SectionId::Kv, {}, {}};
  section.head.integer(static_cast<uint32_t>(kv.slots.size()));
  section.head.raw(bytes_of(kv.slots)).raw(bytes_of(kv.positions)).raw(bytes_of(kv.moved_by));
  for (const KvBlob::Layer& layer : kv.layers) {
    section.arrays.push_back(bytes_of(layer.k_as_written));
    section.arrays.push_back(bytes_of(layer.v));
  }
  return section;
}

// Arrays that disagree with their counts would make a file whose fields no longer line up.
// (Values out of range are written as they are: parse_snapshot refuses them.)
void check_encodable(const Snapshot& s) {
  if (s.stream_id.size() > kMaxSnapshotStreamId) {
    fail("stream id of {} bytes is longer than {}", s.stream_id.size(), kMaxSnapshotStreamId);
  }
  const auto fits_u32 = [](int64_t v) { return v >= 0 && v <= std::numeric_limits<uint32_t>::max(); };
  if (!fits_u32(s.logits.n_rows) || !fits_u32(s.logits.n_cols) ||
      s.logits.values.size() != static_cast<size_t>(s.logits.n_rows * s.logits.n_cols)) {
    fail("{} x {} logits with {} values cannot be stored", s.logits.n_rows, s.logits.n_cols, s.logits.values.size());
  }
  const size_t n = s.kv.slots.size();
  if (s.kv.positions.size() != n || s.kv.moved_by.size() != n || s.kv.layers.size() != s.geometry.kv_widths.size()) {
    fail("the KV's {} slots, {} positions, {} moves and {} layers do not match ({} layers in the geometry)", n,
         s.kv.positions.size(), s.kv.moved_by.size(), s.kv.layers.size(), s.geometry.kv_widths.size());
  }
  for (size_t il = 0; il < s.kv.layers.size(); ++il) {
    const size_t values = n * s.geometry.kv_widths[il];
    if (s.kv.layers[il].k_as_written.size() != values || s.kv.layers[il].v.size() != values) {
      fail("the KV of layer {} does not hold {} slots of width {}", il, n, s.geometry.kv_widths[il]);
    }
  }
}

void emit(const Snapshot& s, uint32_t version, const ByteSink& sink) {
  check_encodable(s);
  const ChecksumKind kind = file_checksum_kind("snapshot", version, kSnapshotVersion);
  ByteWriter header;
  header.raw({reinterpret_cast<const uint8_t*>(kSnapshotMagic), sizeof(kSnapshotMagic)});
  header.integer(version).integer(s.model_fingerprint);
  header.integer(s.geometry.total_slots).integer(s.geometry.scratch_slots);
  header.integer(static_cast<uint32_t>(s.geometry.kv_widths.size()));
  for (uint32_t width : s.geometry.kv_widths) header.integer(width);
  header.integer(s.ring.clock).integer(static_cast<uint16_t>(s.stream_id.size())).text(s.stream_id);
  header.integer(checksum(kind, header.bytes()));
  sink(header.bytes());

  for (Section section : {session_section(s), ring_section(s.ring), kv_section(s.kv)}) {
    Checksum section_checksum(kind);
    section_checksum.update(section.head.bytes());
    uint64_t length = section.head.bytes().size();
    for (const auto& array : section.arrays) {
      section_checksum.update(array);
      length += array.size();
    }
    ByteWriter frame;
    frame.integer(static_cast<uint32_t>(section.id)).integer(uint32_t{0}).integer(length);
    frame.integer(section_checksum.value());
    sink(frame.bytes());
    sink(section.head.bytes());
    for (const auto& array : section.arrays) sink(array);
  }
}

// ---- reading ----

void read_session(ByteReader& r, Snapshot& s) {
  s.turn.turn_open = r.flag("turn_open");
  s.turn.in_thought = r.flag("in_thought");
  s.turn.suppress_thinking = r.flag("suppress_thinking");
  s.turn.mask_channel_close_once = r.flag("mask_channel_close_once");
  const bool has_pending = r.flag("has_pending_yield");
  const int32_t pending = r.integer<int32_t>("pending_yield");
  if (has_pending) {
    if (pending < 0) fail("{}: pending yield token {} is negative", r.where(), pending);
    s.turn.pending_yield = pending;
  }
  SessionConfig& c = s.config;
  c.thinking_budget = r.integer<uint32_t>("thinking_budget");
  c.max_tokens = r.integer<uint32_t>("max_tokens");
  c.sampler.temperature = r.f32("temperature");
  c.sampler.top_k = r.integer<int32_t>("top_k");
  c.sampler.top_p = r.f32("top_p");
  c.sampler.min_p = r.f32("min_p");
  c.sampler.repeat_penalty = r.f32("repeat_penalty");
  c.sampler.repeat_last_n = r.integer<int32_t>("repeat_last_n");
  c.sampler.frequency_penalty = r.f32("frequency_penalty");
  c.sampler.presence_penalty = r.f32("presence_penalty");
  c.sampler.seed = r.integer<uint64_t>("seed");
  c.quiescence_threshold = r.f32("quiescence_threshold");
  c.thinking_gate = r.flag("thinking_gate");

  const uint32_t generator_length = r.integer<uint32_t>("generator_length");
  if (generator_length > kMaxGeneratorText) {
    fail("{}: generator state of {} bytes is longer than {}", r.where(), generator_length, kMaxGeneratorText);
  }
  std::istringstream generator(r.text(generator_length, "generator"));
  generator.imbue(std::locale::classic());
  generator >> s.generator;
  if (generator.fail() || !(generator >> std::ws).eof()) fail("{}: the sampler's generator state does not parse", r.where());

  const uint32_t rows = r.integer<uint32_t>("logits_rows");
  const uint32_t cols = r.integer<uint32_t>("logits_cols");
  if (rows > 1) fail("{}: {} rows of logits, a snapshot holds at most the last token's", r.where(), rows);
  s.logits.n_rows = rows;
  s.logits.n_cols = cols;
  s.logits.values = r.array<float>(uint64_t{rows} * cols, "logits");
}

void read_ring(ByteReader& r, kv::RingState& ring) {
  ring.anchors = r.integer<uint32_t>("anchors");
  ring.clock = r.integer<int64_t>("clock");
  ring.oldest_live = r.integer<int64_t>("oldest_live");
  ring.pending_type = static_cast<kv::SpanType>(r.integer<uint8_t>("pending_type"));
  ring.anchor_position = r.integer<int64_t>("anchor_position");
  ring.recall_count = r.integer<uint32_t>("recall_count");
  ring.recall_clock = r.integer<int64_t>("recall_clock");
  ring.recall_position = r.integer<int64_t>("recall_position");
  ring.committed_first_query = r.integer<int64_t>("committed_first_query");
  const uint32_t n_spans = r.integer<uint32_t>("span_count");
  for (uint32_t i = 0; i < n_spans; ++i) {  // no reserve: the count is not trusted yet
    kv::Span span;
    span.type = static_cast<kv::SpanType>(r.integer<uint8_t>("span type"));
    span.start_clock = r.integer<int64_t>("span start");
    span.end_clock = r.integer<int64_t>("span end");
    span.first_slot = r.integer<uint32_t>("span first slot");
    ring.spans.push_back(span);
  }
}

void read_kv(ByteReader& r, const SnapshotGeometry& geometry, KvBlob& kv) {
  const uint32_t n_slots = r.integer<uint32_t>("slot_count");
  if (n_slots > geometry.total_slots) {
    fail("{}: {} slots, more than the {} the geometry has", r.where(), n_slots, geometry.total_slots);
  }
  kv.slots = r.array<uint32_t>(n_slots, "slots");
  kv.positions = r.array<int32_t>(n_slots, "positions");
  kv.moved_by = r.array<int64_t>(n_slots, "moved_by");
  for (size_t il = 0; il < geometry.kv_widths.size(); ++il) {
    const uint64_t values = uint64_t{n_slots} * geometry.kv_widths[il];
    KvBlob::Layer layer;
    layer.k_as_written = r.array<uint16_t>(values, fmt::format("layer {} keys", il));
    layer.v = r.array<uint16_t>(values, fmt::format("layer {} values", il));
    kv.layers.push_back(std::move(layer));
  }
}

// Returns the header's clock (checked against the ring section's once that is read); sets the
// checksum function of the file's version.
int64_t read_header(ByteReader& r, Snapshot& s, ChecksumKind& kind) {
  const auto magic = r.take(sizeof(kSnapshotMagic), "magic");
  if (std::memcmp(magic.data(), kSnapshotMagic, sizeof(kSnapshotMagic)) != 0) {
    fail("not a Channel snapshot (the file does not start with \"CHNLSNAP\")");
  }
  kind = file_checksum_kind("snapshot", r.integer<uint32_t>("format version"), kSnapshotVersion);
  s.model_fingerprint = r.integer<uint64_t>("model fingerprint");
  s.geometry.total_slots = r.integer<uint32_t>("total_slots");
  s.geometry.scratch_slots = r.integer<uint32_t>("scratch_slots");
  const uint32_t n_layer = r.integer<uint32_t>("n_layer");
  for (uint32_t il = 0; il < n_layer; ++il) s.geometry.kv_widths.push_back(r.integer<uint32_t>("kv width"));
  const int64_t clock = r.integer<int64_t>("clock");
  const uint16_t id_length = r.integer<uint16_t>("stream_id_length");
  if (id_length > kMaxSnapshotStreamId) fail("header: stream id of {} bytes is longer than {}", id_length, kMaxSnapshotStreamId);
  s.stream_id = r.text(id_length, "stream id");
  const uint64_t expected = checksum(kind, r.consumed());
  const size_t checksum_at = r.offset();
  if (r.integer<uint64_t>("header checksum") != expected) {
    fail("header checksum mismatch at offset {}: the header is corrupt", checksum_at);
  }
  return clock;
}

}  // namespace

SnapshotGeometry snapshot_geometry(const ModelConfig& config) {
  SnapshotGeometry geometry{kv::kTotalSlots, kv::kScratchSlots, {}};
  // KV-shared layers hold no KV of their own: the snapshot stores the layers that do.
  for (int il = 0; il < config.n_kv_layers; ++il) {
    const LayerConfig& layer = config.layers[il];
    geometry.kv_widths.push_back(static_cast<uint32_t>(layer.n_head_kv) * static_cast<uint32_t>(layer.head_dim));
  }
  return geometry;
}

std::vector<uint8_t> encode_snapshot(const Snapshot& snapshot, uint32_t version) {
  std::vector<uint8_t> out;
  emit(snapshot, version, [&](std::span<const uint8_t> bytes) { out.insert(out.end(), bytes.begin(), bytes.end()); });
  return out;
}

Snapshot parse_snapshot(std::span<const uint8_t> bytes) {
  Snapshot s;
  ByteReader file(bytes, 0, "file");
  ChecksumKind kind = ChecksumKind::kXxh3;
  const int64_t header_clock = read_header(file, s, kind);
  for (SectionId expected : kSectionOrder) {
    ByteReader frame(bytes.subspan(file.offset()), file.offset(), fmt::format("{} section header", section_name(expected)));
    const uint32_t id = frame.integer<uint32_t>("section id");
    if (id != static_cast<uint32_t>(expected)) {
      fail("section id {} at offset {}, expected {} ({})", id, file.offset(), static_cast<uint32_t>(expected),
           section_name(expected));
    }
    if (frame.integer<uint32_t>("reserved") != 0) fail("{}: reserved field is not 0", frame.where());
    const uint64_t length = frame.integer<uint64_t>("section length");
    const uint64_t expected_checksum = frame.integer<uint64_t>("section checksum");
    file.take(frame.consumed().size(), "section header");
    const size_t payload_offset = file.offset();
    const auto payload = file.take(length, fmt::format("{} section", section_name(expected)));
    if (checksum(kind, payload) != expected_checksum) {
      fail("{} section checksum mismatch ({} bytes at offset {}): the file is corrupt", section_name(expected), length,
           payload_offset);
    }
    ByteReader r(payload, payload_offset, fmt::format("{} section", section_name(expected)));
    switch (expected) {
      case SectionId::Session: read_session(r, s); break;
      case SectionId::Ring: read_ring(r, s.ring); break;
      case SectionId::Kv: read_kv(r, s.geometry, s.kv); break;
    }
    r.expect_end();
  }
  if (file.remaining() != 0) fail("{} bytes after the last section at offset {}", file.remaining(), file.offset());
  if (s.ring.clock != header_clock) fail("the header's clock {} differs from the ring's {}", header_clock, s.ring.clock);
  return s;
}

Snapshot read_snapshot_file(const std::string& path) {
  const MappedFile file(path);
  return parse_snapshot(file.bytes());
}

void write_snapshot_file(const Snapshot& snapshot, const std::string& path) {
  replace_file(path, snapshot_temp_path(path), [&](const ByteSink& sink) { emit(snapshot, kSnapshotVersion, sink); });
}

void require_compatible(const Snapshot& snapshot, uint64_t model_fingerprint, const SnapshotGeometry& geometry) {
  if (snapshot.model_fingerprint != model_fingerprint) {
    fail("the snapshot was taken with another model (fingerprint {:016x}, this model's is {:016x})",
         snapshot.model_fingerprint, model_fingerprint);
  }
  if (snapshot.geometry != geometry) {
    const auto describe = [](const SnapshotGeometry& g) {
      return fmt::format("{} slots + {} scratch, {} layers of KV widths {}", g.total_slots, g.scratch_slots,
                         g.kv_widths.size(), fmt::join(g.kv_widths, "/"));
    };
    fail("the snapshot's KV geometry ({}) differs from this engine's ({})", describe(snapshot.geometry), describe(geometry));
  }
}

}  // namespace channel
