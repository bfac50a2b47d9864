#include "model/sentencepiece_model.h"

#include <bit>
#include <cstring>

#include "core/error.h"

namespace channel {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

class ProtoReader {
 public:
  ProtoReader(std::span<const uint8_t> bytes, std::string_view origin) : bytes_(bytes), origin_(origin) {}

  bool done() const { return position_ == bytes_.size(); }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (done()) fail("{}: truncated varint at byte {}", origin_, position_);
      const uint8_t byte = bytes_[position_++];
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    fail("{}: varint longer than 10 bytes at byte {}", origin_, position_);
  }

  std::span<const uint8_t> take(uint64_t n) {
    if (n > bytes_.size() - position_) fail("{}: a field of {} bytes at byte {} runs past the end", origin_, n, position_);
    const auto taken = bytes_.subspan(position_, n);
    position_ += n;
    return taken;
  }

  void skip(uint32_t wire_type) {
    switch (wire_type) {
      case kVarint: varint(); return;
      case kFixed64: take(8); return;
      case kLengthDelimited: take(varint()); return;
      case kFixed32: take(4); return;
      default: fail("{}: unsupported protobuf wire type {} at byte {}", origin_, wire_type, position_);
    }
  }

 private:
  std::span<const uint8_t> bytes_;
  std::string_view origin_;
  size_t position_ = 0;
};

SentencePiece parse_piece(std::span<const uint8_t> bytes, std::string_view origin) {
  SentencePiece piece;
  ProtoReader reader(bytes, origin);
  while (!reader.done()) {
    const uint64_t tag = reader.varint();
    const auto field = tag >> 3;
    const auto wire = static_cast<uint32_t>(tag & 7);
    if (field == 1 && wire == kLengthDelimited) {
      const auto text = reader.take(reader.varint());
      piece.piece.assign(reinterpret_cast<const char*>(text.data()), text.size());
    } else if (field == 2 && wire == kFixed32) {
      uint32_t bits = 0;
      std::memcpy(&bits, reader.take(4).data(), 4);
      piece.score = std::bit_cast<float>(bits);
    } else if (field == 3 && wire == kVarint) {
      const uint64_t type = reader.varint();
      if (type < 1 || type > 6) fail("{}: piece '{}' has unknown type {}", origin, piece.piece, type);
      piece.type = static_cast<SentencePiece::Type>(type);
    } else {
      reader.skip(wire);
    }
  }
  return piece;
}

}  // namespace

std::vector<SentencePiece> parse_sentencepiece_model(std::span<const uint8_t> bytes, std::string_view origin) {
  static_assert(std::endian::native == std::endian::little, "protobuf fixed32 fields are little-endian");
  std::vector<SentencePiece> pieces;
  ProtoReader reader(bytes, origin);
  while (!reader.done()) {
    const uint64_t tag = reader.varint();
    const auto wire = static_cast<uint32_t>(tag & 7);
    if ((tag >> 3) == 1 && wire == kLengthDelimited) {
      pieces.push_back(parse_piece(reader.take(reader.varint()), origin));
    } else {
      reader.skip(wire);
    }
  }
  if (pieces.empty()) fail("{}: no SentencePiece pieces (is it a SentencePiece model?)", origin);
  return pieces;
}

}  // namespace channel
