// The pieces of a SentencePiece model file (tokenizer.model: a serialized ModelProto), read with
// the few protobuf wire-format rules its fields need: ModelProto.pieces (field 1, repeated
// messages) with piece (1, string), score (2, float) and type (3, enum; NORMAL when absent).
// Other fields are skipped by their wire type. Every length is checked against the bytes left,
// so a corrupt file is one channel::Error naming it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace channel {

struct SentencePiece {
  // sentencepiece_model.proto's SentencePiece.Type values.
  enum class Type : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  std::string piece;
  float score = 0.0f;
  Type type = Type::kNormal;
};

std::vector<SentencePiece> parse_sentencepiece_model(std::span<const uint8_t> bytes, std::string_view origin);

}  // namespace channel
