// Parses the real Gemma 4 vocabulary GGUF shipped with the llama.cpp peer (262144 tokens and
// 514906 merges), when it is installed: $CHANNEL_PEER_DIR or ~/.cache/channel-peer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "gguf_samples.h"
#include "model/gguf.h"

namespace channel {
namespace {

std::filesystem::path vocab_path() {
  const char* peer = std::getenv("CHANNEL_PEER_DIR");
  const char* home = std::getenv("HOME");
  const std::filesystem::path dir =
      peer != nullptr ? std::filesystem::path(peer)
                      : std::filesystem::path(home != nullptr ? home : "") / ".cache/channel-peer";
  return dir / "src/models/ggml-vocab-gemma-4.gguf";
}

TEST(GgufVocab, ParsesTheGemma4Vocabulary) {
  const auto path = vocab_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (run scripts/install-peer.sh)";

  const auto start = std::chrono::steady_clock::now();
  const GgufFile file = GgufFile::open(path.string());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("parse_ms", static_cast<int>(seconds * 1000));
  EXPECT_LT(seconds, 1.0);  // about 0.03 s on a 2-core machine; a regression to per-value copies shows here

  EXPECT_EQ(file.require("tokenizer.ggml.model").as_string("model"), "gemma4");
  const auto& tokens = file.require("tokenizer.ggml.tokens").as_array("tokens");
  EXPECT_EQ(tokens.element_type, GgufValueType::STRING);
  ASSERT_EQ(tokens.elements.size(), 262144u);
  EXPECT_EQ(tokens.elements[105].as_string("token 105"), "<|turn>");
  EXPECT_EQ(tokens.elements[106].as_string("token 106"), "<turn|>");
  EXPECT_EQ(file.require("tokenizer.ggml.merges").as_array("merges").elements.size(), 514906u);
  EXPECT_EQ(file.require("tokenizer.ggml.scores").as_array("scores").elements.size(), 262144u);
  EXPECT_EQ(file.require("tokenizer.ggml.token_type").as_array("types").elements.size(), 262144u);
  EXPECT_TRUE(file.tensors().empty());
}

TEST(GgufVocab, CopiesThroughTheWriterUnchanged) {
  const auto path = vocab_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found (run scripts/install-peer.sh)";

  const GgufFile file = GgufFile::open(path.string());
  const auto bytes = test::rewrite(file).to_bytes();
  const GgufFile copy = GgufFile::parse(bytes, "copy");
  ASSERT_EQ(copy.metadata().size(), file.metadata().size());
  for (size_t i = 0; i < file.metadata().size(); ++i) {
    EXPECT_EQ(copy.metadata()[i].first, file.metadata()[i].first);
    EXPECT_TRUE(copy.metadata()[i].second == file.metadata()[i].second) << file.metadata()[i].first;
  }
}

}  // namespace
}  // namespace channel
