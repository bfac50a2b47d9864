#include "tokenizer/escapes.h"

#include <fmt/format.h>

#include <fstream>
#include <optional>

#include "core/error.h"

namespace channel {

namespace {

std::optional<int> hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return std::nullopt;
}

}  // namespace

std::string unescape_line(std::string_view line) {
  std::string text;
  text.reserve(line.size());
  for (size_t pos = 0; pos < line.size(); ++pos) {
    if (line[pos] != '\\') {
      text += line[pos];
      continue;
    }
    if (++pos == line.size()) {
      fail("line ends with a lone backslash (write \\\\ for a backslash)");
    }
    switch (line[pos]) {
      case 'n': text += '\n'; break;
      case 't': text += '\t'; break;
      case 'r': text += '\r'; break;
      case '\\': text += '\\'; break;
      case 'x': {
        const std::optional<int> high = pos + 1 < line.size() ? hex_value(line[pos + 1]) : std::nullopt;
        const std::optional<int> low = pos + 2 < line.size() ? hex_value(line[pos + 2]) : std::nullopt;
        if (!high || !low) {
          fail("escape \\x at column {} needs two hex digits", pos);
        }
        text += static_cast<char>(*high * 16 + *low);
        pos += 2;
        break;
      }
      default:
        fail("unknown escape \\{} at column {} (known: \\n \\t \\r \\\\ \\xHH)", line[pos], pos);
    }
  }
  return text;
}

std::string escape_line(std::string_view text) {
  std::string line;
  line.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '\n': line += "\\n"; break;
      case '\t': line += "\\t"; break;
      case '\r': line += "\\r"; break;
      case '\\': line += "\\\\"; break;
      default:
        if (byte < 0x20 || byte == 0x7F) {
          line += fmt::format("\\x{:02X}", byte);
        } else {
          line += c;
        }
    }
  }
  return line;
}

std::vector<std::string> read_lines_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    fail("cannot open lines file '{}'", path);
  }
  std::vector<std::string> texts;
  std::string line;
  for (size_t number = 1; std::getline(file, line); ++number) {
    try {
      texts.push_back(unescape_line(line));
    } catch (const Error& error) {
      fail("{}:{}: {}", path, number, error.what());
    }
  }
  if (file.bad()) {
    fail("error reading lines file '{}'", path);
  }
  return texts;
}

}  // namespace channel
