// The snapshot format without a model: every field survives encode and parse, fields out of
// range are refused with one line, inconsistent snapshots are not written, and files are
// replaced atomically (also when the writer is killed halfway).
#include "engine/snapshot.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>
#define XXH_INLINE_ALL  // the reference function, compiled in (as core/checksum.cpp does)
#include <xxhash.h>

#include "core/error.h"
#include "core/checksum.h"
#include "core/fnv1a.h"
#include "kv/geometry.h"
#include "snapshot_samples.h"

namespace channel {
namespace {

Snapshot sample_snapshot() { return test::snapshot_samples()[1]; }

TEST(SnapshotFormat, EveryFieldSurvivesEncodeAndParse) {
  for (const Snapshot& s : test::snapshot_samples()) {
    const std::vector<uint8_t> bytes = encode_snapshot(s);
    EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "CHNLSNAP");
    const Snapshot back = parse_snapshot(bytes);
    EXPECT_EQ(back, s);
    EXPECT_EQ(encode_snapshot(back), bytes);
    kv::KvRing ring(16);
    EXPECT_NO_THROW(ring.restore(back.ring));
  }
}

// Format version 2 checksums with XXH3-64, version 1 (older builds' files) with FNV-1a: both
// read back to the same state. The header's checksum (its last 8 bytes) is checked here against
// each library function directly.
TEST(SnapshotFormat, VersionOneFilesWithFnvChecksumsStillRead) {
  const Snapshot s = sample_snapshot();
  const size_t header = 8 + 4 + 8 + 4 + 4 + 4 + 4 * s.geometry.kv_widths.size() + 8 + 2 + s.stream_id.size();
  const auto stored_checksum = [&](const std::vector<uint8_t>& bytes) {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= uint64_t{bytes[header + i]} << (8 * i);
    return value;
  };
  const std::vector<uint8_t> v2 = encode_snapshot(s);
  const std::vector<uint8_t> v1 = encode_snapshot(s, 1);
  EXPECT_EQ(v2[8], 2);
  EXPECT_EQ(v1[8], 1);
  EXPECT_EQ(stored_checksum(v2), XXH3_64bits(v2.data(), header));
  EXPECT_EQ(stored_checksum(v1), fnv1a(std::span(v1).first(header)));
  EXPECT_EQ(parse_snapshot(v1), s);
  EXPECT_EQ(parse_snapshot(v2), s);
  std::vector<uint8_t> v3 = v2;
  v3[8] = 3;
  try {
    parse_snapshot(v3);
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("format version 3"), std::string::npos) << e.what();
  }
}

TEST(SnapshotFormat, OutOfRangeFieldsAreRefused) {
  const std::vector<std::pair<std::string, std::function<void(Snapshot&)>>> cases = {
      {"rows of logits", [](Snapshot& s) { s.logits = {.n_rows = 2, .n_cols = 1, .values = {1.0f, 2.0f}}; }},
      {"pending yield token -3 is negative", [](Snapshot& s) { s.turn.pending_yield = -3; }},
      {"more than the 4096 the geometry has",
       [](Snapshot& s) {
         s.kv.slots.assign(4097, 0);
         s.kv.positions.assign(4097, 0);
         s.kv.moved_by.assign(4097, 0);
         for (size_t il = 0; il < s.kv.layers.size(); ++il) {
           s.kv.layers[il].k_as_written.assign(4097 * s.geometry.kv_widths[il], 0);
           s.kv.layers[il].v.assign(4097 * s.geometry.kv_widths[il], 0);
         }
       }},
  };
  for (const auto& [reason, mutate] : cases) {
    Snapshot s = sample_snapshot();
    mutate(s);
    try {
      parse_snapshot(encode_snapshot(s));
      ADD_FAILURE() << reason << ": parsed";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  }
  // What would not line up in the file is not written at all.
  Snapshot long_id = sample_snapshot();
  long_id.stream_id.assign(65, 'x');
  EXPECT_THROW(encode_snapshot(long_id), Error);
  Snapshot short_values = sample_snapshot();
  short_values.kv.layers[1].v.pop_back();
  EXPECT_THROW(encode_snapshot(short_values), Error);
  Snapshot short_logits = sample_snapshot();
  short_logits.logits.values.pop_back();
  EXPECT_THROW(encode_snapshot(short_logits), Error);
}

TEST(SnapshotFormat, FlagsMustBeZeroOrOne) {
  const Snapshot s = sample_snapshot();
  std::vector<uint8_t> bytes = encode_snapshot(s);
  // The session section (its first field is turn_open) follows the header and a 24-byte
  // section header: id, reserved, length, checksum.
  const size_t section = 8 + 4 + 8 + 4 + 4 + 4 + 4 * s.geometry.kv_widths.size() + 8 + 2 + s.stream_id.size() + 8;
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t{bytes[section + 8 + i]} << (8 * i);
  ASSERT_EQ(bytes[section + 24], 1);
  bytes[section + 24] = 2;
  // With the checksum made right again, the field itself is what is refused.
  const uint64_t checksum = channel::checksum(ChecksumKind::kXxh3, std::span(bytes).subspan(section + 24, length));
  for (int i = 0; i < 8; ++i) bytes[section + 16 + i] = static_cast<uint8_t>(checksum >> (8 * i));
  try {
    parse_snapshot(bytes);
    ADD_FAILURE() << "parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("turn_open at offset"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not 0 or 1"), std::string::npos) << e.what();
  }
}

