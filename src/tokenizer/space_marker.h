// Gemma vocabularies write a space as U+2581 (LOWER ONE EIGHTH BLOCK, "▁"), SentencePiece style:
// text is escaped before the merges and token texts are unescaped when rendered.
#pragma once

#include <string>
#include <string_view>

namespace channel {

inline constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

// Every ' ' replaced by the marker.
std::string escape_spaces(std::string_view text);
// Every marker replaced by ' '.
std::string unescape_spaces(std::string_view text);

}  // namespace channel
