// The SentencePiece tokenizer ("llama" in tokenizer.ggml.model, used by Gemma 3 GGUFs) as
// llama.cpp runs it: spaces become U+2581, then neighbouring pieces merge while their
// concatenation is a token, the highest-scoring one (then the leftmost) first. A piece left
// outside the vocabulary falls back to its bytes' <0xXX> tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace channel {

// Appends the tokens of `text`, a stretch of plain text between special tokens (with the space
// prefix already added where the vocabulary wants one). Throws channel::Error if a byte has no
// fallback token, where llama.cpp throws as well.
void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out);

}  // namespace channel
