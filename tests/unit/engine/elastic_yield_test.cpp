#include "engine/elastic_yield.h"

#include <gtest/gtest.h>

namespace channel {
namespace {

bool at_rest_after(std::initializer_list<std::string_view> pieces) {
  SyntaxTracker tracker;
  for (auto piece : pieces) tracker.feed(piece);
  return tracker.at_rest();
}

TEST(SyntaxTracker, OpenQuotesCodeAndBracketsAreNotAtRest) {
  EXPECT_TRUE(at_rest_after({"Plain text.", "\n"}));
  EXPECT_FALSE(at_rest_after({"He said \"wait", "\n"}));
  EXPECT_TRUE(at_rest_after({"He said \"wait\"", "\n"}));
  EXPECT_FALSE(at_rest_after({"```", "python\nx = 1\n"}));
  EXPECT_TRUE(at_rest_after({"``", "`", "py\nx\n``", "`\n"}));  // a fence split across tokens
  EXPECT_FALSE(at_rest_after({"call `f(", "x"}));
  EXPECT_TRUE(at_rest_after({"call `f(x` now"}));
  EXPECT_FALSE(at_rest_after({"(a [b ", "{c}"}));
  EXPECT_TRUE(at_rest_after({"(a [b {c}])"}));
  EXPECT_TRUE(at_rest_after({"))) extra closers never go below zero"}));
  EXPECT_TRUE(at_rest_after({"it's Bob's"}));  // single quotes are not tracked
  EXPECT_TRUE(at_rest_after({"\"quote inside `code` is code\" "}));
}

TEST(ElasticYield, ThoughtThresholds) {
  const Boundary paragraph{.paragraph = true}, line{.sentence_newline = true}, none{};
  EXPECT_FALSE(should_yield(true, 23, paragraph, 0));
  EXPECT_TRUE(should_yield(true, 24, paragraph, 0));
  EXPECT_FALSE(should_yield(true, 35, line, 0));
  EXPECT_TRUE(should_yield(true, 36, line, 0));
  EXPECT_FALSE(should_yield(true, 100, none, 0));
}

TEST(ElasticYield, ResponseThresholdsUseTheMargin) {
  const Boundary paragraph{.paragraph = true}, line{.sentence_newline = true};
  EXPECT_FALSE(should_yield(false, 9, paragraph, 10));
  EXPECT_FALSE(should_yield(false, 15, paragraph, 0));
  EXPECT_TRUE(should_yield(false, 16, paragraph, 0));
  EXPECT_FALSE(should_yield(false, 12, line, 1.4f));
  EXPECT_TRUE(should_yield(false, 12, line, 1.5f));
  EXPECT_FALSE(should_yield(false, 31, line, 0));
  EXPECT_TRUE(should_yield(false, 32, line, 0));
}

}  // namespace
}  // namespace channel
