// The GGUF reader on broken and hostile input: every case must end in one channel::Error whose
// single-line message starts with the origin and says what is wrong, never in a crash or a huge
// allocation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string_view>

#include "core/error.h"
#include "gguf_samples.h"
#include "model/gguf.h"

namespace channel {
namespace {

constexpr std::string_view kOrigin = "corrupt.gguf";
constexpr uint64_t kHuge = uint64_t{1} << 60;
constexpr uint32_t kU8 = 0, kU32 = 4, kBool = 7, kString = 8, kArray = 9, kU64 = 10;
constexpr uint32_t kF32 = 0, kQ8_0 = 8, kQ4_K = 12;

// Hand-encoded GGUF bytes, independent of GgufWriter, for files the writer refuses to write.
class RawGguf {
 public:
  explicit RawGguf(uint64_t n_tensors, uint64_t n_metadata, uint32_t version = 3) {
    raw("GGUF");
    u32(version);
    u64(n_tensors);
    u64(n_metadata);
  }
  RawGguf& raw(std::string_view text) { return append(text.data(), text.size()); }
  RawGguf& u8(uint8_t v) { return put(v); }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& str(std::string_view text) { return u64(text.size()).raw(text); }
  RawGguf& key(std::string_view key, uint32_t type) { return str(key).u32(type); }
  RawGguf& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t dim : dims) u64(dim);
    return u32(type).u64(offset);
  }
  // Pads to the default alignment, then appends `n` bytes of tensor data.
  RawGguf& data(size_t n) {
    while (bytes_.size() % 32 != 0) bytes_.push_back(0);
    bytes_.resize(bytes_.size() + n, 0);
    return *this;
  }
  std::vector<uint8_t> bytes() const { return bytes_; }

 private:
  template <typename T>
  RawGguf& put(T value) {
    return append(&value, sizeof(T));
  }
  // resize + memcpy: GCC 12 warns falsely (-Wstringop-overflow) on vector::insert here.
  RawGguf& append(const void* data, size_t n) {
    const size_t old_size = bytes_.size();
    bytes_.resize(old_size + n);
    if (n > 0) std::memcpy(bytes_.data() + old_size, data, n);
    return *this;
  }
  std::vector<uint8_t> bytes_;
};

