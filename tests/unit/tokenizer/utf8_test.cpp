// llama.cpp's lax UTF-8 reading, which the Gemma 4 tokenizer reproduces.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace channel {
namespace {

TEST(Utf8, ReencodesAsLlamaCpp) {
  const auto reencoded = [](std::string_view text) {
    std::string out;
    utf8::append_reencoded(text, out);
    return out;
  };
  const std::string r = "\xef\xbf\xbd";
  EXPECT_EQ(reencoded("caf\xc3\xa9 \xf0\x9f\xa6\x99"), "caf\xc3\xa9 \xf0\x9f\xa6\x99");
  EXPECT_EQ(reencoded("\x80\xff"), r + r);
  EXPECT_EQ(reencoded("\xe2\x82"), r + r);
  EXPECT_EQ(reencoded("\xc1\x81\xe0\x80\xaf"), "A/");  // overlong forms decode
  EXPECT_EQ(reencoded("\xed\xa0\x80"), "\xed\xa0\x80");  // surrogates stay
  EXPECT_THROW(reencoded("\xf4\x90\x80\x80"), Error);  // beyond U+10FFFF
  EXPECT_EQ(utf8::sequence_length(0xF8), 4u);
  EXPECT_EQ(utf8::sequence_length(0x80), 1u);
}

}  // namespace
}  // namespace channel
