// Reading tokenizer metadata, and refusing metadata llama.cpp could not use either.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "test_vocabs.h"

namespace channel {
namespace {

Vocab load(const GgufWriter& writer) {
  const std::vector<uint8_t> bytes = writer.to_bytes();
  return load_vocab(GgufFile::parse(bytes));
}

TEST(Vocab, ReadsSpecialIdsAndFlags) {
  GgufWriter writer = testing::vocab_writer("llama", {{"<pad>"}, {"<eos>"}, {"<bos>"}, {"a"}});
  writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(2));
  writer.set("tokenizer.ggml.eos_token_id", GgufValue::u32(1));
  writer.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  const Vocab vocab = load(writer);
  EXPECT_EQ(vocab.model, TokenizerModel::kSentencePiece);
  EXPECT_EQ(vocab.bos, 2);
  EXPECT_EQ(vocab.eos, 1);
  EXPECT_TRUE(vocab.add_bos);
  EXPECT_FALSE(vocab.add_eos);
  EXPECT_FALSE(vocab.add_space_prefix);
}

TEST(Vocab, KeepsDefaultIdForOutOfRangeKey) {
  GgufWriter writer = testing::vocab_writer("llama", {{"<unk>"}, {"<s>"}, {"</s>"}});
  writer.set("tokenizer.ggml.bos_token_id", GgufValue::u32(99));
  EXPECT_EQ(load(writer).bos, 1);  // llama.cpp's SentencePiece default
}

TEST(Vocab, RefusesWhatLlamaCppRefuses) {
  EXPECT_THROW(load(testing::vocab_writer("gpt2", {{"a"}})), Error);
  EXPECT_THROW(load(testing::vocab_writer("llama", {{"a"}, {"a"}})), Error);  // repeated text
  GgufWriter short_types = testing::vocab_writer("llama", {{"a"}, {"b"}});
  short_types.set("tokenizer.ggml.token_type",
                  GgufValue::array(GgufValueType::INT32, {GgufValue::i32(testing::kNormal)}));
  EXPECT_THROW(load(short_types), Error);
  GgufWriter no_model = testing::vocab_writer("llama", {{"a"}});
  no_model.set("tokenizer.ggml.model", GgufValue::u32(1));
  EXPECT_THROW(load(no_model), Error);
}

TEST(Vocab, RenamesEmptyTokens) {
  const Vocab vocab = load(testing::vocab_writer("llama", {{"a"}, {""}}));
  EXPECT_EQ(vocab.texts.text(1), "[EMPTY_1]");
}

}  // namespace
}  // namespace channel
