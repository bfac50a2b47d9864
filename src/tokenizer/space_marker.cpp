#include "tokenizer/space_marker.h"

namespace channel {

std::string escape_spaces(std::string_view text) {
  std::string escaped;
  escaped.reserve(text.size() + text.size() / 2);
  for (char c : text) {
    if (c == ' ') {
      escaped += kSpaceMarker;
    } else {
      escaped += c;
    }
  }
  return escaped;
}

std::string unescape_spaces(std::string_view text) {
  std::string unescaped;
  unescaped.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    if (text.substr(pos, kSpaceMarker.size()) == kSpaceMarker) {
      unescaped += ' ';
      pos += kSpaceMarker.size();
    } else {
      unescaped += text[pos++];
    }
  }
  return unescaped;
}

}  // namespace channel
