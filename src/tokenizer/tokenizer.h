// Text to token ids and back, with the vocabulary of a GGUF file, giving the ids llama.cpp gives
// (llama_tokenize) for Gemma 4 ("gemma4" BPE) and Gemma 3 ("llama" SentencePiece) vocabularies.
//
// Invalid UTF-8 in the text to encode is handled as llama.cpp handles it:
//   - gemma4: each byte that does not start a well-formed sequence is read as U+FFFD (overlong
//     forms are decoded, surrogates kept); a four-byte sequence decoding beyond U+10FFFF (lead
//     0xF4 then 0x90 or more, or lead 0xF5..0xF7) makes encode throw channel::Error, where
//     llama.cpp throws too;
//   - llama: the bytes are encoded as they are, falling back to <0xXX> byte tokens.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.h"
#include "tokenizer/gemma4_bpe.h"
#include "tokenizer/special_splitter.h"
#include "tokenizer/vocab.h"

namespace channel {

class Tokenizer {
 public:
  // Reads the tokenizer.* metadata; throws channel::Error when it is missing, malformed or of an
  // unsupported model. The tokenizer keeps no reference to `file`.
  static Tokenizer from_gguf(const GgufFile& file);

  // add_special: start with BOS (and end with EOS) where the vocabulary asks for it, as
  // llama_tokenize's add_special. parse_special: recognise control tokens written in the text
  // (user-defined ones are recognised either way), as llama_tokenize's parse_special.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;

  int32_t n_vocab() const { return vocab_.size(); }
  int32_t bos() const { return vocab_.bos; }  // -1 if the vocabulary has none
  int32_t eos() const { return vocab_.eos; }  // -1 if the vocabulary has none

  // The token's text as the vocabulary stores it ("▁the", "<0x0A>", "<|turn>"); throws
  // channel::Error for an id outside the vocabulary.
  const std::string& token_text(int32_t id) const;
  // The bytes the token stands for, as llama_token_to_piece gives them: spaces unescaped, a byte
  // token's single byte (possibly part of a UTF-8 sequence), a user-defined token's text; control
  // and unknown tokens give their text with render_special and nothing otherwise.
  std::string token_piece(int32_t id, bool render_special) const;
  // The token whose text is exactly `text`, or -1.
  int32_t find_token(std::string_view text) const;

 private:
  Tokenizer(Vocab vocab, std::optional<Gemma4Bpe> bpe);

  Vocab vocab_;
  std::optional<Gemma4Bpe> bpe_;  // for TokenizerModel::kGemma4
  SpecialSplitter splitter_;
};

}  // namespace channel
