// The "gemma4" BPE path on small vocabularies: merge order, newline runs, byte fallback and
// invalid UTF-8.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "test_vocabs.h"

namespace channel {
namespace {

using testing::TestToken;

// ids: 0 <bos>, 1 <eos>, 2 "a", 3 "b", 4 "c", 5 "ab", 6 "bc", 7 "abc", 8 "▁", 9 "▁a", 10 "\n",
// 11 "\n\n", 12 "\xef\xbf\xbd" (U+FFFD), 13.. the byte tokens.
std::vector<TestToken> letters() {
  std::vector<TestToken> tokens = {{"<bos>", testing::kControl}, {"<eos>", testing::kControl},
                                   {"a"}, {"b"}, {"c"}, {"ab"}, {"bc"}, {"abc"}, {"\xe2\x96\x81"},
                                   {"\xe2\x96\x81" "a"}, {"\n"}, {"\n\n"}, {"\xef\xbf\xbd"}};
  for (const TestToken& byte : testing::byte_tokens()) {
    tokens.push_back(byte);
  }
  return tokens;
}
constexpr int32_t kFirstByteToken = 13;

Tokenizer with_merges(const std::vector<std::string>& merges) {
  GgufWriter writer = testing::vocab_writer("gemma4", letters(), merges);
  writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(0));
  writer.set("tokenizer.ggml.eos_token_id", GgufValue::u32(1));
  return testing::tokenizer_from(writer);
}

TEST(Gemma4Bpe, AppliesLowestRankFirst) {
  EXPECT_EQ(with_merges({"a b", "ab c"}).encode("abc", false, false), (std::vector<int32_t>{7}));
  // "b c" outranks "a b": "a" + "bc", and no merge joins those.
  EXPECT_EQ(with_merges({"b c", "a b", "ab c"}).encode("abc", false, false), (std::vector<int32_t>{2, 6}));
}

TEST(Gemma4Bpe, EscapesSpacesAndAddsBos) {
  const Tokenizer tokenizer = with_merges({"\xe2\x96\x81 a"});
  EXPECT_EQ(tokenizer.encode(" a a", true, false), (std::vector<int32_t>{0, 9, 9}));
}

TEST(Gemma4Bpe, KeepsNewlineRunsThatAreTokens) {
  const Tokenizer tokenizer = with_merges({"a b"});
  EXPECT_EQ(tokenizer.encode("ab\n\nab\n\n\n", false, false), (std::vector<int32_t>{5, 11, 5, 10, 10, 10}));
}

TEST(Gemma4Bpe, FallsBackToByteTokens) {
  const Tokenizer tokenizer = with_merges({"a b"});
  // "é" (C3 A9) has no token: one byte token per byte.
  EXPECT_EQ(tokenizer.encode("a\xc3\xa9", false, false),
            (std::vector<int32_t>{2, kFirstByteToken + 0xC3, kFirstByteToken + 0xA9}));
}

TEST(Gemma4Bpe, ReadsInvalidUtf8AsReplacementCharacters) {
  const Tokenizer tokenizer = with_merges({"a b"});
  // A lone continuation byte and a cut-off sequence each become U+FFFD.
  EXPECT_EQ(tokenizer.encode("\x80" "a\xe2\x82", false, false), (std::vector<int32_t>{12, 2, 12, 12}));
  // Overlong forms decode (to "a" here), as in llama.cpp.
  EXPECT_EQ(tokenizer.encode("\xc1\xa1", false, false), (std::vector<int32_t>{2}));
  EXPECT_THROW(tokenizer.encode("a\xf4\x90\x80\x80", false, false), Error);
}

TEST(Gemma4Bpe, RequiresMerges) {
  EXPECT_THROW(testing::tokenizer_from(testing::vocab_writer("gemma4", letters())), Error);
}

}  // namespace
}  // namespace channel
