// Small valid GGUF files built with the writer: every value type, nested arrays, a tokenizer-like
// vocabulary and tensors of every supported type. The unit tests round-trip and corrupt them, and
// tests/fuzz/make_gguf_corpus.cpp writes them out as the fuzzers' seed corpus. Also the rewrite
// used by the tests and the fuzzer to check that whatever the reader accepts writes back.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/quantize.h"

namespace channel::test {

struct GgufSample {
  std::string name;
  GgufWriter writer;
};

// `n` values that are neither all equal nor all of one sign, so quantized blocks have real scales.
inline std::vector<float> sample_values(int64_t n) {
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    values[static_cast<size_t>(i)] = std::sin(0.37f * static_cast<float>(i)) * 2.5f;
  return values;
}

inline GgufValue array_of(GgufValueType type, std::vector<GgufValue> elements) {
  return GgufValue::array(type, std::move(elements));
}

inline GgufSample every_scalar_sample() {
  GgufSample sample{"every_scalar", {}};
  auto& w = sample.writer;
  w.set("test.u8", GgufValue::u8(255));
  w.set("test.i8", GgufValue::i8(-128));
  w.set("test.u16", GgufValue::u16(65535));
  w.set("test.i16", GgufValue::i16(-32768));
  w.set("test.u32", GgufValue::u32(std::numeric_limits<uint32_t>::max()));
  w.set("test.i32", GgufValue::i32(std::numeric_limits<int32_t>::min()));
  w.set("test.u64", GgufValue::u64(std::numeric_limits<uint64_t>::max()));
  w.set("test.i64", GgufValue::i64(std::numeric_limits<int64_t>::min()));
  w.set("test.f32", GgufValue::f32(-1.5e-7f));
  w.set("test.f64", GgufValue::f64(3.141592653589793));
  w.set("test.bool_true", GgufValue::boolean(true));
  w.set("test.bool_false", GgufValue::boolean(false));
  w.set("test.string", GgufValue::string("Gemma \xe2\x9c\x93"));
  w.set("test.empty_string", GgufValue::string(""));
  w.set("test.string_with_nul", GgufValue::string(std::string("a\0b", 3)));
  return sample;
}

inline GgufSample arrays_sample() {
  GgufSample sample{"arrays", {}};
  auto& w = sample.writer;
  w.set("test.u8s", array_of(GgufValueType::UINT8, {GgufValue::u8(0), GgufValue::u8(7), GgufValue::u8(255)}));
  w.set("test.i16s", array_of(GgufValueType::INT16, {GgufValue::i16(-2), GgufValue::i16(300)}));
  w.set("test.i32s", array_of(GgufValueType::INT32, {GgufValue::i32(8), GgufValue::i32(-1)}));
  w.set("test.u64s", array_of(GgufValueType::UINT64, {GgufValue::u64(1ull << 40)}));
  w.set("test.f32s", array_of(GgufValueType::FLOAT32, {GgufValue::f32(0.25f), GgufValue::f32(-0.0f)}));
  w.set("test.f64s", array_of(GgufValueType::FLOAT64, {GgufValue::f64(1e300)}));
  w.set("test.bools", array_of(GgufValueType::BOOL, {GgufValue::boolean(true), GgufValue::boolean(false)}));
  w.set("test.strings", array_of(GgufValueType::STRING, {GgufValue::string("<bos>"), GgufValue::string(""),
                                                         GgufValue::string("<|turn>")}));
  w.set("test.empty", array_of(GgufValueType::UINT32, {}));
  w.set("test.nested", array_of(GgufValueType::ARRAY,
                                {array_of(GgufValueType::INT32, {GgufValue::i32(1), GgufValue::i32(2)}),
                                 array_of(GgufValueType::INT32, {})}));
  // Four levels of arrays, the most the reader accepts.
  GgufValue deepest = array_of(GgufValueType::STRING, {GgufValue::string("deep")});
  for (int level = 0; level < 3; ++level) deepest = array_of(GgufValueType::ARRAY, {deepest});
  w.set("test.four_deep", deepest);
  return sample;
}

inline GgufSample vocab_sample() {
  GgufSample sample{"vocab", {}};
  auto& w = sample.writer;
  const std::vector<std::string> tokens = {"<pad>",           "<eos>", "<bos>", "<unk>",
                                           "\xe2\x96\x81the", "a",     "b",     "ab"};
  std::vector<GgufValue> token_values, scores, types;
  for (size_t i = 0; i < tokens.size(); ++i) {
    token_values.push_back(GgufValue::string(tokens[i]));
    scores.push_back(GgufValue::f32(-static_cast<float>(i)));
    types.push_back(GgufValue::i32(i < 4 ? 3 : 1));
  }
  w.set("general.architecture", GgufValue::string("gemma4"));
  w.set("tokenizer.ggml.model", GgufValue::string("gemma4"));
  w.set("tokenizer.ggml.tokens", array_of(GgufValueType::STRING, std::move(token_values)));
  w.set("tokenizer.ggml.scores", array_of(GgufValueType::FLOAT32, std::move(scores)));
  w.set("tokenizer.ggml.token_type", array_of(GgufValueType::INT32, std::move(types)));
  w.set("tokenizer.ggml.merges", array_of(GgufValueType::STRING, {GgufValue::string("a b")}));
  w.set("tokenizer.ggml.bos_token_id", GgufValue::u32(2));
  w.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
  return sample;
}

// One tensor of each supported type; rows of 64 values so the quantized ones hold two blocks.
inline GgufSample tensors_sample() {
  GgufSample sample{"tensors", {}};
  auto& w = sample.writer;
  w.set("general.architecture", GgufValue::string("gemma3"));
  const std::vector<std::pair<std::string, GgmlType>> tensors = {{"token_embd.weight", GgmlType::Q8_0},
                                                                 {"blk.0.attn_q.weight", GgmlType::Q4_0},
                                                                 {"blk.0.attn_norm.weight", GgmlType::F32},
                                                                 {"blk.0.ffn_up.weight", GgmlType::F16},
                                                                 {"output_norm.weight", GgmlType::BF16}};
  for (const auto& [name, type] : tensors)
    w.add_tensor(name, type, {64, 3}, quantize_row(type, sample_values(64 * 3)));
  return sample;
}

// A wider alignment and tensors whose sizes are not multiples of it, so padding shows.
inline GgufSample aligned64_sample() {
  GgufSample sample{"aligned64", {}};
  auto& w = sample.writer;
  w.set("general.alignment", GgufValue::u32(64));
  w.add_tensor("a", GgmlType::F32, {3}, quantize_row(GgmlType::F32, sample_values(3)));
  w.add_tensor("b", GgmlType::F16, {5, 1, 1, 2}, quantize_row(GgmlType::F16, sample_values(10)));
  return sample;
}

inline std::vector<GgufSample> gguf_samples() {
  std::vector<GgufSample> samples;
  samples.push_back({"empty", {}});
  samples.push_back(every_scalar_sample());
  samples.push_back(arrays_sample());
  samples.push_back(vocab_sample());
  samples.push_back(tensors_sample());
  samples.push_back(aligned64_sample());
  return samples;
}

// A writer holding every key and tensor of `file`, in file order. Its output is the same file,
// byte for byte, whenever `file` was itself written by GgufWriter.
inline GgufWriter rewrite(const GgufFile& file) {
  GgufWriter writer;
  for (const auto& [key, value] : file.metadata()) writer.set(key, value);
  for (const auto& tensor : file.tensors()) {
    const auto bytes = file.tensor_bytes(tensor);
    writer.add_tensor(tensor.name, tensor.type, tensor.dims, {bytes.begin(), bytes.end()});
  }
  return writer;
}

}  // namespace channel::test
