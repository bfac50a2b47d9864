// Tool calls as the model writes them: name and arguments split as the original does, and
// Gemma 4's argument notation converted to JSON. Expected objects are written out by hand from the
// notation, and compared as parsed JSON (key order and spacing do not matter).
#include "engine/tool_call.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace channel {
namespace {

using nlohmann::json;

json converted(std::string_view notation) {
  const auto text = tool_arguments_to_json(notation);
  EXPECT_TRUE(text.has_value()) << notation;
  return text ? json::parse(*text) : json();
}

TEST(ToolCallArguments, EmptyObject) { EXPECT_EQ(converted("{}"), json::object()); }

TEST(ToolCallArguments, StringsNumbersBooleansAndNull) {
  EXPECT_EQ(converted(R"({city:<|"|>Paris, France<|"|>,days:3,ratio:-0.25,big:1e3,ok:true,no:false,none:null})"),
            json::parse(R"({"city":"Paris, France","days":3,"ratio":-0.25,"big":1000.0,"ok":true,"no":false,
                            "none":null})"));
}

TEST(ToolCallArguments, NestedObjectsAndArrays) {
  EXPECT_EQ(converted(R"({filter:{tags:[<|"|>a<|"|>,<|"|>b<|"|>],limit:{max:10}},ids:[1,2,[3]],empty:[]})"),
            json::parse(R"({"filter":{"tags":["a","b"],"limit":{"max":10}},"ids":[1,2,[3]],"empty":[]})"));
}

TEST(ToolCallArguments, SpacesAroundTokensAreAllowed) {
  EXPECT_EQ(converted(" { a : 1 , b: [ 2 , 3 ] }\n"), json::parse(R"({"a":1,"b":[2,3]})"));
}

TEST(ToolCallArguments, StringsKeepWhatJsonMustEscape) {
  // Quotes, backslashes and newlines inside a Gemma string become JSON escapes.
  EXPECT_EQ(converted("{cmd:<|\"|>echo \"hi\\n\"\nls<|\"|>}"), json::parse(R"({"cmd":"echo \"hi\\n\"\nls"})"));
}

TEST(ToolCallArguments, MalformedNotationIsNotConverted) {
  for (std::string_view bad : {"", "city:1", "{city:1", "{city:<|\"|>Paris}", "{:1}", "{a:1,}", "{a:1 b:2}", "{a:tru}",
                               "{a:1.2.3}", "{a:[1,2}", "{a:1}}", "{a:1} extra", "[1,2]", "{a:-}", "{a:{b:1}"}) {
    EXPECT_FALSE(tool_arguments_to_json(bad).has_value()) << bad;
  }
}

TEST(ToolCallArguments, DeepNestingIsRefusedNotFollowed) {
  std::string deep = "{a:";
  for (int i = 0; i < 100000; ++i) deep += "[";
  EXPECT_FALSE(tool_arguments_to_json(deep).has_value());
  std::string ok = "{a:";
  for (int i = 0; i < 10; ++i) ok += "[";
  ok += "1";
  for (int i = 0; i < 10; ++i) ok += "]";
  ok += "}";
  EXPECT_EQ(converted(ok), json::parse(R"({"a":[[[[[[[[[[1]]]]]]]]]]})"));
}

TEST(ToolCallArguments, InvalidUtf8InStringsIsReplacedNotThrown) {
  const auto text = tool_arguments_to_json("{s:<|\"|>\xff\xfe<|\"|>}");
  ASSERT_TRUE(text.has_value());
  EXPECT_TRUE(json::accept(*text));
}

TEST(ParseToolCall, SplitsNameAndArgumentsAsTheOriginal) {
  // Vocabulary texts carry spaces as U+2581; the decoded text has real spaces.
  const ToolCall call = parse_tool_call("call:get\xe2\x96\x81weather{city:<|\"|>New\xe2\x96\x81York<|\"|>}\n",
                                        "call:get weather{city:<|\"|>New York<|\"|>}\n");
  EXPECT_EQ(call.name, "get\xe2\x96\x81weather");
  EXPECT_EQ(call.arguments, "{city:<|\"|>New\xe2\x96\x81York<|\"|>}");
  ASSERT_TRUE(call.json_arguments.has_value());
  EXPECT_EQ(json::parse(*call.json_arguments), json::parse(R"({"city":"New York"})"));
}

TEST(ParseToolCall, NameOnlyAndUnconvertibleArguments) {
  const ToolCall bare = parse_tool_call("call:\xe2\x96\x81ping", "call: ping");
  EXPECT_EQ(bare.name, "ping");
  EXPECT_EQ(bare.arguments, "{}");
  EXPECT_EQ(bare.json_arguments, "{}");

  const ToolCall broken = parse_tool_call("call:f{a:", "call:f{a:");
  EXPECT_EQ(broken.name, "f");
  EXPECT_EQ(broken.arguments, "{a:");
  EXPECT_FALSE(broken.json_arguments.has_value());
}

}  // namespace
}  // namespace channel
