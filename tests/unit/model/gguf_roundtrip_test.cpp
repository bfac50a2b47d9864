// GGUF writer -> reader round trips: values of every type, tensors of every supported type,
// alignment, files on disk, and the writer's own validation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>

#include "core/error.h"
#include "gguf_samples.h"
#include "model/gguf.h"
#include "model/quantize.h"

namespace channel {
namespace {

using test::array_of;

GgufFile parse(const std::vector<uint8_t>& bytes) { return GgufFile::parse(bytes, "test.gguf"); }

// A value with any type and data, consistent or not: what a caller could build by hand.
GgufValue raw_value(GgufValueType type, decltype(GgufValue::data) data) {
  GgufValue value;
  value.type = type;
  value.data = std::move(data);
  return value;
}

// Runs `body` and returns the channel::Error message it throws ("" if it throws none).
template <typename Body>
std::string error_of(Body&& body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(GgufRoundTrip, EveryScalarTypeKeepsItsTypeAndValue) {
  auto sample = test::every_scalar_sample();
  const auto bytes = sample.writer.to_bytes();
  const GgufFile file = parse(bytes);
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), 32u);
  EXPECT_TRUE(file.tensors().empty());
  const std::vector<std::pair<std::string, GgufValue>> expected = {
      {"test.u8", GgufValue::u8(255)},
      {"test.i8", GgufValue::i8(-128)},
      {"test.u16", GgufValue::u16(65535)},
      {"test.i16", GgufValue::i16(-32768)},
      {"test.u32", GgufValue::u32(std::numeric_limits<uint32_t>::max())},
      {"test.i32", GgufValue::i32(std::numeric_limits<int32_t>::min())},
      {"test.u64", GgufValue::u64(std::numeric_limits<uint64_t>::max())},
      {"test.i64", GgufValue::i64(std::numeric_limits<int64_t>::min())},
      {"test.f32", GgufValue::f32(-1.5e-7f)},
      {"test.f64", GgufValue::f64(3.141592653589793)},
      {"test.bool_true", GgufValue::boolean(true)},
      {"test.bool_false", GgufValue::boolean(false)},
      {"test.string", GgufValue::string("Gemma \xe2\x9c\x93")},
      {"test.empty_string", GgufValue::string("")},
      {"test.string_with_nul", GgufValue::string(std::string("a\0b", 3))},
  };
  ASSERT_EQ(file.metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(file.metadata()[i].first, expected[i].first);
    EXPECT_EQ(file.metadata()[i].second, expected[i].second) << expected[i].first;
  }
  EXPECT_EQ(file.require("test.i8").as_int("i8"), -128);
  EXPECT_EQ(file.require("test.u32").as_int("u32"), 4294967295);
  EXPECT_EQ(file.require("test.f32").as_float("f32"), -1.5e-7f);
  EXPECT_EQ(file.require("test.u16").as_float("u16"), 65535.0);
  EXPECT_TRUE(file.require("test.bool_true").as_bool("bool"));
  EXPECT_EQ(file.require("test.string_with_nul").as_string("s"), std::string_view("a\0b", 3));
}

TEST(GgufRoundTrip, ArraysNestedArraysAndStringArrays) {
  auto sample = test::arrays_sample();
  const auto bytes = sample.writer.to_bytes();
  const GgufFile file = parse(bytes);

  const auto& strings = file.require("test.strings").as_array("strings");
  EXPECT_EQ(strings.element_type, GgufValueType::STRING);
  ASSERT_EQ(strings.elements.size(), 3u);
  EXPECT_EQ(strings.elements[0].as_string("0"), "<bos>");
  EXPECT_EQ(strings.elements[1].as_string("1"), "");
  EXPECT_EQ(strings.elements[2].as_string("2"), "<|turn>");

  EXPECT_EQ(file.require("test.u8s"),
            array_of(GgufValueType::UINT8, {GgufValue::u8(0), GgufValue::u8(7), GgufValue::u8(255)}));
  EXPECT_EQ(file.require("test.i16s"),
            array_of(GgufValueType::INT16, {GgufValue::i16(-2), GgufValue::i16(300)}));
  EXPECT_EQ(file.require("test.u64s"), array_of(GgufValueType::UINT64, {GgufValue::u64(1ull << 40)}));
  EXPECT_EQ(file.require("test.f32s"),
            array_of(GgufValueType::FLOAT32, {GgufValue::f32(0.25f), GgufValue::f32(-0.0f)}));
  EXPECT_EQ(file.require("test.f64s"), array_of(GgufValueType::FLOAT64, {GgufValue::f64(1e300)}));
  EXPECT_EQ(file.require("test.bools"),
            array_of(GgufValueType::BOOL, {GgufValue::boolean(true), GgufValue::boolean(false)}));
  EXPECT_EQ(file.require("test.empty"), array_of(GgufValueType::UINT32, {}));

  const auto& nested = file.require("test.nested").as_array("nested");
  EXPECT_EQ(nested.element_type, GgufValueType::ARRAY);
  ASSERT_EQ(nested.elements.size(), 2u);
  EXPECT_EQ(nested.elements[0], array_of(GgufValueType::INT32, {GgufValue::i32(1), GgufValue::i32(2)}));
  EXPECT_TRUE(nested.elements[1].as_array("inner").elements.empty());

  const GgufValue* level = &file.require("test.four_deep");
  for (int depth = 0; depth < 3; ++depth) level = &level->as_array("level").elements.at(0);
  EXPECT_EQ(level->as_array("deepest").elements.at(0).as_string("leaf"), "deep");
}

TEST(GgufRoundTrip, TensorsOfEverySupportedType) {
  auto sample = test::tensors_sample();
  const auto bytes = sample.writer.to_bytes();
  const GgufFile file = parse(bytes);
  ASSERT_EQ(file.tensors().size(), 5u);
  const auto values = test::sample_values(64 * 3);
  for (const auto& tensor : file.tensors()) {
    SCOPED_TRACE(tensor.name);
    EXPECT_EQ(tensor.dims, (std::vector<int64_t>{64, 3}));
    EXPECT_EQ(tensor.n_elements(), 192);
    EXPECT_EQ(tensor.offset % file.alignment(), 0u);
    const auto expected = quantize_row(tensor.type, values);
    EXPECT_EQ(tensor.n_bytes, expected.size());
    const auto data = file.tensor_bytes(tensor);
    EXPECT_EQ(std::vector<uint8_t>(data.begin(), data.end()), expected);
    EXPECT_EQ(static_cast<size_t>(data.data() - bytes.data()) % file.alignment(), 0u);
  }
  EXPECT_EQ(file.require_tensor("blk.0.attn_q.weight").type, GgmlType::Q4_0);
  EXPECT_EQ(file.find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, RewritingAParsedSampleGivesTheSameBytes) {
  for (auto& sample : test::gguf_samples()) {
    SCOPED_TRACE(sample.name);
    const auto bytes = sample.writer.to_bytes();
    const GgufFile file = parse(bytes);
    EXPECT_EQ(test::rewrite(file).to_bytes(), bytes);
  }
}

TEST(GgufRoundTrip, GeneralAlignmentSetsTheAlignment) {
  auto sample = test::aligned64_sample();
  const auto bytes = sample.writer.to_bytes();
  const GgufFile file = parse(bytes);
  EXPECT_EQ(file.alignment(), 64u);
  ASSERT_EQ(file.tensors().size(), 2u);
  EXPECT_EQ(file.tensors()[0].offset, 0u);
  EXPECT_EQ(file.tensors()[1].offset, 64u);  // 12 bytes of "a", padded to 64
  EXPECT_EQ(file.tensors()[1].dims, (std::vector<int64_t>{5, 1, 1, 2}));
  EXPECT_EQ(bytes.size() % 64, 0u);
  EXPECT_EQ((file.tensor_bytes(file.tensors()[0]).data() - bytes.data()) % 64, 0);
}

TEST(GgufRoundTrip, AFileWithoutTensorsIsNotPadded) {
  // Found by fuzz_gguf: a legal but huge alignment once padded a 100-byte file to 2 GiB.
  GgufWriter writer;
  writer.set("general.alignment", GgufValue::u32(0x80000000u));
  const auto bytes = writer.to_bytes();
  EXPECT_LT(bytes.size(), 100u);
  EXPECT_EQ(parse(bytes).alignment(), 0x80000000u);
}

TEST(GgufRoundTrip, VersionTwoFilesAreRead) {
  auto sample = test::vocab_sample();
  auto bytes = sample.writer.to_bytes();
  bytes[4] = 2;  // the version field; v2 and v3 differ only in allowing big-endian files
  EXPECT_EQ(parse(bytes).version(), 2u);
}

TEST(GgufRoundTrip, WritesAndOpensAFile) {
  const auto path = (std::filesystem::temp_directory_path() / "channel_gguf_roundtrip_test.gguf").string();
  auto sample = test::tensors_sample();
  sample.writer.write(path);
  {
    const GgufFile file = GgufFile::open(path);
    EXPECT_EQ(file.origin(), path);
    EXPECT_EQ(file.require("general.architecture").as_string("arch"), "gemma3");
    EXPECT_EQ(file.tensors().size(), 5u);
  }
  std::filesystem::remove(path);
  EXPECT_NE(error_of([&] { GgufFile::open(path); }).find("cannot open"), std::string::npos);
  EXPECT_NE(error_of([&] { sample.writer.write("/nonexistent-dir/x.gguf"); }).find("cannot create"),
            std::string::npos);
}

TEST(GgufRoundTrip, WriterKeepsItsOwnCopyOfParsedValues) {
  auto sample = test::vocab_sample();
  auto bytes = sample.writer.to_bytes();
  const auto original = bytes;
  GgufWriter copy;
  {
    const GgufFile file = parse(bytes);
    copy.set("tokenizer.ggml.tokens", file.require("tokenizer.ggml.tokens"));
    copy.set("tokenizer.ggml.model", file.require("tokenizer.ggml.model"));
  }
  std::fill(bytes.begin(), bytes.end(), 0xAA);  // the parsed strings pointed in here
  const auto copied = copy.to_bytes();
  const GgufFile reread = parse(copied);
  const GgufFile source = parse(original);
  EXPECT_EQ(reread.require("tokenizer.ggml.tokens"), source.require("tokenizer.ggml.tokens"));
  EXPECT_EQ(reread.require("tokenizer.ggml.model").as_string("model"), "gemma4");
}

TEST(GgufRoundTrip, SetReplacesAKeyInPlace) {
  GgufWriter writer;
  writer.set("a", GgufValue::u32(1));
  writer.set("b", GgufValue::u32(2));
  writer.set("a", GgufValue::string("one"));
  const auto bytes = writer.to_bytes();
  const GgufFile file = parse(bytes);
  ASSERT_EQ(file.metadata().size(), 2u);
  EXPECT_EQ(file.metadata()[0].first, "a");
  EXPECT_EQ(file.metadata()[0].second.as_string("a"), "one");
}

TEST(GgufLookups, MissingKeysAndTensorsNameTheFile) {
  auto sample = test::tensors_sample();
  const auto bytes = sample.writer.to_bytes();
  const GgufFile file = parse(bytes);
  EXPECT_EQ(file.find("nope"), nullptr);
  EXPECT_EQ(error_of([&] { file.require("gemma3.block_count"); }),
            "test.gguf: missing metadata key 'gemma3.block_count'");
  EXPECT_EQ(error_of([&] { file.require_tensor("output.weight"); }),
            "test.gguf: missing tensor 'output.weight'");
}

TEST(GgufValueAccess, TypeMismatchesAndOverflowAreErrors) {
  EXPECT_EQ(error_of([] { GgufValue::string("x").as_int("key 'a'"); }),
            "key 'a' must be an integer, not string");
  EXPECT_EQ(error_of([] { GgufValue::u64(1ull << 63).as_int("key 'b'"); }),
            "key 'b' is 9223372036854775808, which is too large");
  EXPECT_EQ(error_of([] { GgufValue::u32(1).as_bool("key 'c'"); }), "key 'c' must be a bool, not u32");
  EXPECT_EQ(error_of([] { GgufValue::f32(1).as_string("key 'd'"); }), "key 'd' must be a string, not f32");
  EXPECT_EQ(error_of([] { GgufValue::boolean(true).as_array("key 'e'"); }),
            "key 'e' must be an array, not bool");
  EXPECT_EQ(error_of([] { GgufValue::boolean(true).as_float("key 'f'"); }),
            "key 'f' must be a number, not bool");
  EXPECT_EQ(GgufValue::i8(-5).as_float("g"), -5.0);
}

TEST(GgufValueAccess, EqualityComparesEncodings) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(GgufValue::f32(nan), GgufValue::f32(nan));
  EXPECT_NE(GgufValue::f32(0.0f), GgufValue::f32(-0.0f));
  EXPECT_NE(GgufValue::u32(1), GgufValue::u64(1));
  EXPECT_NE(GgufValue::u32(1), GgufValue::i32(1));
  EXPECT_EQ(GgufValue::string("ab"), GgufValue::string("ab"));
  EXPECT_NE(array_of(GgufValueType::INT32, {}), array_of(GgufValueType::UINT32, {}));
}

TEST(GgufWriter, RefusesWhatTheReaderWouldRefuse) {
  const auto f32_data = [](int64_t n) { return quantize_row(GgmlType::F32, test::sample_values(n)); };
  GgufWriter writer;
  writer.add_tensor("w", GgmlType::F32, {4}, f32_data(4));
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"empty metadata key", [&] { writer.set("", GgufValue::u32(1)); }},
      {"(at most 65535)", [&] { writer.set(std::string(65536, 'k'), GgufValue::u32(1)); }},
      {"general.alignment is 12, which is not a nonzero multiple of 8",
       [&] { writer.set("general.alignment", GgufValue::u32(12)); }},
      {"general.alignment must be a u32, not u64",
       [&] { writer.set("general.alignment", GgufValue::u64(64)); }},
      {"value of 'k' is 256, which does not fit in u8",
       [&] { writer.set("k", raw_value(GgufValueType::UINT8, uint64_t{256})); }},
      {"value of 'k' is -129, which does not fit in i8",
       [&] { writer.set("k", raw_value(GgufValueType::INT8, int64_t{-129})); }},
      {"value of 'k' is declared u32 but holds data of another type",
       [&] { writer.set("k", raw_value(GgufValueType::UINT32, int64_t{1})); }},
      {"value of 'k' has unknown type 13",
       [&] { writer.set("k", raw_value(static_cast<GgufValueType>(13), uint64_t{0})); }},
      {"value of 'k' is an array of i32 holding a u32",
       [&] { writer.set("k", array_of(GgufValueType::INT32, {GgufValue::u32(1)})); }},
      {"value of 'k' is a null array",
       [&] { writer.set("k", raw_value(GgufValueType::ARRAY, std::shared_ptr<GgufArray>())); }},
      {"value of 'k' nests arrays more than 4 deep",
       [&] {
         GgufValue value = array_of(GgufValueType::INT32, {});
         for (int i = 0; i < 4; ++i) value = array_of(GgufValueType::ARRAY, {value});
         writer.set("k", value);
       }},
      {"duplicate tensor 'w'", [&] { writer.add_tensor("w", GgmlType::F32, {4}, f32_data(4)); }},
      {"empty tensor name", [&] { writer.add_tensor("", GgmlType::F32, {4}, f32_data(4)); }},
      {"(at most 63)", [&] { writer.add_tensor(std::string(64, 'n'), GgmlType::F32, {4}, f32_data(4)); }},
      {"tensor 'x' has 5 dimensions (must be 1 to 4)",
       [&] {
         writer.add_tensor("x", GgmlType::F32, {1, 1, 1, 1, 4}, f32_data(4));
       }},
      {"tensor 'x' dimension 1 is 0",
       [&] {
         writer.add_tensor("x", GgmlType::F32, {4, 0}, {});
       }},
      {"tensor 'x' of type q8_0 has rows of 16 values, not a multiple of its block size 32",
       [&] { writer.add_tensor("x", GgmlType::Q8_0, {16}, {}); }},
      {"tensor 'x' has type q4_K, which Channel does not support",
       [&] { writer.add_tensor("x", static_cast<GgmlType>(12), {256}, {}); }},
      {"tensor 'x' has 12 bytes of data, but its shape and type need 16",
       [&] { writer.add_tensor("x", GgmlType::F32, {4}, f32_data(3)); }},
  };
  for (const auto& [expected, action] : cases) {
    EXPECT_NE(error_of(action).find(expected), std::string::npos)
        << expected << "\ngot: " << error_of(action);
  }
  // None of the refused calls changed the writer.
  const auto bytes = writer.to_bytes();
  const GgufFile file = parse(bytes);
  EXPECT_TRUE(file.metadata().empty());
  EXPECT_EQ(file.tensors().size(), 1u);
  EXPECT_EQ(file.alignment(), 32u);
}

}  // namespace
}  // namespace channel
