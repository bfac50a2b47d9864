#include "tokenizer/sentencepiece.h"

#include <fmt/format.h>

#include <optional>
#include <string>

#include "core/error.h"
#include "tokenizer/piece_merger.h"
#include "tokenizer/space_marker.h"

namespace channel {

namespace {

// llama.cpp's byte_to_token for SentencePiece: the <0xXX> token, else a token that is the byte
// itself, else an error.
int32_t byte_token(const Vocab& vocab, uint8_t byte) {
  if (const int32_t token = vocab.byte_tokens[byte]; token >= 0) {
    return token;
  }
  const char text = static_cast<char>(byte);
  if (const int32_t token = vocab.texts.find(std::string_view(&text, 1)); token >= 0) {
    return token;
  }
  fail("the vocabulary has no token for byte 0x{:02X}", byte);
}

}  // namespace

void encode_sentencepiece(const Vocab& vocab, std::string_view text, std::vector<int32_t>& out) {
  const std::string escaped = escape_spaces(text);
  const std::string_view all = escaped;
  std::vector<Piece> pieces = split_characters(all);
  const auto text_of = [&](int32_t index) {
    const Piece& piece = pieces[static_cast<size_t>(index)];
    return all.substr(piece.begin, piece.length);
  };

  merge_pieces<float>(
      pieces,
      [&](int32_t left, int32_t right) -> std::optional<float> {
        const Piece& l = pieces[static_cast<size_t>(left)];
        const size_t length = l.length + pieces[static_cast<size_t>(right)].length;
        const int32_t token = vocab.texts.find(all.substr(l.begin, length));
        return token >= 0 ? std::optional<float>(vocab.scores[static_cast<size_t>(token)]) : std::nullopt;
      },
      [](int32_t) {});

  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].length == 0) {
      continue;
    }
    const std::string_view piece = text_of(static_cast<int32_t>(i));
    if (const int32_t token = vocab.texts.find(piece); token >= 0) {
      out.push_back(token);
    } else {
      for (char byte : piece) {
        out.push_back(byte_token(vocab, static_cast<uint8_t>(byte)));
      }
    }
  }
}

}  // namespace channel
