// Rendered text against the original engine's exact grammar (original-channel.md §1.5.1,
// §2.7, §2.10, §2.11), written out by hand from the reference.
#include "engine/turn_grammar.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "turn_grammar_samples.h"

namespace channel {
namespace {

TEST(TurnGrammar, UserInputWithAndWithoutReasoning) {
  EXPECT_EQ(render_user_input(ModelArch::Gemma4, "Hi", false),
            "<|turn>user\nHi\n<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
  EXPECT_EQ(render_user_input(ModelArch::Gemma4, "Hi", true), "<|turn>user\nHi\n<turn|>\n<|turn>model\n");
  EXPECT_EQ(render_user_input(ModelArch::Gemma3, "Hi", true),
            "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n");
}

TEST(TurnGrammar, SystemTurnWithTools) {
  const std::string q = "<|\"|>";
  const std::string expected =
      "<|turn>system\n<|think|>\nBe brief.\n"
      "<|tool>declaration:cmd{description:" + q + "Run a command" + q +
      ",parameters:{properties:{argv:{description:" + q + "words" + q + ",items:{type:" + q + "STRING" + q +
      "},type:" + q + "ARRAY" + q + "},timeout:{type:" + q + "INTEGER" + q + "}},required:[" + q + "argv" + q +
      "],type:" + q + "OBJECT" + q + "}}<tool|>"
      "<|tool>declaration:done{description:" + q + "Finish" + q + "}<tool|>"
      "<turn|>\n";
  EXPECT_EQ(render_system_turn(ModelArch::Gemma4, test::kSystemPromptWithTools), expected);
  EXPECT_FALSE(render_system_turn(ModelArch::Gemma4, "plain text system prompt").has_value());
  EXPECT_FALSE(render_system_turn(ModelArch::Gemma4, "[1,2]").has_value());
}

// What the engine reads of a SET_SYSTEM object must have the type it reads; the message names
// the field. The same for every architecture (Gemma 3 renders no tools, but checks them).
TEST(TurnGrammar, SystemTurnFieldsOfTheWrongTypeAreRefusedByName) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"instructions":"x","tools":[{"name":3}]})", "tools[0].name must be a string, not a number"},
      {R"({"instructions":5})", "instructions must be a string, not a number"},
      {R"({"tools":{}})", "tools must be an array, not an object"},
      {R"({"tools":[1]})", "tools[0] must be an object, not a number"},
      {R"({"tools":[{"name":"a"},{"name":null}]})", "tools[1].name must be a string, not null"},
      {R"({"tools":[{"name":"a","description":[]}]})", "tools[0].description must be a string, not an array"},
      {R"({"tools":[{"name":"a","parameters":"p"}]})", "tools[0].parameters must be an object, not a string"},
      {R"({"tools":[{"parameters":{"properties":[]}}]})",
       "tools[0].parameters.properties must be an object, not an array"},
      {R"({"tools":[{"parameters":{"properties":{"p":1}}}]})",
       "tools[0].parameters.properties.p must be an object, not a number"},
      {R"({"tools":[{"parameters":{"properties":{"p":{"type":1}}}}]})",
       "tools[0].parameters.properties.p.type must be a string, not a number"},
      {R"({"tools":[{"parameters":{"properties":{"p":{"description":true}}}}]})",
       "tools[0].parameters.properties.p.description must be a string, not a boolean"},
      {R"({"tools":[{"parameters":{"required":"p"}}]})", "tools[0].parameters.required must be an array, not a string"},
      {R"({"tools":[{"parameters":{"required":["p",2]}}]})",
       "tools[0].parameters.required[1] must be a string, not a number"},
  };
  for (const auto& [payload, message] : cases) {
    for (ModelArch arch : {ModelArch::Gemma4, ModelArch::Gemma3}) {
      try {
        render_system_turn(arch, payload);
        ADD_FAILURE() << "accepted: " << payload;
      } catch (const Error& error) {
        EXPECT_EQ(std::string(error.what()), "SET_SYSTEM: " + message) << payload;
      }
    }
  }
}

TEST(TurnGrammar, ToolResponses) {
  const std::string q = "<|\"|>";
  EXPECT_EQ(render_tool_response("cmd", R"({"stdout":"ok","code":0})"),
            "<|tool_response>response:cmd{code:0,stdout:" + q + "ok" + q + "}<tool_response|><|channel>thought\n");
  EXPECT_EQ(render_tool_response("cmd", "42"),
            "<|tool_response>response:cmd{value:42}<tool_response|><|channel>thought\n");
  EXPECT_EQ(render_tool_response("cmd", "not json, an error"),
            "<|tool_response>response:cmd{value:" + q + "not json, an error" + q +
                "}<tool_response|><|channel>thought\nNotice: Tool execution failed. Analyze error and correct tool call:\n");
  EXPECT_EQ(render_tool_response("cmd", R"({"error":"boom"})"),
            "<|tool_response>response:cmd{error:" + q + "boom" + q +
                "}<tool_response|><|channel>thought\nNotice: Tool execution failed. Analyze error and correct tool call:\n");
}

TEST(TurnGrammar, ToolResultsNestedTooDeepAreRefused) {
  // Deep enough to overflow the stack if rendering followed it.
  const size_t depth = 200000;
  const std::string result = std::string(depth, '[') + std::string(depth, ']');
  EXPECT_THROW(render_tool_response("cmd", result), Error);
  const std::string deep_but_fine = std::string(256, '[') + std::string(256, ']');
  EXPECT_NO_THROW(render_tool_response("cmd", deep_but_fine));
}

TEST(TurnGrammar, ProbeFrames) {
  EXPECT_EQ(render_probe("Decide:", ProbeFraming::Verbatim), "Decide:");
  EXPECT_EQ(render_probe("Decide:", ProbeFraming::BetweenTurns),
            "<|turn>user\nDecide:<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
  EXPECT_EQ(render_probe("Decide:", ProbeFraming::AfterThought),
            "<channel|>\n<turn|>\n<|turn>user\nDecide:<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
}

}  // namespace
}  // namespace channel
