#include "tokenizer/utf8.h"

#include <optional>

#include "core/error.h"

namespace channel::utf8 {

namespace {

constexpr uint32_t kReplacement = 0xFFFD;

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

struct Decoded {
  uint32_t code_point;
  size_t length;
};

// llama.cpp's unicode_cpt_from_utf8: the lead byte's bits pick the length, the following bytes
// must be continuation bytes, and nothing else is checked.
std::optional<Decoded> decode(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
  const uint8_t lead = byte(0);
  if ((lead & 0x80) == 0) {
    return Decoded{lead, 1};
  }
  if ((lead & 0x40) == 0) {
    return std::nullopt;
  }
  const size_t length = (lead & 0x20) == 0 ? 2 : (lead & 0x10) == 0 ? 3 : (lead & 0x08) == 0 ? 4 : 0;
  if (length == 0 || pos + length > text.size()) {
    return std::nullopt;
  }
  uint32_t code_point = lead & (0x7F >> length);
  for (size_t i = 1; i < length; ++i) {
    if (!is_continuation(byte(i))) {
      return std::nullopt;
    }
    code_point = (code_point << 6) | (byte(i) & 0x3F);
  }
  return Decoded{code_point, length};
}

void encode(uint32_t code_point, std::string& out) {
  if (code_point <= 0x7F) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point <= 0x7FF) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point <= 0xFFFF) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point <= 0x10FFFF) {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    fail("invalid UTF-8 in text: a sequence decodes to U+{:X}, beyond U+10FFFF", code_point);
  }
}

}  // namespace

size_t sequence_length(uint8_t lead) {
  constexpr size_t kByHighNibble[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kByHighNibble[lead >> 4];
}

void append_reencoded(std::string_view text, std::string& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (const std::optional<Decoded> decoded = decode(text, pos)) {
      encode(decoded->code_point, out);
      pos += decoded->length;
    } else {
      encode(kReplacement, out);
      pos += 1;
    }
  }
}

}  // namespace channel::utf8
