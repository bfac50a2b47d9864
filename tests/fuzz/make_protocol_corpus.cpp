// Writes the seed corpus of fuzz_protocol: one file per sample frame of every opcode (the unit
// tests' samples, both directions), and one stream of all of them with garbage in the middle.
// Usage: make_protocol_corpus DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/frame.h"
#include "unit/protocol/protocol_samples.h"

namespace {

void write_file(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  using namespace channel::protocol;
  using namespace std::string_view_literals;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    std::vector<uint8_t> stream;
    uint16_t msg_id = 1;
    auto add = [&](const auto& message) {
      const auto frame = encode_frame(msg_id, message);
      const auto name = "seed_" + opcode_name(opcode_of(message)) + "_" + std::to_string(msg_id++) + ".bin";
      write_file(dir / name, frame);
      stream.insert(stream.end(), frame.begin(), frame.end());
    };
    for (const auto& message : channel::test::inbound_samples()) add(message);
    // Garbage in the middle of the stream, with a magic of the wrong version, for resynchronisation.
    const std::string_view garbage = "not a frame XLUS\x02\x00"sv;
    stream.insert(stream.end(), garbage.begin(), garbage.end());
    for (const auto& message : channel::test::outbound_samples()) add(message);
    write_file(dir / "seed_stream.bin", stream);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "make_protocol_corpus: %s\n", error.what());
    return 1;
  }
  return 0;
}
