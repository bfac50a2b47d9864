// Writes the seed corpus of fuzz_protocol: one file per sample frame of every opcode (the unit
// tests' samples, both directions), and one stream of all of them with garbage in the middle.
// Usage: make_protocol_corpus DIR
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/corpus_maker.h"
#include "protocol/frame.h"
#include "unit/protocol/protocol_samples.h"

int main(int argc, char** argv) {
  using namespace channel::protocol;
  using namespace std::string_view_literals;
  using channel::test::write_corpus_file;
  return channel::test::run_corpus_maker(argc, argv, [](const std::filesystem::path& dir) {
    std::vector<uint8_t> stream;
    uint16_t msg_id = 1;
    auto add = [&](const auto& message) {
      const auto frame = encode_frame(msg_id, message);
      const auto name = "seed_" + opcode_name(opcode_of(message)) + "_" + std::to_string(msg_id++) + ".bin";
      write_corpus_file(dir / name, frame);
      stream.insert(stream.end(), frame.begin(), frame.end());
    };
    for (const auto& message : channel::test::inbound_samples()) add(message);
    // Garbage in the middle of the stream, with a magic of the wrong version, for resynchronisation.
    const std::string_view garbage = "not a frame XLUS\x02\x00"sv;
    stream.insert(stream.end(), garbage.begin(), garbage.end());
    for (const auto& message : channel::test::outbound_samples()) add(message);
    write_corpus_file(dir / "seed_stream.bin", stream);
  });
}