// The message of the channel::Error that parsing throws; fails the test if it throws none.
std::string parse_error(const std::vector<uint8_t>& bytes) {
  try {
    GgufFile::parse(bytes, kOrigin);
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "parsed without error";
  return "";
}

void expect_well_formed(const std::string& message) {
  EXPECT_EQ(message.rfind(std::string(kOrigin) + ": ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

struct CorruptCase {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string expected;  // a part of the message
};

std::vector<uint8_t> first_bytes(std::vector<uint8_t> bytes, size_t n) {
  bytes.resize(n);
  return bytes;
}

std::vector<CorruptCase> corrupt_cases() {
  // One f32 tensor of 4 values (16 bytes) named "w" at `offset`, and `data_bytes` of data.
  const auto one_tensor = [](uint64_t offset, size_t data_bytes) {
    return RawGguf(1, 0).tensor("w", {4}, kF32, offset).data(data_bytes).bytes();
  };
  RawGguf nested(0, 1);
  nested.key("deep", kArray);
  for (int level = 0; level < 4; ++level) nested.u32(kArray).u64(1);
  nested.u32(kU8).u64(1).u8(0);

  return {
      {"empty file", {}, "truncated file: magic needs 4 bytes at offset 0, file has 0"},
      {"bad magic", {'G', 'G', 'M', 'L', 3, 0, 0, 0}, "not a GGUF file"},
      {"version 1", RawGguf(0, 0, 1).bytes(), "GGUF version 1 is not supported"},
      {"version 0", RawGguf(0, 0, 0).bytes(), "GGUF version 0 is not supported"},
      {"big-endian", RawGguf(0, 0, 0x03000000).bytes(), "big-endian GGUF (version field reads 0x03000000)"},
      {"future version", RawGguf(0, 0, 4).bytes(), "GGUF version 4 is newer"},
      {"header cut short", first_bytes(RawGguf(0, 0).bytes(), 12),
       "truncated file: tensor count needs 8 bytes at offset 8, file has 12"},
      {"huge tensor count", RawGguf(kHuge, 0).bytes(),
       "truncated file: the tensor count claims 1152921504606846976 entries of at least 24 bytes, but only 0 "
       "bytes follow offset 24"},
      {"huge metadata count", RawGguf(0, kHuge).bytes(),
       "the metadata count claims 1152921504606846976 entries"},
      {"huge key length", RawGguf(0, 1).u64(kHuge).u64(0).bytes(),
       "key of metadata entry 0 is 1152921504606846976 bytes long (at most 65535)"},
      {"key longer than 65535 bytes", RawGguf(0, 1).u64(65536).u64(0).bytes(), "(at most 65535)"},
      {"key beyond the end", RawGguf(0, 1).u64(100).raw("general").bytes(),
       "truncated file: key of metadata entry 0 needs 100 bytes at offset 32, file has 39"},
      {"empty key", RawGguf(0, 1).str("").u32(kU8).u8(1).bytes(), "empty metadata key"},
      {"huge string value", RawGguf(0, 1).key("general.name", kString).u64(kHuge).raw("abc").bytes(),
       "truncated file: metadata value of 'general.name' needs 1152921504606846976 bytes at offset 56, file "
       "has 59"},
      {"huge array", RawGguf(0, 1).key("a", kArray).u32(kU8).u64(kHuge).u8(1).bytes(),
       "metadata value of 'a' claims 1152921504606846976 entries of at least 1 bytes"},
      {"huge string array", RawGguf(0, 1).key("a", kArray).u32(kString).u64(uint64_t{1} << 40).u64(0).bytes(),
       "metadata value of 'a' claims 1099511627776 entries of at least 8 bytes"},
      {"huge array of arrays", RawGguf(0, 1).key("a", kArray).u32(kArray).u64(kHuge).bytes(),
       "metadata value of 'a' claims 1152921504606846976 entries of at least 12 bytes"},
      {"truncated u32 value", RawGguf(0, 1).key("n", kU32).u8(1).bytes(),
       "truncated file: metadata value of 'n' needs 4 bytes at offset 37, file has 38"},
      {"duplicate key", RawGguf(0, 2).key("a", kU8).u8(1).key("a", kU8).u8(2).bytes(),
       "duplicate metadata key 'a'"},
      {"control characters in a key", RawGguf(0, 2).key("a\nb", kU8).u8(1).key("a\nb", kU8).u8(2).bytes(),
       "duplicate metadata key 'a\\x0ab'"},
      {"long key in a message", RawGguf(0, 1).key(std::string(100, 'k'), kBool).u8(2).bytes(),
       "metadata value of '" + std::string(64, 'k') + "'... has bool byte 2"},
      {"unknown value type", RawGguf(0, 1).key("a", 13).u8(0).bytes(),
       "metadata value of 'a' has unknown value type 13"},
      {"unknown array element type", RawGguf(0, 1).key("a", kArray).u32(99).u64(0).bytes(),
       "metadata value of 'a' is an array of unknown value type 99"},
      {"bool byte 2", RawGguf(0, 1).key("b", kBool).u8(2).bytes(),
       "metadata value of 'b' has bool byte 2 (must be 0 or 1)"},
      {"bool byte 255 in an array", RawGguf(0, 1).key("b", kArray).u32(kBool).u64(2).u8(1).u8(255).bytes(),
       "has bool byte 255"},
      {"arrays nested 5 deep", nested.bytes(), "metadata value of 'deep' nests arrays more than 4 deep"},
      {"alignment 0", RawGguf(0, 1).key("general.alignment", kU32).u32(0).bytes(),
       "general.alignment is 0, which is not a nonzero multiple of 8"},
      {"alignment 12", RawGguf(0, 1).key("general.alignment", kU32).u32(12).bytes(),
       "general.alignment is 12, which is not a nonzero multiple of 8"},
      {"alignment as u64", RawGguf(0, 1).key("general.alignment", kU64).u64(32).bytes(),
       "general.alignment must be a u32, not u64"},
      {"tensor name of 64 bytes", RawGguf(1, 0).tensor(std::string(64, 'n'), {4}, kF32, 0).data(16).bytes(),
       "name of tensor 0 is 64 bytes long (at most 63)"},
      {"empty tensor name", RawGguf(1, 0).tensor("", {4}, kF32, 0).data(16).bytes(), "empty tensor name"},
      {"duplicate tensor",
       RawGguf(2, 0).tensor("w", {4}, kF32, 0).tensor("w", {4}, kF32, 32).data(48).bytes(),
       "duplicate tensor 'w'"},
      {"no dimensions", RawGguf(1, 0).tensor("w", {}, kF32, 0).data(16).bytes(),
       "tensor 'w' has 0 dimensions"},
      {"five dimensions", RawGguf(1, 0).tensor("w", {1, 1, 1, 1, 4}, kF32, 0).data(16).bytes(),
       "tensor 'w' has 5 dimensions (must be 1 to 4)"},
      {"huge dimension count", RawGguf(1, 0).str("w").u32(0xffffffff).data(16).bytes(),
       "tensor 'w' has 4294967295 dimensions"},
      {"zero dimension", RawGguf(1, 0).tensor("w", {4, 0}, kF32, 0).data(16).bytes(),
       "tensor 'w' dimension 1 is 0 (must be at least 1)"},
      {"dimension above INT64_MAX", RawGguf(1, 0).tensor("w", {~uint64_t{0}}, kF32, 0).data(16).bytes(),
       "tensor 'w' dimension 0 is -1"},
      {"element count overflow",
       RawGguf(1, 0).tensor("w", {1ull << 32, 1ull << 32}, kF32, 0).data(16).bytes(),
       "has more elements than fit in 64 bits"},
      {"byte size overflow", RawGguf(1, 0).tensor("w", {1ull << 31, 1ull << 31}, kF32, 0).data(16).bytes(),
       "has more bytes than fit in 64 bits"},
      {"unsupported tensor type",
       RawGguf(1, 0).tensor("blk.0.attn_q.weight", {256}, kQ4_K, 0).data(144).bytes(),
       "tensor 'blk.0.attn_q.weight' has type q4_K, which Channel does not support "
       "(supported: f32, f16, q4_0, q8_0, bf16)"},
      {"unknown tensor type", RawGguf(1, 0).tensor("w", {4}, 1000, 0).data(16).bytes(),
       "which Channel does not support"},
      {"row of partial blocks", RawGguf(1, 0).tensor("w", {16}, kQ8_0, 0).data(34).bytes(),
       "tensor 'w' of type q8_0 has rows of 16 values, not a multiple of its block size 32"},
      {"misaligned tensor offset", one_tensor(8, 32),
       "tensor 'w' has offset 8, which is not a multiple of the alignment 32"},
      {"tensor info cut short", first_bytes(RawGguf(1, 0).tensor("w", {4}, kF32, 0).bytes(), 54),
       "truncated file: info of tensor 'w' needs 8 bytes at offset 49, file has 54"},
      {"no data section", RawGguf(1, 0).tensor("w", {4}, kF32, 0).bytes(),
       "truncated file: tensor data starts at offset 64, file has 57"},
      {"tensor data beyond the end", one_tensor(0, 15),
       "tensor 'w' (16 bytes at data offset 0) lies outside the file: the data section has 15 bytes"},
      {"tensor offset far outside", one_tensor(uint64_t{1} << 63, 16), "lies outside the file"},
      {"overlapping tensors",
       RawGguf(2, 0).tensor("a", {16}, kF32, 32).tensor("b", {16}, kF32, 64).data(128).bytes(),
       "tensors 'a' and 'b' overlap in the data section"},
      {"overlap found whatever the order",
       RawGguf(2, 0).tensor("late", {8}, kF32, 64).tensor("early", {32}, kF32, 0).data(160).bytes(),
       "tensors 'early' and 'late' overlap"},
  };
}

TEST(GgufCorrupt, EveryCaseIsOneClearError) {
  for (const auto& c : corrupt_cases()) {
    SCOPED_TRACE(c.name);
    const std::string message = parse_error(c.bytes);
    expect_well_formed(message);
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "expected: " << c.expected << "\ngot: " << message;
  }
}

TEST(GgufCorrupt, TheRawBuilderMakesValidFilesWhenNothingIsWrong) {
  // Guards the table: the same builder without the defect parses.
  const auto bytes = RawGguf(2, 1)
                         .key("general.alignment", kU32)
                         .u32(32)
                         .tensor("a", {8}, kF32, 0)
                         .tensor("b", {32}, kQ8_0, 32)
                         .data(32 + 34)
                         .bytes();
  const GgufFile file = GgufFile::parse(bytes, kOrigin);
  EXPECT_EQ(file.tensors().size(), 2u);
}

// The counts of a writer-made file, set to 2^60: refused before anything is allocated for them.
TEST(GgufCorrupt, HugeCountsInAValidFile) {
  const auto overwrite_u64 = [](std::vector<uint8_t> bytes, size_t offset) {
    std::memcpy(bytes.data() + offset, &kHuge, sizeof(kHuge));
    return bytes;
  };
  auto tensors = test::tensors_sample();
  const auto tensor_file = tensors.writer.to_bytes();
  EXPECT_NE(parse_error(overwrite_u64(tensor_file, 8)).find("the tensor count claims 1152921504606846976"),
            std::string::npos);
  EXPECT_NE(parse_error(overwrite_u64(tensor_file, 16)).find("the metadata count claims 1152921504606846976"),
            std::string::npos);

  auto vocab = test::vocab_sample();
  const auto vocab_file = vocab.writer.to_bytes();
  constexpr std::string_view kKey = "tokenizer.ggml.tokens";
  const auto key_at = std::search(vocab_file.begin(), vocab_file.end(), kKey.begin(), kKey.end());
  ASSERT_NE(key_at, vocab_file.end());
  // After the key: u32 ARRAY, u32 element type, then the u64 element count.
  const size_t count_offset = static_cast<size_t>(key_at - vocab_file.begin()) + kKey.size() + 4 + 4;
  const std::string message = parse_error(overwrite_u64(vocab_file, count_offset));
  expect_well_formed(message);
  EXPECT_NE(message.find("metadata value of 'tokenizer.ggml.tokens' claims 1152921504606846976 entries"),
            std::string::npos)
      << message;
}

// Cutting a valid file anywhere before the end of its last tensor must be caught: in the header
// as truncation, in the data section as a tensor outside the file. Once a prefix parses, every
// longer one must too (only padding follows).
TEST(GgufCorrupt, EveryTruncationIsAnError) {
  for (auto& sample : test::gguf_samples()) {
    SCOPED_TRACE(sample.name);
    const auto bytes = sample.writer.to_bytes();
    const GgufFile file = GgufFile::parse(bytes, kOrigin);
    size_t data_start = bytes.size();
    size_t data_end = 0;
    for (const auto& tensor : file.tensors()) {
      const auto data = file.tensor_bytes(tensor);
      const auto position = static_cast<size_t>(data.data() - bytes.data());
      data_start = std::min(data_start, position - static_cast<size_t>(tensor.offset));
      data_end = std::max(data_end, position + data.size());
    }
    size_t first_parsed = bytes.size() + 1;
    for (size_t size = 0; size <= bytes.size(); ++size) {
      try {
        GgufFile::parse(first_bytes(bytes, size), kOrigin);
        first_parsed = std::min(first_parsed, size);
      } catch (const Error& error) {
        const std::string message = error.what();
        EXPECT_GT(first_parsed, size) << "a shorter prefix parsed, this one fails: " << message;
        expect_well_formed(message);
        EXPECT_NE(message.find(size < data_start ? "truncated file" : "lies outside the file"),
                  std::string::npos)
            << "cut at " << size << ": " << message;
      }
    }
    if (file.tensors().empty()) {
      // The metadata ends at the last nonzero byte or later; only padding may be cut.
      size_t last_nonzero = bytes.size();
      while (last_nonzero > 0 && bytes[last_nonzero - 1] == 0) --last_nonzero;
      EXPECT_GE(first_parsed, last_nonzero);
      EXPECT_LE(first_parsed, bytes.size());
    } else {
      EXPECT_EQ(first_parsed, data_end);
    }
  }
}

// Overwriting any byte before the tensor data with a few telling values must give a parse or an
// error, never a crash (the fuzzer explores the rest). Where the parse succeeds, it must still
// describe a file the writer can reproduce.
TEST(GgufCorrupt, AnyHeaderByteCanBeOverwritten) {
  for (auto& sample : test::gguf_samples()) {
    SCOPED_TRACE(sample.name);
    const auto bytes = sample.writer.to_bytes();
    size_t header_end = bytes.size();
    const GgufFile file = GgufFile::parse(bytes, kOrigin);
    for (const auto& tensor : file.tensors()) {
      header_end = std::min(header_end, static_cast<size_t>(file.tensor_bytes(tensor).data() - bytes.data()));
    }
    for (size_t i = 0; i < header_end; ++i) {
      for (uint8_t value : {uint8_t{0x00}, uint8_t{0x01}, uint8_t{0x7f}, uint8_t{0x80}, uint8_t{0xff}}) {
        auto mutated = bytes;
        mutated[i] = value;
        std::optional<GgufFile> parsed;
        try {
          parsed.emplace(GgufFile::parse(mutated, kOrigin));
        } catch (const Error& error) {
          expect_well_formed(error.what());
          continue;
        }
        // Outside the try: a file the reader accepted that the writer refuses is a failure.
        EXPECT_NO_THROW(test::rewrite(*parsed).to_bytes()) << "byte " << i << " set to " << int{value};
      }
    }
  }
}

}  // namespace
}  // namespace channel
