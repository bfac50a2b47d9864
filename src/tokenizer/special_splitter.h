// Finds special tokens (control, user-defined and unknown tokens) written out inside the text to
// encode, as llama.cpp's tokenizer_st_partition does: token by token, longest text first, each
// occurrence (leftmost first, not overlapping) splits the plain text around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace channel {

// A special token found in the text, or a stretch of plain text between them.
struct TextFragment {
  int32_t token = -1;  // the special token, or -1 for plain text
  size_t begin = 0;    // plain text: the byte range [begin, end) of the input
  size_t end = 0;
};

class SpecialSplitter {
 public:
  explicit SpecialSplitter(const Vocab& vocab);

  // With parse_special off, only user-defined tokens are recognised (control and unknown tokens
  // are then plain text), as in llama.cpp.
  std::vector<TextFragment> split(std::string_view text, bool parse_special) const;

 private:
  struct Special {
    int32_t token;
    std::string text;
    bool needs_parse_special;
  };
  // A trie over the special texts: it tells in one pass which ones occur in a text, so the
  // token-by-token splitting only visits those (a Gemma 3 vocabulary has thousands of them).
  struct TrieNode {
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node
    int32_t special = -1;                               // index in specials_ of a text ending here
  };

  std::vector<bool> occurring(std::string_view text) const;

  std::vector<Special> specials_;  // llama.cpp's order: longest text first
  std::vector<TrieNode> trie_;     // trie_[0] is the root
};

}  // namespace channel
