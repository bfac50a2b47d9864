#include "core/mapped_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "core/error.h"
#include "test_models.h"

namespace channel {
namespace {

// A file of `n` bytes, byte i = i * 7 mod 256.
std::string write_pattern(const testing::TempDir& dir, size_t n) {
  const std::string path = dir.file("pattern.bin");
  std::vector<char> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(n));
  return path;
}

TEST(MappedFileTest, ContainsOnlyRangesWithinTheMapping) {
  const testing::TempDir dir;
  const MappedFile file(write_pattern(dir, 10000));
  const uint8_t* data = file.bytes().data();
  EXPECT_TRUE(file.contains(data, 10000));
  EXPECT_TRUE(file.contains(data + 9999, 1));
  EXPECT_TRUE(file.contains(data + 10000, 0));
  EXPECT_FALSE(file.contains(data + 9999, 2));
  EXPECT_FALSE(file.contains(data - 1, 1));
  EXPECT_FALSE(file.contains(data, 10001));
}

TEST(MappedFileTest, ReleasedPagesReadTheSameAfterwards) {
  const testing::TempDir dir;
  const size_t n = 5 * 4096 + 123;
  const MappedFile file(write_pattern(dir, n));
  const uint8_t* data = file.bytes().data();
  file.prefetch(nullptr);
  file.release_pages(data + 100, n - 200);  // a range that starts and ends within pages
  file.release_pages(data, n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(data[i], static_cast<uint8_t>(i * 7)) << "byte " << i;
  EXPECT_THROW(file.release_pages(data + 1, n), Error);
}

}  // namespace
}  // namespace channel
