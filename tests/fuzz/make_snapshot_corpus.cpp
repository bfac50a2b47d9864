// Writes the seed corpus of fuzz_snapshot: the format tests' sample snapshots (an empty session,
// a short ring with recall, a wrapped ring with moved anchors), one file each.
// Usage: make_snapshot_corpus DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "unit/engine/snapshot_samples.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    const auto samples = channel::test::snapshot_samples();
    for (size_t i = 0; i < samples.size(); ++i) {
      const std::vector<uint8_t> bytes = channel::encode_snapshot(samples[i]);
      const auto path = dir / ("seed_snapshot_" + std::to_string(i) + ".bin");
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      if (!out) throw std::runtime_error("cannot write " + path.string());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_snapshot_corpus: %s\n", error.what());
    return 1;
  }
  return 0;
}
