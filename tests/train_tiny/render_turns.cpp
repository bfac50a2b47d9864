// The engine's side of tools/train-tiny/test_grammar.py: renders client events with the
// engine's own turn grammar (src/engine/turn_grammar.h), one JSON event per input line, one JSON
// string per output line:
//   ["system", instructions-or-null, [tools...]]  -> OP_SET_SYSTEM with {instructions, tools}
//   ["user", text, reason]                         -> OP_STREAM_INPUT (INPUT_FLAG_REASON if reason)
//   ["chat", text]                                 -> `channel run`'s single-turn template
//   ["tool_response", name, result-object]         -> OP_TOOL_RETURN
//
// Usage: render_turns < events.jsonl > rendered.jsonl
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "engine/turn_grammar.h"

namespace {

using nlohmann::json;
constexpr channel::ModelArch kArch = channel::ModelArch::Gemma4;

std::string render(const json& event) {
  const std::string kind = event.at(0).get<std::string>();
  if (kind == "system") {
    json payload = json::object();
    if (!event.at(1).is_null()) payload["instructions"] = event.at(1);
    if (!event.at(2).empty()) payload["tools"] = event.at(2);
    return channel::render_system_turn(kArch, payload.dump()).value();
  }
  if (kind == "user") return channel::render_user_input(kArch, event.at(1).get<std::string>(), event.at(2).get<bool>());
  if (kind == "chat") return channel::render_chat_turn(kArch, event.at(1).get<std::string>());
  if (kind == "tool_response") return channel::render_tool_response(event.at(1).get<std::string>(), event.at(2).dump());
  channel::fail("unknown event kind '{}'", kind);
}

}  // namespace

int main() {
  try {
    for (std::string line; std::getline(std::cin, line);) {
      std::printf("%s\n", json(render(json::parse(line))).dump().c_str());
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "render_turns: %s\n", error.what());
    return 1;
  }
  return 0;
}
