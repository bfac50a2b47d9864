// The llama.cpp side of the tokenizer parity test: tokenizes every string of a lines file (see
// src/tokenizer/escapes.h) with llama_tokenize (add_special on, parse_special on unless
// --no-parse-special) and prints one line of space-separated ids per string, or ERROR where
// llama.cpp throws.
//
// Usage: llama_tokenize_lines VOCAB.gguf LINES [--no-parse-special]
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "llama.h"
#include "tokenizer/escapes.h"

namespace {

void log_errors_only(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) {
    std::fputs(text, stderr);
  }
}

std::vector<llama_token> tokenize(const llama_vocab* vocab, const std::string& text, bool parse_special) {
  std::vector<llama_token> ids(text.size() + 8);
  int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                             static_cast<int32_t>(ids.size()), /*add_special=*/true, parse_special);
  if (n < 0) {
    ids.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), ids.data(),
                       static_cast<int32_t>(ids.size()), true, parse_special);
  }
  ids.resize(static_cast<size_t>(n));
  return ids;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4 || (argc == 4 && std::strcmp(argv[3], "--no-parse-special") != 0)) {
    std::fprintf(stderr, "usage: %s VOCAB.gguf LINES [--no-parse-special]\n", argv[0]);
    return 2;
  }
  const bool parse_special = argc == 3;

  llama_log_set(log_errors_only, nullptr);
  ggml_backend_load_all_from_path(CHANNEL_PEER_LIBDIR);
  llama_backend_init();
  llama_model_params params = llama_model_default_params();
  params.vocab_only = true;
  llama_model* model = llama_model_load_from_file(argv[1], params);
  if (model == nullptr) {
    std::fprintf(stderr, "llama.cpp could not load %s\n", argv[1]);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(model);

  int status = 0;
  try {
    for (const std::string& text : channel::read_lines_file(argv[2])) {
      try {
        std::string line;
        for (llama_token id : tokenize(vocab, text, parse_special)) {
          line += line.empty() ? "" : " ";
          line += std::to_string(id);
        }
        std::printf("%s\n", line.c_str());
      } catch (const std::exception&) {
        std::printf("ERROR\n");  // llama.cpp throws on some invalid UTF-8; channel must refuse it too
      }
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    status = 1;
  }
  llama_model_free(model);
  llama_backend_free();
  return status;
}
