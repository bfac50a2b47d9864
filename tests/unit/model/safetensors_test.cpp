// The safetensors reader: a file as Hugging Face writes it reads back with its tensors, shapes,
// bytes and metadata; every fault of the header or of the byte ranges is one error naming it.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/safetensors.h"
#include "safetensors_samples.h"
#include "test_models.h"

namespace channel {
namespace {

using test::safetensors_bytes;

std::string refusal(const std::string& header, size_t data_bytes) {
  const std::vector<uint8_t> bytes = safetensors_bytes(header, std::vector<uint8_t>(data_bytes, 7));
  try {
    SafetensorsFile::parse(bytes, "t.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Safetensors, ReadsTensorsShapesBytesAndMetadata) {
  std::vector<uint8_t> data(2 * 3 * 2 + 4 * 4);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  const std::string header =
      R"({"__metadata__":{"format":"pt"},)"
      R"("model.norm.weight":{"dtype":"F32","shape":[4],"data_offsets":[12,28]},)"
      R"("model.embed_tokens.weight":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}})";
  const std::vector<uint8_t> bytes = safetensors_bytes(header, data);
  const SafetensorsFile file = SafetensorsFile::parse(bytes, "t.safetensors");
  ASSERT_EQ(file.tensors().size(), 2u);
  const SafetensorsTensor& embed = file.tensors()[0];  // in the order of their bytes
  EXPECT_EQ(embed.name, "model.embed_tokens.weight");
  EXPECT_EQ(embed.type, GgmlType::BF16);
  EXPECT_EQ(embed.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(embed.n_elements(), 6);
  const auto embed_bytes = file.tensor_bytes(embed);
  EXPECT_EQ(std::vector<uint8_t>(embed_bytes.begin(), embed_bytes.end()),
            std::vector<uint8_t>(data.begin(), data.begin() + 12));
  const SafetensorsTensor* norm = file.find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->type, GgmlType::F32);
  EXPECT_EQ(file.tensor_bytes(*norm).front(), 12);
  EXPECT_EQ(file.find("absent"), nullptr);
  EXPECT_EQ(file.metadata().at("format"), "pt");
}

TEST(Safetensors, OpensAFileFromDisk) {
  testing::TempDir dir;
  const std::string path = dir.file("m.safetensors");
  const std::vector<uint8_t> bytes =
      safetensors_bytes(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", {1, 2, 3, 4});
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const SafetensorsFile file = SafetensorsFile::open(path);
  ASSERT_EQ(file.tensors().size(), 1u);
  EXPECT_EQ(file.tensor_bytes(file.tensors()[0])[3], 4);
}

TEST(Safetensors, EveryFaultIsOneErrorNamingIt) {
  const auto refused = [](const std::string& header, size_t data_bytes, const std::string& reason) {
    const std::string message = refusal(header, data_bytes);
    EXPECT_NE(message.find("t.safetensors: not a valid safetensors file"), std::string::npos) << message;
    EXPECT_NE(message.find(reason), std::string::npos) << "want '" << reason << "' in: " << message;
  };
  refused("[1,2]", 0, "not a JSON object");
  refused("{\"w\":", 0, "not valid JSON");
  refused(R"({"w":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", 8, "dtype 'I64'");
  refused(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "8 bytes for 3 F32 values");
  refused(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8, "non-negative integers");
  refused(R"({"w":{"dtype":"F32","shape":[1099511627777],"data_offsets":[0,8]}})", 8, "too large");
  refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8, "before begin");
  refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4, "cover 8 of the data's 4 bytes");
  refused(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 12, "cover 8 of the data's 12 bytes");
  refused(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          8, "overlaps");
  refused(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8, "belong to no tensor");
  refused(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
          8, "named twice");
  refused(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4, "no \"dtype\"");
  refused(R"({"w":7})", 0, "not an object");
  refused(R"({"__metadata__":{"k":1}})", 0, "entry 'k' is not a string");
  refused(R"({"w":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1],"data_offsets":[0,4]}})", 4, "at most 8 sizes");
}

TEST(Safetensors, HeaderLengthsOutsideTheFileAreRefused) {
  std::vector<uint8_t> bytes = safetensors_bytes("{}", {});
  bytes[0] = 200;  // header length 200 in a file of 10 bytes
  EXPECT_THROW(SafetensorsFile::parse(bytes), Error);
  bytes[0] = 0;
  bytes[7] = 0x80;  // 2^63
  EXPECT_THROW(SafetensorsFile::parse(bytes), Error);
  EXPECT_THROW(SafetensorsFile::parse(std::vector<uint8_t>(5, 0)), Error);
  EXPECT_NO_THROW(SafetensorsFile::parse(safetensors_bytes("{}", {})));  // no tensors: valid
}

}  // namespace
}  // namespace channel
