// Streaming detokenization: characters split over byte tokens come out whole, ill-formed bytes
// as U+FFFD, and token rendering follows llama_token_to_piece.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_vocabs.h"
#include "tokenizer/detokenizer.h"

namespace channel {
namespace {

constexpr std::string_view kReplacement = "\xef\xbf\xbd";

// ids: 0 <bos> (control), 1 <eos> (control), 2 "▁hello", 3 <|channel> (user-defined),
// 4 <unused0> (unused), then the byte tokens.
Tokenizer sample_tokenizer() {
  std::vector<testing::TestToken> tokens = {{"<bos>", testing::kControl}, {"<eos>", testing::kControl},
                                            {"\xe2\x96\x81hello"}, {"<|channel>", testing::kUserDefined},
                                            {"<unused0>", testing::kUnused}};
  for (const testing::TestToken& byte : testing::byte_tokens()) {
    tokens.push_back(byte);
  }
  GgufWriter writer = testing::vocab_writer("llama", tokens);
  return testing::tokenizer_from(writer);
}
constexpr int32_t kByte = 5;  // id of <0x00>

// Each push's output, then the flush's.
std::vector<std::string> stream(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                                bool render_special = false) {
  Detokenizer detokenizer(tokenizer, render_special);
  std::vector<std::string> out;
  for (int32_t id : ids) {
    out.push_back(detokenizer.push(id));
  }
  out.push_back(detokenizer.flush());
  return out;
}

using Texts = std::vector<std::string>;

TEST(Detokenizer, HoldsBackSplitCharacters) {
  const Tokenizer tokenizer = sample_tokenizer();
  // U+2581 as three byte tokens, then U+1F999 as four.
  EXPECT_EQ(stream(tokenizer, {kByte + 0xE2, kByte + 0x96, kByte + 0x81}), (Texts{"", "", "\xe2\x96\x81", ""}));
  EXPECT_EQ(stream(tokenizer, {kByte + 0xF0, kByte + 0x9F, kByte + 0xA6, kByte + 0x99}),
            (Texts{"", "", "", "\xf0\x9f\xa6\x99", ""}));
  // A token that cannot continue the pending sequence ends it as U+FFFD and comes out itself.
  const std::string r(kReplacement);
  EXPECT_EQ(stream(tokenizer, {kByte + 0xF0, kByte + 0x9F, 2, kByte + 0xA6, kByte + 0x99}),
            (Texts{"", "", r + " hello", r, r, ""}));
}

TEST(Detokenizer, ReplacesIllFormedBytes) {
  const Tokenizer tokenizer = sample_tokenizer();
  const std::string r(kReplacement);
  EXPECT_EQ(stream(tokenizer, {kByte + 0xFF}), (Texts{r, ""}));
  EXPECT_EQ(stream(tokenizer, {kByte + 0x80, kByte + 'a'}), (Texts{r, "a", ""}));
  // Overlong and surrogate forms: every byte is its own ill-formed subpart.
  EXPECT_EQ(stream(tokenizer, {kByte + 0xC0, kByte + 0x80}), (Texts{r, r, ""}));
  EXPECT_EQ(stream(tokenizer, {kByte + 0xED, kByte + 0xA0, kByte + 0x80}), (Texts{"", r + r, r, ""}));
  // A sequence cut off by the end of the stream.
  EXPECT_EQ(stream(tokenizer, {kByte + 0xE2, kByte + 0x96}), (Texts{"", "", r}));
}

TEST(Detokenizer, RendersTokensAsLlamaCpp) {
  const Tokenizer tokenizer = sample_tokenizer();
  EXPECT_EQ(stream(tokenizer, {0, 2, 3, 4, 1}), (Texts{"", " hello", "<|channel>", "", "", ""}));
  EXPECT_EQ(stream(tokenizer, {0, 2, 1}, true), (Texts{"<bos>", " hello", "<eos>", ""}));
}

}  // namespace
}  // namespace channel
