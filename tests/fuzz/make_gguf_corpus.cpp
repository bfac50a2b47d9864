// Writes the seed corpus of fuzz_gguf: the unit tests' sample GGUF files, one file each.
// Usage: make_gguf_corpus DIR
#include "fuzz/corpus_maker.h"
#include "unit/model/gguf_samples.h"

int main(int argc, char** argv) {
  return channel::test::run_corpus_maker(argc, argv, [](const std::filesystem::path& dir) {
    for (const auto& sample : channel::test::gguf_samples()) {
      sample.writer.write((dir / ("seed_" + sample.name + ".gguf")).string());
    }
  });
}
