// The lines-file format of `channel tokenize --lines` and the tokenizer parity tests: one string
// per line, so characters that would break a line are written as escapes:
//   \n  newline     \t  tab     \r  carriage return     \\  backslash
//   \xHH  the byte with hex value HH (for control characters and invalid UTF-8)
// Any other byte stands for itself. A final line needs no newline after it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace channel {

// The string a line stands for; throws channel::Error for an unknown or cut-off escape.
std::string unescape_line(std::string_view line);
// A line that unescape_line reads back as `text`: backslash, newline, tab and carriage return
// escaped by name, other control bytes (below 0x20, and 0x7F) as \xHH.
std::string escape_line(std::string_view text);
// Every line of the file, unescaped; errors name the file and the line number.
std::vector<std::string> read_lines_file(const std::string& path);

}  // namespace channel
