// Small string helpers shared by the modules.
#pragma once

#include <string_view>

namespace channel {

inline constexpr std::string_view kAsciiSpaces = " \t\r\n";

// `s` without leading and trailing characters from `characters`.
constexpr std::string_view trim(std::string_view s, std::string_view characters = kAsciiSpaces) {
  const size_t first = s.find_first_not_of(characters);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(characters) - first + 1);
}

}  // namespace channel
