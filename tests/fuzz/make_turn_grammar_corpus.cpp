// Writes the seed corpus of fuzz_turn_grammar: the grammar tests' SET_SYSTEM and TOOL_RETURN
// payloads, one file each, after the target's 3 bytes that pick a value to replace.
// Usage: make_turn_grammar_corpus DIR
#include <string>

#include "fuzz/corpus_maker.h"
#include "unit/engine/turn_grammar_samples.h"

int main(int argc, char** argv) {
  return channel::test::run_corpus_maker(argc, argv, [](const std::filesystem::path& dir) {
    const auto payloads = channel::test::turn_grammar_payloads();
    for (size_t i = 0; i < payloads.size(); ++i) {
      const std::string& payload = payloads[i];
      std::vector<uint8_t> seed = {0, static_cast<uint8_t>(i), static_cast<uint8_t>(i)};
      seed.insert(seed.end(), payload.begin(), payload.end());
      channel::test::write_corpus_file(dir / ("seed_payload_" + std::to_string(i) + ".bin"), seed);
    }
  });
}
