// The text the engine writes around what clients send: user turns, system turns with tool
// declarations, tool responses and probe frames, rendered exactly as the original Channel
// engine renders them (reference: original-channel.md §1.5.1, §2.7, §2.10, §2.11), plus the
// official single-turn chat template that `channel run` uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/model_config.h"

namespace channel {

// The official template for one user turn, thinking off (Gemma 4) -- for `channel run`.
std::string render_chat_turn(ModelArch arch, std::string_view user_text);

// OP_STREAM_INPUT text: "<|turn>user\n" + text + "\n<turn|>\n<|turn>model\n", then the empty
// thought block "<|channel>thought\n<channel|>" unless `reason` (Gemma 3: its own turn markers,
// no thought block).
std::string render_user_input(ModelArch arch, std::string_view text, bool reason);

// OP_SET_SYSTEM: a JSON object {instructions, tools:[{name, description, parameters}]} becomes
// a system turn with tool declarations; anything else is returned unchanged (nullopt means
// "not JSON": the caller sends the bytes as they are). Every field may be absent; one that is
// there with another type than the grammar reads (a tool name that is not a string, say)
// throws channel::Error naming it ("SET_SYSTEM: tools[0].name must be a string, not a number").
std::optional<std::string> render_system_turn(ModelArch arch, std::string_view payload);

// OP_TOOL_RETURN: "<|tool_response>response:NAME{...}<tool_response|><|channel>thought\n", with a
// notice when the result reports an error. Throws channel::Error for a JSON result nested more
// than 256 levels deep.
std::string render_tool_response(std::string_view name, std::string_view result);

// Where a probe's prompt goes, by the state of the turn.
enum class ProbeFraming { Verbatim, BetweenTurns, AfterThought };
std::string render_probe(std::string_view prompt, ProbeFraming framing);

}  // namespace channel
