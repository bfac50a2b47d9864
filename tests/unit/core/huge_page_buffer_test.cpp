#include "core/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace channel {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

TEST(HugePageBufferTest, StartsOnAHugePageBoundaryZeroFilledAndWritable) {
  for (size_t bytes : {size_t{1}, size_t{4096}, kHugePage - 1, kHugePage, 3 * kHugePage + 12345}) {
    HugePageBuffer buffer(bytes);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kHugePage, 0u) << bytes << " bytes";
    EXPECT_EQ(buffer.data()[0], 0);
    EXPECT_EQ(buffer.data()[bytes - 1], 0);
    buffer.data()[bytes - 1] = 2;  // the last byte is the buffer's to write
    EXPECT_EQ(buffer.data()[bytes - 1], 2);
  }
}

TEST(HugePageBufferTest, EmptyHoldsNothing) {
  const HugePageBuffer empty(0);
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);
}

TEST(HugePageBufferTest, MovingHandsTheMemoryOver) {
  HugePageBuffer first(kHugePage);
  first.data()[7] = 42;
  uint8_t* const data = first.data();
  HugePageBuffer second(std::move(first));
  EXPECT_EQ(first.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(second.data()[7], 42);
  HugePageBuffer third(1);
  third = std::move(second);
  EXPECT_EQ(third.data(), data);
  EXPECT_EQ(third.size(), kHugePage);
}

}  // namespace
}  // namespace channel
