// Special tokens written in text, found as llama.cpp's tokenizer_st_partition finds them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_vocabs.h"
#include "tokenizer/special_splitter.h"

namespace channel {
namespace {

// ids: 0 <x> (control), 1 <x><y> (user-defined), 2 <y> (user-defined), 3 "<", 4 "x", 5 ">",
// 6 <end_of_turn> (normal in the file; llama.cpp makes it a control token),
// 7 </s> and 8 <|tool_response> (llama.cpp makes </s> normal when <|tool_response> exists).
Vocab specials_vocab() {
  const std::vector<testing::TestToken> tokens = {
      {"<x>", testing::kControl}, {"<x><y>", testing::kUserDefined}, {"<y>", testing::kUserDefined},
      {"<"}, {"x"}, {">"}, {"<end_of_turn>"}, {"</s>", testing::kControl},
      {"<|tool_response>", testing::kUserDefined}};
  const std::vector<uint8_t> bytes = testing::vocab_writer("llama", tokens).to_bytes();
  return load_vocab(GgufFile::parse(bytes));
}

// Fragments written as "#id" for a token and the text for plain text.
std::vector<std::string> split(const std::string& text, bool parse_special) {
  std::vector<std::string> parts;
  for (const TextFragment& fragment : SpecialSplitter(specials_vocab()).split(text, parse_special)) {
    parts.push_back(fragment.token >= 0 ? fmt::format("#{}", fragment.token)
                                        : text.substr(fragment.begin, fragment.end - fragment.begin));
  }
  return parts;
}

using Parts = std::vector<std::string>;

TEST(SpecialSplitter, LongerTokensWin) {
  EXPECT_EQ(split("a<x><y>b<x>c", true), (Parts{"a", "#1", "b", "#0", "c"}));
  EXPECT_EQ(split("<x><x><y><y>", true), (Parts{"#0", "#1", "#2"}));
}

TEST(SpecialSplitter, ControlTokensNeedParseSpecial) {
  EXPECT_EQ(split("a<x>b<y>", false), (Parts{"a<x>b", "#2"}));
  EXPECT_EQ(split("<x>", true), (Parts{"#0"}));
}

TEST(SpecialSplitter, FollowsLlamaCppAttributeAdjustments) {
  EXPECT_EQ(split("<end_of_turn>", true), (Parts{"#6"}));
  EXPECT_EQ(split("<end_of_turn>", false), (Parts{"<end_of_turn>"}));
  EXPECT_EQ(split("</s>", true), (Parts{"</s>"}));  // normal again: plain text
  EXPECT_EQ(split("<|tool_response>", false), (Parts{"<|tool_response>"}));  // now also control
}

TEST(SpecialSplitter, LeavesPlainTextAlone) {
  EXPECT_EQ(split("", true), Parts{});
  EXPECT_EQ(split("no specials <x", true), (Parts{"no specials <x"}));
}

}  // namespace
}  // namespace channel
