// Vocabularies for the tokenizer tests: small ones written in memory with GgufWriter, and the
// Gemma 4 vocabulary of the llama.cpp peer (when installed).
#pragma once

#include "peer_vocab.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "tokenizer/tokenizer.h"

namespace channel::testing {

// GGUF token_type values.
inline constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

struct TestToken {
  std::string text;
  int32_t type = kNormal;
  float score = 0.0f;
};

// The 256 byte tokens <0x00> .. <0xFF>.
inline std::vector<TestToken> byte_tokens() {
  std::vector<TestToken> tokens;
  for (int byte = 0; byte < 256; ++byte) {
    tokens.push_back({fmt::format("<0x{:02X}>", byte), kByte});
  }
  return tokens;
}

// The metadata of a small vocabulary; `model` is tokenizer.ggml.model, `merges` is written only
// when not empty. Further keys can be set on the returned writer.
inline GgufWriter vocab_writer(const std::string& model, const std::vector<TestToken>& tokens,
                               const std::vector<std::string>& merges = {}) {
  std::vector<GgufValue> texts, types, scores, merge_values;
  for (const TestToken& token : tokens) {
    texts.push_back(GgufValue::string(token.text));
    types.push_back(GgufValue::i32(token.type));
    scores.push_back(GgufValue::f32(token.score));
  }
  for (const std::string& merge : merges) {
    merge_values.push_back(GgufValue::string(merge));
  }
  GgufWriter writer;
  writer.set("general.architecture", GgufValue::string("gemma4"));
  writer.set("tokenizer.ggml.model", GgufValue::string(model));
  writer.set("tokenizer.ggml.tokens", GgufValue::array(GgufValueType::STRING, std::move(texts)));
  writer.set("tokenizer.ggml.token_type", GgufValue::array(GgufValueType::INT32, std::move(types)));
  writer.set("tokenizer.ggml.scores", GgufValue::array(GgufValueType::FLOAT32, std::move(scores)));
  if (!merge_values.empty()) {
    writer.set("tokenizer.ggml.merges", GgufValue::array(GgufValueType::STRING, std::move(merge_values)));
  }
  return writer;
}

inline Tokenizer tokenizer_from(const GgufWriter& writer) {
  const std::vector<uint8_t> bytes = writer.to_bytes();
  return Tokenizer::from_gguf(GgufFile::parse(bytes, "test-vocab.gguf"));
}

// models/ggml-vocab-gemma-4.gguf of the llama.cpp peer ($CHANNEL_PEER_DIR, else
// ~/.cache/channel-peer), if it is there.
}  // namespace channel::testing
