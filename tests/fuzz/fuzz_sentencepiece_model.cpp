// libFuzzer target for the SentencePiece model reader (a Gemma 3 directory's tokenizer.model).
// Any input must either parse or throw channel::Error. Whatever parses must have at least one
// piece, each of a known type, and must read back the same when its pieces are written out again
// in the minimal encoding (so the reader kept every piece's text, score and type and skipped only
// other fields).
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz/fuzz_properties.h"
#include "model/sentencepiece_model.h"

namespace {

using channel::SentencePiece;
using channel::fuzz::violated;

void put_varint(std::vector<uint8_t>& out, uint64_t value) {
  do {
    out.push_back(static_cast<uint8_t>((value & 0x7f) | (value > 0x7f ? 0x80 : 0)));
    value >>= 7;
  } while (value != 0);
}

void put_bytes(std::vector<uint8_t>& out, int field, const std::vector<uint8_t>& payload) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  put_varint(out, payload.size());
  out.insert(out.end(), payload.begin(), payload.end());
}

std::vector<uint8_t> encode(const std::vector<SentencePiece>& pieces) {
  std::vector<uint8_t> model;
  for (const SentencePiece& p : pieces) {
    std::vector<uint8_t> piece;
    put_bytes(piece, 1, std::vector<uint8_t>(p.piece.begin(), p.piece.end()));
    put_varint(piece, 2 << 3 | 5);
    const auto bits = std::bit_cast<uint32_t>(p.score);
    for (int b = 0; b < 4; ++b) piece.push_back(static_cast<uint8_t>(bits >> (8 * b)));
    put_varint(piece, 3 << 3);
    put_varint(piece, static_cast<uint64_t>(p.type));
    put_bytes(model, 1, piece);
  }
  return model;
}

bool same(const std::vector<SentencePiece>& a, const std::vector<SentencePiece>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].piece != b[i].piece || a[i].type != b[i].type ||
        std::bit_cast<uint32_t>(a[i].score) != std::bit_cast<uint32_t>(b[i].score)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<SentencePiece> pieces;
  try {
    pieces = channel::parse_sentencepiece_model({data, size}, "<fuzz>");
  } catch (const channel::Error&) {
    return 0;
  }
  if (pieces.empty()) violated("a parsed model has pieces");
  for (const SentencePiece& p : pieces) {
    const auto type = static_cast<int32_t>(p.type);
    if (type < 1 || type > 6) violated("every piece has a known type");
  }
  const std::vector<uint8_t> again = encode(pieces);
  if (!same(channel::parse_sentencepiece_model(again, "<re-encoded>"), pieces)) {
    violated("re-encoded pieces read back the same");
  }
  return 0;
}
