// Model directories: one model.safetensors, or shards listed by model.safetensors.index.json,
// checked against each other.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/safetensors_directory.h"
#include "safetensors_samples.h"
#include "test_models.h"

namespace channel {
namespace {

using test::safetensors_bytes;

void write_file(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

void write_shard(const std::string& path, const std::vector<std::string>& f32_scalars) {
  std::string header = "{";
  for (size_t i = 0; i < f32_scalars.size(); ++i) {
    if (i != 0) header += ",";
    header += fmt::format(R"("{}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}})", f32_scalars[i], 4 * i,
                          4 * i + 4);
  }
  header += "}";
  const std::vector<uint8_t> bytes = safetensors_bytes(header, std::vector<uint8_t>(4 * f32_scalars.size(), 1));
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string refusal(const testing::TempDir& dir) {
  try {
    SafetensorsDirectory::open(dir.file(""));
  } catch (const Error& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(SafetensorsDirectory, OneFileOrShardsListedByTheIndex) {
  testing::TempDir single;
  write_shard(single.file("model.safetensors"), {"a", "b"});
  const SafetensorsDirectory one = SafetensorsDirectory::open(single.file(""));
  EXPECT_EQ(one.tensor_count(), 2u);
  ASSERT_NE(one.find("b").tensor, nullptr);
  EXPECT_EQ(one.find("b").file, &one.files()[0]);

  testing::TempDir sharded;
  write_shard(sharded.file("model-00001-of-00002.safetensors"), {"a", "b"});
  write_shard(sharded.file("model-00002-of-00002.safetensors"), {"c"});
  write_file(sharded.file("model.safetensors.index.json"),
             R"({"metadata":{"total_size":12},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
             R"("b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
  const SafetensorsDirectory two = SafetensorsDirectory::open(sharded.file(""));
  EXPECT_EQ(two.files().size(), 2u);
  EXPECT_EQ(two.tensor_count(), 3u);
  const auto c = two.find("c");
  ASSERT_NE(c.tensor, nullptr);
  EXPECT_EQ(c.file->origin(), sharded.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(c.file->tensor_bytes(*c.tensor).size(), 4u);
  EXPECT_EQ(two.find("d").tensor, nullptr);
}

TEST(SafetensorsDirectory, IndexAndShardsThatDisagreeAreRefused) {
  const auto refused = [](const std::string& index, const std::string& reason) {
    testing::TempDir dir;
    write_shard(dir.file("s1.safetensors"), {"a", "b"});
    write_shard(dir.file("s2.safetensors"), {"b"});
    write_file(dir.file("model.safetensors.index.json"), index);
    const std::string message = refusal(dir);
    EXPECT_NE(message.find(reason), std::string::npos) << "want '" << reason << "' in: " << message;
  };
  refused(R"({"weight_map":{"a":"s1.safetensors"}})", "which the index does not list");
  refused(R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors","z":"s1.safetensors"}})", "does not hold it");
  refused(R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})", "which the index places in s2");
  refused(R"({"weight_map":{"a":"../s1.safetensors"}})", "not a file name in the directory");
  refused(R"({"weight_map":{"a":3}})", "is not a string");
  refused(R"({"weights":{}})", "no \"weight_map\"");
  refused(R"({"weight_map":)", "not valid JSON");
  refused(R"({"weight_map":{"a":"missing.safetensors"}})", "missing.safetensors");
  testing::TempDir empty;
  EXPECT_NE(refusal(empty).find("has neither model.safetensors nor model.safetensors.index.json"), std::string::npos);
}

}  // namespace
}  // namespace channel
