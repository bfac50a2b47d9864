// The channel side of the tokenizer parity test, with the output format of llama_tokenize_lines:
// one line of space-separated ids per string of the lines file (add_special on, parse_special on
// unless --no-parse-special), or ERROR where encoding refuses the string.
//
// Usage: channel_tokenize_lines VOCAB.gguf LINES [--no-parse-special]
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/escapes.h"
#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::strcmp(argv[3], "--no-parse-special") != 0)) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf LINES [--no-parse-special]\n", argv[0]);
    return 2;
  }
  const bool parse_special = argc == 3;
  try {
    const channel::GgufFile file = channel::GgufFile::open(argv[1]);
    const channel::Tokenizer tokenizer = channel::Tokenizer::from_gguf(file);
    for (const std::string& text : channel::read_lines_file(argv[2])) {
      try {
        std::string line;
        for (int32_t id : tokenizer.encode(text, /*add_special=*/true, parse_special)) {
          line += line.empty() ? "" : " ";
          line += std::to_string(id);
        }
        std::printf("%s\n", line.c_str());
      } catch (const channel::Error&) {
        std::printf("ERROR\n");
      }
    }
  } catch (const channel::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
