// The Gemma 4 vocabulary of the llama.cpp peer: llama.cpp's own reference cases
// (models/ggml-vocab-gemma-4.gguf.inp/.out, checked by its test-tokenizer-0 with add_special and
// parse_special off), special tokens written in text, and encoding speed.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "test_vocabs.h"
#include "tokenizer/detokenizer.h"

namespace channel {
namespace {

class Gemma4Vocab : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = testing::peer_gemma4_vocab();
    if (!path) {
      GTEST_SKIP() << "llama.cpp peer not installed (scripts/install-peer.sh)";
    }
    path_ = *path;
    const GgufFile file = GgufFile::open(path_.string());
    tokenizer_.emplace(Tokenizer::from_gguf(file));
  }

  std::filesystem::path path_;
  std::optional<Tokenizer> tokenizer_;
};

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// test-tokenizer-0's format: inputs separated by "\n__ggml_vocab_test__\n", one line of ids each.
std::vector<std::string> split_inputs(const std::string& raw) {
  constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(kSeparator, pos);
    inputs.push_back(raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    pos = next == std::string::npos ? raw.size() : next + kSeparator.size();
  }
  return inputs;
}

std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  for (int32_t id; in >> id;) {
    ids.push_back(id);
  }
  return ids;
}

TEST_F(Gemma4Vocab, MatchesLlamaCppReferenceCases) {
  const std::vector<std::string> inputs = split_inputs(read_file(path_.string() + ".inp"));
  std::istringstream outputs(read_file(path_.string() + ".out"));
  std::vector<std::vector<int32_t>> expected;
  for (std::string line; std::getline(outputs, line);) {
    expected.push_back(parse_ids(line));
  }
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 30u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(tokenizer_->encode(inputs[i], false, false), expected[i]) << "input: '" << inputs[i] << "'";
  }
}

TEST_F(Gemma4Vocab, ReadsSpecialIds) {
  EXPECT_EQ(tokenizer_->n_vocab(), 262144);
  EXPECT_EQ(tokenizer_->bos(), 2);
  EXPECT_EQ(tokenizer_->eos(), 1);
  EXPECT_EQ(tokenizer_->find_token("<|turn>"), 105);
  EXPECT_EQ(tokenizer_->find_token("<turn|>"), 106);
  EXPECT_EQ(tokenizer_->find_token("\n"), 107);
  EXPECT_EQ(tokenizer_->find_token("no such token"), -1);
  EXPECT_EQ(tokenizer_->token_text(100), "<|channel>");
  // Gemma 4 files say add_bos_token; llama.cpp adds BOS for Gemma 4 in any case.
  EXPECT_EQ(tokenizer_->encode("", true, true), std::vector<int32_t>{2});
}

TEST_F(Gemma4Vocab, RecognisesSpecialTokensInText) {
  const std::string prompt = "<|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>";
  const std::vector<int32_t> ids = tokenizer_->encode(prompt, true, true);
  ASSERT_GE(ids.size(), 8u);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 105);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 105), 2);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 106), 1);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 100), ids.end());
  EXPECT_EQ(ids.back(), 101);

  // Without parse_special control tokens are plain text; user-defined ones (<|channel>) are
  // still recognised, except <|tool_response>, which llama.cpp makes a control token too.
  const std::vector<int32_t> plain = tokenizer_->encode("<|turn><|channel><|tool_response>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 105), 0);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 100), 1);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), 50), 0);
  EXPECT_EQ(tokenizer_->encode("<|tool_response>", false, true), std::vector<int32_t>{50});
}

TEST_F(Gemma4Vocab, DetokenizesWhatItEncodes) {
  const std::string text =
      "Hello  world!\n\n\tcafé naïve — 日本語 🦙 👨‍👩‍👧‍👦 𠮷 \xe2\x80\x8b \xef\xbf\xbf tail  ";
  const std::vector<int32_t> ids = tokenizer_->encode(text, false, false);
  Detokenizer detokenizer(*tokenizer_);
  std::string decoded;
  for (int32_t id : ids) {
    decoded += detokenizer.push(id);
  }
  decoded += detokenizer.flush();
  EXPECT_EQ(decoded, text);
}

}  // namespace
}  // namespace channel
