// libFuzzer target: the JSON payloads the engine renders into turns, OP_SET_SYSTEM's and
// OP_TOOL_RETURN's. They come from clients, so anything can arrive: rendering must return or
// throw channel::Error (the session answers OP_ERROR), for every architecture. Any other
// exception (a JSON type error, say) escapes, and libFuzzer reports it as a crash.
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "engine/turn_grammar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  for (channel::ModelArch arch : {channel::ModelArch::Gemma4, channel::ModelArch::Gemma3}) {
    try {
      (void)channel::render_system_turn(arch, payload);
    } catch (const channel::Error&) {
    }
  }
  try {
    (void)channel::render_tool_response("tool", payload);
  } catch (const channel::Error&) {
  }
  return 0;
}
