#include "tokenizer/detokenizer.h"

#include <string_view>

namespace channel {

namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Length of the sequence a lead byte starts, 0 if it cannot start one (continuation bytes,
// 0xC0 and 0xC1 which only start overlong forms, 0xF5 and above which exceed U+10FFFF).
size_t strict_sequence_length(uint8_t lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

// Whether `byte` may follow `sequence` (a valid proper prefix). The second byte's range depends
// on the lead (Unicode table 3-7): it excludes overlong forms, surrogates and code points beyond
// U+10FFFF.
bool may_follow(std::string_view sequence, uint8_t byte) {
  uint8_t low = 0x80;
  uint8_t high = 0xBF;
  if (sequence.size() == 1) {
    switch (static_cast<uint8_t>(sequence[0])) {
      case 0xE0: low = 0xA0; break;
      case 0xED: high = 0x9F; break;
      case 0xF0: low = 0x90; break;
      case 0xF4: high = 0x8F; break;
      default: break;
    }
  }
  return byte >= low && byte <= high;
}

}  // namespace

Detokenizer::Detokenizer(const Tokenizer& tokenizer, bool render_special)
    : tokenizer_(&tokenizer), render_special_(render_special) {}

std::string Detokenizer::push(int32_t token) {
  std::string out;
  for (char c : tokenizer_->token_piece(token, render_special_)) {
    append_byte(static_cast<uint8_t>(c), out);
  }
  return out;
}

std::string Detokenizer::flush() {
  std::string out;
  if (!pending_.empty()) {
    out = kReplacement;
    pending_.clear();
  }
  return out;
}

void Detokenizer::append_byte(uint8_t byte, std::string& out) {
  if (!pending_.empty()) {
    if (may_follow(pending_, byte)) {
      pending_ += static_cast<char>(byte);
      if (pending_.size() == expected_) {
        out += pending_;
        pending_.clear();
      }
      return;
    }
    // The pending bytes cannot complete: they are one ill-formed subpart, and `byte` starts anew.
    out += kReplacement;
    pending_.clear();
  }
  expected_ = strict_sequence_length(byte);
  if (expected_ == 1) {
    out += static_cast<char>(byte);
  } else if (expected_ == 0) {
    out += kReplacement;
  } else {
    pending_ += static_cast<char>(byte);
  }
}

}  // namespace channel
