// Streaming token ids -> UTF-8 text. A character may be spread over several tokens (byte
// tokens <0xE2> <0x96> <0x81>, or a token ending in the middle of a sequence), so the bytes of an
// incomplete sequence are held back until it completes. Only well-formed UTF-8 comes out: a byte
// sequence that cannot become a character is replaced by U+FFFD, one per maximal ill-formed
// subpart (the Unicode recommended practice).
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace channel {

class Detokenizer {
 public:
  // render_special: whether control tokens come out as their text (see Tokenizer::token_piece).
  // The tokenizer must outlive the detokenizer.
  explicit Detokenizer(const Tokenizer& tokenizer, bool render_special = false);

  // The text this token completes (possibly empty).
  std::string push(int32_t token);
  // Ends the stream: U+FFFD for a sequence still incomplete, or nothing. The detokenizer can be
  // used again afterwards.
  std::string flush();

 private:
  void append_byte(uint8_t byte, std::string& out);

  const Tokenizer* tokenizer_;
  bool render_special_;
  std::string pending_;  // leading bytes of an incomplete sequence, all valid so far
  size_t expected_ = 0;  // length of the sequence pending_ starts
};

}  // namespace channel