TEST(SnapshotFormat, FilesAreReplacedWholeAndTempFilesRemoved) {
  const auto dir = std::filesystem::temp_directory_path() / ("channel-snapshot-format-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "s.snap").string();
  Snapshot s = sample_snapshot();
  write_snapshot_file(s, path);
  s.stream_id = "second";
  write_snapshot_file(s, path);
  EXPECT_EQ(read_snapshot_file(path), s);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_THROW(write_snapshot_file(s, (dir / "no" / "s.snap").string()), Error);
  EXPECT_THROW(write_snapshot_file(s, ""), Error);
  EXPECT_THROW(write_snapshot_file(s, path + std::string(1, '\0') + "x"), Error);
  EXPECT_THROW(read_snapshot_file((dir / "missing.snap").string()), Error);
  std::filesystem::remove_all(dir);
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `snapshot` to `path` in a child process, SIGKILLed after `delay` (never, if negative);
// returns how long the child ran.
std::chrono::duration<double> write_in_child(const Snapshot& snapshot, const std::string& path,
                                             std::chrono::duration<double> delay) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      write_snapshot_file(snapshot, path);
    } catch (...) {
      ::_exit(2);
    }
    ::_exit(0);
  }
  if (delay.count() >= 0) {
    std::this_thread::sleep_for(delay);
    ::kill(child, SIGKILL);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (delay.count() < 0) {  // braced: gtest's macro is an if/else
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return std::chrono::steady_clock::now() - start;
}

TEST(SnapshotFormat, AWriteKilledAtAnyMomentLeavesTheOldFileOrTheWholeNewOne) {
  // An 8 MB snapshot (a full ring, two layers of 256-wide KV) replaces another; the writer is
  // SIGKILLed at moments spread over an unkilled write. The file under the name is always one
  // of the two, byte for byte (tests/reliability/snapshot_sigkill.py does this to the engine).
  const auto dir = std::filesystem::temp_directory_path() / ("channel-snapshot-kill-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "s.snap").string(), old_copy = (dir / "old.snap").string(),
                    new_copy = (dir / "new.snap").string();
  kv::KvRing ring(16);
  ring.append(ring.ring_slots());
  Snapshot old_snapshot = test::sample_snapshot(ring);
  old_snapshot.geometry.kv_widths = {256, 256};
  old_snapshot.kv = test::made_up_kv(ring, old_snapshot.geometry.kv_widths);
  Snapshot new_snapshot = old_snapshot;
  new_snapshot.stream_id = "new";
  write_snapshot_file(old_snapshot, old_copy);
  const auto unkilled = write_in_child(new_snapshot, new_copy, std::chrono::duration<double>(-1));
  const auto old_bytes = file_bytes(old_copy), new_bytes = file_bytes(new_copy);
  ASSERT_NE(old_bytes, new_bytes);
  const int trials = 10;
  int kept = 0, replaced = 0;
  for (int i = 0; i < trials; ++i) {
    std::filesystem::copy_file(old_copy, path, std::filesystem::copy_options::overwrite_existing);
    write_in_child(new_snapshot, path, unkilled * (1.2 * i / (trials - 1)));
    const auto bytes = file_bytes(path);
    ASSERT_TRUE(bytes == old_bytes || bytes == new_bytes) << "trial " << i << ": a torn file of " << bytes.size()
                                                          << " bytes";
    (bytes == old_bytes ? kept : replaced) += 1;
  }
  std::cout << "unkilled write " << unkilled.count() * 1000 << " ms; " << kept << " kills left the old file, "
            << replaced << " the new one\n";
  std::filesystem::remove_all(dir);
}

TEST(SnapshotFormat, CompatibilityNeedsTheSameModelAndGeometry) {
  const Snapshot s = sample_snapshot();
  EXPECT_NO_THROW(require_compatible(s, s.model_fingerprint, s.geometry));
  EXPECT_THROW(require_compatible(s, s.model_fingerprint + 1, s.geometry), Error);
  SnapshotGeometry other = s.geometry;
  other.kv_widths.push_back(4);
  EXPECT_THROW(require_compatible(s, s.model_fingerprint, other), Error);
}

}  // namespace
}  // namespace channel
