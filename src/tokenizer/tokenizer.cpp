#include "tokenizer/tokenizer.h"

#include <cstdlib>
#include <utility>

#include "core/error.h"
#include "tokenizer/sentencepiece.h"
#include "tokenizer/space_marker.h"

namespace channel {

namespace {

// The byte of a byte token "<0xXX>", read as llama.cpp's token_to_byte reads it (strtol over
// the two characters after "<0x").
char byte_of(const std::string& text) {
  const std::string digits = text.size() > 3 ? text.substr(3, 2) : std::string();
  return static_cast<char>(std::strtol(digits.c_str(), nullptr, 16));
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufFile& file) {
  Vocab vocab = load_vocab(file);
  std::optional<Gemma4Bpe> bpe;
  if (vocab.model == TokenizerModel::kGemma4) {
    bpe.emplace(file, vocab);
  }
  return Tokenizer(std::move(vocab), std::move(bpe));
}

Tokenizer::Tokenizer(Vocab vocab, std::optional<Gemma4Bpe> bpe)
    : vocab_(std::move(vocab)), bpe_(std::move(bpe)), splitter_(vocab_) {}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) {
    if (vocab_.bos < 0) {
      fail("the vocabulary asks for a BOS token but has none");
    }
    out.push_back(vocab_.bos);
  }

  // SentencePiece vocabularies with add_space_prefix put a space before text that starts the
  // input or follows a special token.
  bool after_special = true;
  for (const TextFragment& fragment : splitter_.split(text, parse_special)) {
    if (fragment.token >= 0) {
      out.push_back(fragment.token);
      after_special = true;
      continue;
    }
    const std::string_view plain = text.substr(fragment.begin, fragment.end - fragment.begin);
    if (bpe_) {
      bpe_->encode(vocab_, plain, out);
    } else {
      std::string prefixed;
      if (vocab_.add_space_prefix && after_special) {
        prefixed += ' ';
      }
      prefixed += plain;
      encode_sentencepiece(vocab_, prefixed, out);
    }
    after_special = false;
  }

  if (add_special && vocab_.add_eos) {
    if (vocab_.eos < 0) {
      fail("the vocabulary asks for an EOS token but has none");
    }
    out.push_back(vocab_.eos);
  }
  return out;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_.size()) {
    fail("token id {} is outside the vocabulary of {} tokens", id, vocab_.size());
  }
  return vocab_.texts.text(id);
}

std::string Tokenizer::token_piece(int32_t id, bool render_special) const {
  using namespace token_attr;
  const std::string& text = token_text(id);
  const uint8_t attrs = vocab_.attrs[static_cast<size_t>(id)];
  if (attrs & (kControl | kUnknown)) {
    return render_special ? text : std::string();
  }
  if (attrs & kUserDefined) {
    return text;
  }
  if (attrs & kNormal) {
    return unescape_spaces(text);
  }
  if (attrs & kByte) {
    return std::string(1, byte_of(text));
  }
  return {};  // unused and undefined tokens render as nothing
}

int32_t Tokenizer::find_token(std::string_view text) const { return vocab_.texts.find(text); }

}  // namespace channel
