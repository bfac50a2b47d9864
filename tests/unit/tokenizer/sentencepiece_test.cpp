// The "llama" SentencePiece path (Gemma 3 files) on small vocabularies.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "test_vocabs.h"

namespace channel {
namespace {

using testing::TestToken;

// ids: 0 <unk>, 1 <s>, 2 </s>, 3 "a", 4 "b", 5 "c", 6 "ab" (score -2), 7 "bc" (score -1),
// 8 "▁", 9 "▁a" (score -3), 10 <sep> (control), then the byte tokens.
std::vector<TestToken> pieces() {
  std::vector<TestToken> tokens = {
      {"<unk>", testing::kUnknown}, {"<s>", testing::kControl}, {"</s>", testing::kControl},
      {"a"}, {"b"}, {"c"}, {"ab", testing::kNormal, -2}, {"bc", testing::kNormal, -1},
      {"\xe2\x96\x81"}, {"\xe2\x96\x81" "a", testing::kNormal, -3}, {"<sep>", testing::kControl}};
  for (const TestToken& byte : testing::byte_tokens()) {
    tokens.push_back(byte);
  }
  return tokens;
}
constexpr int32_t kFirstByteToken = 11;

TEST(SentencePiece, MergesHighestScoreFirst) {
  const Tokenizer tokenizer = testing::tokenizer_from(testing::vocab_writer("llama", pieces()));
  // "bc" (-1) beats "ab" (-2); llama's default space prefix gives "▁a" first.
  EXPECT_EQ(tokenizer.encode("abc", false, false), (std::vector<int32_t>{9, 7}));
}

TEST(SentencePiece, AddsBosAndSpacePrefixAfterSpecials) {
  // Defaults of the "llama" model in llama.cpp: BOS 1, add_bos, add_space_prefix.
  const Tokenizer tokenizer = testing::tokenizer_from(testing::vocab_writer("llama", pieces()));
  EXPECT_EQ(tokenizer.encode("a<sep>a", true, true), (std::vector<int32_t>{1, 9, 10, 9}));
}

TEST(SentencePiece, GemmaThreeHasNoSpacePrefix) {
  GgufWriter writer = testing::vocab_writer("llama", pieces());
  writer.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  const Tokenizer tokenizer = testing::tokenizer_from(writer);
  EXPECT_EQ(tokenizer.encode("abc a", false, false), (std::vector<int32_t>{3, 7, 9}));
}

TEST(SentencePiece, FallsBackToBytesForUnknownAndInvalidText) {
  GgufWriter writer = testing::vocab_writer("llama", pieces());
  writer.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  const Tokenizer tokenizer = testing::tokenizer_from(writer);
  EXPECT_EQ(tokenizer.encode("\xc3\xa9\xff", false, false),
            (std::vector<int32_t>{kFirstByteToken + 0xC3, kFirstByteToken + 0xA9, kFirstByteToken + 0xFF}));
}

TEST(SentencePiece, RefusesBytesWithoutFallbackToken) {
  GgufWriter writer = testing::vocab_writer("llama", {{"<unk>", testing::kUnknown}, {"<s>"}, {"</s>"}, {"a"}});
  const Tokenizer tokenizer = testing::tokenizer_from(writer);
  EXPECT_THROW(tokenizer.encode("b", false, false), Error);
}

}  // namespace
}  // namespace channel
