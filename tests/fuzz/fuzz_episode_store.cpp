// libFuzzer target for the episode store's reader (engine/episode_format.h), which reads a file
// a crash, a full disk, another model or another build may have left. The input is a whole store
// file. It is scanned as it is, and again with its checksums made right: almost every mutation
// breaks a checksum, and without the second scan the fields behind the checksums would never be
// reached.
// Properties, besides never crashing, no undefined behaviour and no allocation past the input's
// size (libFuzzer's -rss_limit_mb and -malloc_limit_mb catch those):
// - scan_episode_file either returns or throws channel::Error (anything else escapes and aborts);
// - what it reads back is a prefix of the file: good_length within the size, a problem named
//   exactly when it stopped short;
// - the episodes it hands over encode, and that file scans back whole to the same bytes.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "core/error.h"
#include "core/checksum.h"
#include "engine/episode_format.h"
#include "fuzz/fuzz_properties.h"

namespace {

using channel::fuzz::read_le;
using channel::fuzz::violated;
using channel::fuzz::write_u64;

// Rewrites the header checksum and each record's checksum (over the bytes its length covers, as
// far as there are any) as far as the layout of docs/memory-format.md can be followed.
std::vector<uint8_t> with_fixed_checksums(std::span<const uint8_t> data) {
  std::vector<uint8_t> bytes(data.begin(), data.end());
  // The checksum function of the version the file claims (format version 1: FNV-1a).
  const channel::ChecksumKind kind =
      bytes.size() >= 12 && read_le(bytes, 8, 4) == 1 ? channel::ChecksumKind::kFnv1a : channel::ChecksumKind::kXxh3;
  if (bytes.size() < 28) return bytes;
  const uint64_t checksum_at = 28 + 4 * read_le(bytes, 24, 4);
  if (checksum_at + 8 > bytes.size()) return bytes;
  size_t at = static_cast<size_t>(checksum_at);
  write_u64(bytes, at, channel::checksum(kind, std::span(bytes).first(at)));
  at += 8;
  while (at + channel::kEpisodeRecordFrameBytes <= bytes.size()) {
    const uint64_t length = read_le(bytes, at + 4, 8);
    const size_t payload = at + channel::kEpisodeRecordFrameBytes;
    const size_t covered = static_cast<size_t>(std::min<uint64_t>(length, bytes.size() - payload));
    write_u64(bytes, at + 12, channel::checksum(kind, std::span(bytes).subspan(payload, covered)));
    at = payload + covered;
  }
  return bytes;
}

void check(std::span<const uint8_t> file) {
  std::vector<uint8_t> reencoded;
  size_t handed_over = 0;
  channel::EpisodeFileHeader header;
  channel::EpisodeFileScan scan;
  try {
    size_t header_length = 0;
    header = channel::parse_episode_header(file, header_length);
    scan = channel::scan_episode_file(file, [&](channel::Episode&& e) {
      ++handed_over;
      const auto record = channel::encode_episode_record(e, header);
      reencoded.insert(reencoded.end(), record.begin(), record.end());
    });
  } catch (const channel::Error&) {
    return;
  }
  if (scan.good_length > file.size()) violated("good_length past the end of the file");
  if (scan.problem.has_value() != (scan.good_length < file.size())) violated("a problem named iff it stopped short");
  if (handed_over != scan.records) violated("records counted differ from those handed over");
  if (scan.header != header) violated("the scan's header differs from parse_episode_header's");

  std::vector<uint8_t> whole = channel::encode_episode_header(header);
  whole.insert(whole.end(), reencoded.begin(), reencoded.end());
  std::vector<uint8_t> again;
  const auto rescan = channel::scan_episode_file(whole, [&](channel::Episode&& e) {
    const auto record = channel::encode_episode_record(e, header);
    again.insert(again.end(), record.begin(), record.end());
  });
  if (rescan.problem || rescan.records != scan.records || again != reencoded) {
    violated("the episodes read back do not encode to a store that reads back the same");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(std::span(data, size));
  check(with_fixed_checksums(std::span(data, size)));
  return 0;
}
