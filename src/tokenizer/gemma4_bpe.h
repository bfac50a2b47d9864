// Gemma 4's tokenizer ("gemma4" in tokenizer.ggml.model) as llama.cpp runs it: spaces become
// U+2581, the text is cut into runs of newlines and runs of everything else, and within each run
// BPE applies the ranked merges of tokenizer.ggml.merges, lowest rank (then leftmost) first. A
// piece that ends up outside the vocabulary falls back to its bytes' <0xXX> tokens.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/gguf.h"
#include "tokenizer/string_table.h"
#include "tokenizer/vocab.h"

namespace channel {

class Gemma4Bpe {
 public:
  // Reads tokenizer.ggml.merges ("left right" strings, in rank order). `vocab` is the file's
  // vocabulary, and the one to pass to encode.
  Gemma4Bpe(const GgufFile& file, const Vocab& vocab);

  // Appends the tokens of `text`, a stretch of plain text between special tokens. Throws
  // channel::Error where llama.cpp's UTF-8 decoding throws (see utf8::append_reencoded).
  void encode(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) const;

 private:
  // Merge operands are identified by the id of their text: a token id, or n_vocab + an index
  // into extra_ for operands that are not tokens themselves; -1 for a text that is neither.
  int32_t symbol_id(const Vocab& vocab, std::string_view text) const;
  int32_t rank(int32_t left_id, int32_t right_id) const;  // -1 if the pair does not merge
  void add_rank(int32_t left_id, int32_t right_id, int32_t rank);
  void encode_run(const Vocab& vocab, std::string_view run, std::vector<int32_t>& out) const;

  // A slot of the open-addressing map (left id, right id) -> rank.
  struct PairSlot {
    uint64_t key;  // left id << 32 | right id, or kEmptyKey
    int32_t rank;
  };

  StringTable extra_;
  std::vector<PairSlot> pairs_;  // size is a power of two
};

}  // namespace channel
