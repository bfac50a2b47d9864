#include "benchmark/statistics.h"

#include <gtest/gtest.h>

namespace channel {
namespace {

TEST(Summarize, OddCountTakesTheMiddleSample) {
  const Summary s = summarize({9.0, 1.0, 4.0});
  EXPECT_EQ(s.count, 3);
  EXPECT_DOUBLE_EQ(s.median, 4.0);
  EXPECT_DOUBLE_EQ(s.min, 1.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
}

TEST(Summarize, EvenCountAveragesTheMiddleTwo) {
  const Summary s = summarize({10.0, 2.0, 6.0, 3.0});
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 10.0);
}

TEST(Summarize, NoSamplesGivesAnEmptySummary) {
  const Summary s = summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_DOUBLE_EQ(s.median, 0.0);
}

}  // namespace
}  // namespace channel
