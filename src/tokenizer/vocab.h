// The vocabulary of a GGUF file as llama.cpp's llama_vocab loads it: token texts, scores,
// attributes (after llama.cpp's name-based adjustments), special ids and the add_* flags.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "model/gguf.h"
#include "tokenizer/string_table.h"

namespace channel {

// tokenizer.ggml.model values this engine reads.
enum class TokenizerModel {
  kGemma4,         // "gemma4": BPE over merges, spaces written as U+2581, <0xXX> byte fallback
  kSentencePiece,  // "llama": score-driven SentencePiece merges (Gemma 3), <0xXX> byte fallback
};

// Attribute bits with the meaning of llama.cpp's llama_token_attr. Tokens of type "unused" or
// "undefined" get none of them: llama.cpp gives such tokens no role in encoding and renders
// them as nothing.
namespace token_attr {
inline constexpr uint8_t kUnknown = 1 << 0;
inline constexpr uint8_t kNormal = 1 << 1;
inline constexpr uint8_t kControl = 1 << 2;
inline constexpr uint8_t kUserDefined = 1 << 3;
inline constexpr uint8_t kByte = 1 << 4;
}  // namespace token_attr

struct Vocab {
  TokenizerModel model = TokenizerModel::kGemma4;
  StringTable texts;           // token id -> text as stored in the file (ids are dense)
  std::vector<float> scores;   // SentencePiece merge priority (0 when the file has none)
  std::vector<uint8_t> attrs;  // token_attr bits
  // Token of each byte's fallback piece "<0xXX>", or -1 where the vocabulary has none.
  std::array<int32_t, 256> byte_tokens{};
  int32_t bos = -1;  // -1: none
  int32_t eos = -1;
  bool add_bos = false;           // encode(add_special) starts with bos
  bool add_eos = false;           // encode(add_special) ends with eos
  bool add_space_prefix = false;  // SentencePiece: a space before text that follows a special

  int32_t size() const { return static_cast<int32_t>(texts.size()); }
};

// Reads the tokenizer.* metadata; throws channel::Error on a missing or malformed key or an
// unsupported tokenizer model.
Vocab load_vocab(const GgufFile& file);

}  // namespace channel
