// Writes the seed corpus of fuzz_gguf: the unit tests' sample GGUF files, one file each.
// Usage: make_gguf_corpus DIR
#include <cstdio>
#include <filesystem>

#include "core/error.h"
#include "unit/model/gguf_samples.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    for (const auto& sample : channel::test::gguf_samples()) {
      sample.writer.write((dir / ("seed_" + sample.name + ".gguf")).string());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_gguf_corpus: %s\n", error.what());
    return 1;
  }
  return 0;
}
