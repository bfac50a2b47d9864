// libFuzzer target: encodes arbitrary bytes and streams the ids back through the detokenizer.
// The only acceptable failure is a channel::Error from encode (a UTF-8 sequence beyond U+10FFFF
// with the Gemma 4 vocabulary); every id must lie in the vocabulary.
//
// The vocabulary comes from $CHANNEL_FUZZ_VOCAB, else the llama.cpp peer's Gemma 4 vocabulary
// (~/.cache/channel-peer/src/models/ggml-vocab-gemma-4.gguf). The first input byte picks the
// encode flags; the rest is the text.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "model/gguf.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace {

// libFuzzer's entry points take no context, so the tokenizer, built once at start-up, has to
// live at namespace scope; it is never modified after LLVMFuzzerInitialize.
std::unique_ptr<const channel::Tokenizer> tokenizer;

std::string vocab_path() {
  if (const char* path = std::getenv("CHANNEL_FUZZ_VOCAB")) {
    return path;
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "") + "/.cache/channel-peer/src/models/ggml-vocab-gemma-4.gguf";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const std::string path = vocab_path();
  try {
    const channel::GgufFile file = channel::GgufFile::open(path);
    tokenizer = std::make_unique<const channel::Tokenizer>(channel::Tokenizer::from_gguf(file));
  } catch (const channel::Error& error) {
    std::fprintf(stderr, "fuzz_tokenizer: cannot load the vocabulary %s: %s\n", path.c_str(), error.what());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const bool add_special = (data[0] & 1) != 0;
  const bool parse_special = (data[0] & 2) != 0;
  const bool render_special = (data[0] & 4) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  std::vector<int32_t> ids;
  try {
    ids = tokenizer->encode(text, add_special, parse_special);
  } catch (const channel::Error&) {
    return 0;
  }
  channel::Detokenizer detokenizer(*tokenizer, render_special);
  for (int32_t id : ids) {
    if (id < 0 || id >= tokenizer->n_vocab()) {
      std::fprintf(stderr, "fuzz_tokenizer: id %d outside the vocabulary\n", id);
      std::abort();
    }
    detokenizer.push(id);
  }
  detokenizer.flush();
  return 0;
}
