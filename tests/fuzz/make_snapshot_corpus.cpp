// Writes the seed corpus of fuzz_snapshot: the format tests' sample snapshots (an empty session,
// a short ring with recall, a wrapped ring with moved anchors), one file each, and the second in
// format version 1 (FNV-1a checksums, as older builds wrote).
// Usage: make_snapshot_corpus DIR
#include <string>

#include "fuzz/corpus_maker.h"
#include "unit/engine/snapshot_samples.h"

int main(int argc, char** argv) {
  return channel::test::run_corpus_maker(argc, argv, [](const std::filesystem::path& dir) {
    const auto samples = channel::test::snapshot_samples();
    for (size_t i = 0; i < samples.size(); ++i) {
      channel::test::write_corpus_file(dir / ("seed_snapshot_" + std::to_string(i) + ".bin"),
                                       channel::encode_snapshot(samples[i]));
    }
    channel::test::write_corpus_file(dir / "seed_snapshot_version_1.bin", channel::encode_snapshot(samples[1], 1));
  });
}
