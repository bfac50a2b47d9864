// A tool call as the model writes it: <|tool_call>call:NAME{ARGUMENTS}<tool_call|>.
//
// Gemma 4 writes the arguments in its own notation, not JSON:
//   {city:<|"|>Paris<|"|>,days:3,units:[<|"|>C<|"|>],verbose:true}
// (bare keys, strings between <|"|> markers, JSON numbers, booleans and null, nested objects and
// arrays). OP_TOOL_CALL carries this notation as the original does; clients that want JSON ask
// the engine for the conversion below (`--tool-call-json`, a Channel extension).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace channel {

struct ToolCall {
  std::string name;
  std::string arguments;                      // the model's notation, as the original sends it
  std::optional<std::string> json_arguments;  // the same as JSON; nullopt if not well-formed
};

// Splits the text between <|tool_call> and <tool_call|> as the original does: the name runs from
// after the first ':' to the first '{' (trimmed), the arguments from that '{' to the end.
// `notation` is the tokens' vocabulary texts (spaces as U+2581, as the original concatenates
// them); `text` is the same tokens decoded, which the JSON conversion reads.
ToolCall parse_tool_call(std::string_view notation, std::string_view text);

// The arguments as a JSON object (compact), or nullopt if `notation` is not one well-formed
// Gemma object (trailing spaces aside).
std::optional<std::string> tool_arguments_to_json(std::string_view notation);

}  // namespace channel
