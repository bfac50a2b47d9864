// libFuzzer target for the snapshot parser (engine/snapshot.h), which reads files a crash, a
// full disk or another build may have left. The input is a whole snapshot file. It is parsed as
// it is, and again with its checksums made right: almost every mutation breaks a checksum, and
// without the second parse the fields behind the checksums would never be reached.
// Properties, besides never crashing and no undefined behaviour:
// - parse_snapshot either returns or throws channel::Error (anything else escapes and aborts);
// - a parsed snapshot encodes, and its encoding parses and encodes again to the same bytes;
// - the ring state it holds is either restored by a KvRing or refused with channel::Error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/checksum.h"
#include "engine/snapshot.h"
#include "fuzz/fuzz_properties.h"
#include "kv/ring.h"

namespace {

using channel::fuzz::read_le;
using channel::fuzz::violated;
using channel::fuzz::write_u64;

// Rewrites the header checksum and each section's checksum (over the bytes the section's length
// covers, as far as there are any) as far as the layout of docs/snapshot-format.md can be followed.
std::vector<uint8_t> with_fixed_checksums(std::span<const uint8_t> data) {
  std::vector<uint8_t> bytes(data.begin(), data.end());
  // The checksum function of the version the file claims (format version 1: FNV-1a).
  const channel::ChecksumKind kind =
      bytes.size() >= 12 && read_le(bytes, 8, 4) == 1 ? channel::ChecksumKind::kFnv1a : channel::ChecksumKind::kXxh3;
  if (bytes.size() < 32) return bytes;
  const uint64_t n_layer = read_le(bytes, 28, 4);
  const uint64_t id_length_at = 40 + 4 * n_layer;
  if (id_length_at + 2 > bytes.size()) return bytes;
  size_t at = static_cast<size_t>(id_length_at + 2 + read_le(bytes, static_cast<size_t>(id_length_at), 2));
  if (at + 8 > bytes.size()) return bytes;
  write_u64(bytes, at, channel::checksum(kind, std::span(bytes).first(at)));
  at += 8;
  while (at + 24 <= bytes.size()) {
    const uint64_t length = read_le(bytes, at + 8, 8);
    const size_t payload = at + 24;
    const size_t covered = static_cast<size_t>(std::min<uint64_t>(length, bytes.size() - payload));
    write_u64(bytes, at + 16, channel::checksum(kind, std::span(bytes).subspan(payload, covered)));
    at = payload + covered;
  }
  return bytes;
}

void check(std::span<const uint8_t> file) {
  channel::Snapshot snapshot;
  try {
    snapshot = channel::parse_snapshot(file);
  } catch (const channel::Error&) {
    return;
  }
  // Compared as bytes: logits and settings may be NaN, which no float comparison finds equal.
  const std::vector<uint8_t> encoded = channel::encode_snapshot(snapshot);
  if (channel::encode_snapshot(channel::parse_snapshot(encoded)) != encoded) {
    violated("encode(parse(x)) does not parse back to the same snapshot");
  }
  try {
    channel::kv::KvRing ring(32);
    ring.restore(snapshot.ring);
  } catch (const channel::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(std::span(data, size));
  check(with_fixed_checksums(std::span(data, size)));
  return 0;
}
