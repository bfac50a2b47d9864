// The lines-file format of `channel tokenize --lines` and the parity tests.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "tokenizer/escapes.h"

namespace channel {
namespace {

TEST(Escapes, ReadsEscapes) {
  EXPECT_EQ(unescape_line("a\\nb\\tc\\rd\\\\e"), "a\nb\tc\rd\\e");
  EXPECT_EQ(unescape_line("\\x00\\xFf\\x41"), std::string("\x00\xff" "A", 3));
  EXPECT_EQ(unescape_line("plain <|turn> text"), "plain <|turn> text");
}

TEST(Escapes, RefusesBadEscapes) {
  EXPECT_THROW(unescape_line("a\\"), Error);
  EXPECT_THROW(unescape_line("\\q"), Error);
  EXPECT_THROW(unescape_line("\\x4"), Error);
  EXPECT_THROW(unescape_line("\\xZZ"), Error);
}

TEST(Escapes, EscapingRoundTripsEveryByte) {
  std::string all;
  for (int byte = 0; byte < 256; ++byte) {
    all += static_cast<char>(byte);
  }
  const std::string line = escape_line(all);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EXPECT_EQ(unescape_line(line), all);
}

TEST(Escapes, ReadsLinesFiles) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "channel_escapes_test.txt";
  {
    std::ofstream file(path, std::ios::binary);
    file << "first\\n\n\nthird";  // no newline after the last line
  }
  EXPECT_EQ(read_lines_file(path.string()), (std::vector<std::string>{"first\n", "", "third"}));
  {
    std::ofstream file(path, std::ios::binary);
    file << "ok\nbad \\q\n";
  }
  try {
    read_lines_file(path.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(":2: "), std::string::npos) << error.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace channel
