// libFuzzer target: the JSON payloads the engine renders into turns, OP_SET_SYSTEM's and
// OP_TOOL_RETURN's. They come from clients, so anything can arrive: rendering must return or
// throw channel::Error (the session answers OP_ERROR), for every architecture. Any other
// exception (a JSON type error, say) escapes, and libFuzzer reports it as a crash.
//
// Input: 3 bytes, then a payload. The payload is rendered as it is; if it is JSON, it is also
// rendered once more with one of its values replaced by a value of another type: bytes 0-1 pick
// the value (in document order), byte 2 the replacement. So one changed byte turns a tool name
// into a number, which JSON text reaches only through several coordinated edits.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine/turn_grammar.h"

namespace {

using nlohmann::json;

void render_everything(std::string_view payload) {
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
}

// Every value of the document, the document first, in document order.
std::vector<json*> values_of(json& document) {
  std::vector<json*> values;
  std::vector<json*> pending = {&document};
  while (!pending.empty()) {
    json* value = pending.back();
    pending.pop_back();
    values.push_back(value);
    if (value->is_structured()) {
      for (auto it = value->rbegin(); it != value->rend(); ++it) pending.push_back(&*it);
    }
  }
  return values;
}

json replacement(uint8_t kind) {
  switch (kind % 8) {
    case 0: return nullptr;
    case 1: return true;
    case 2: return 3;
    case 3: return "x";
    case 4: return json::array();
    case 5: return json::object();
    case 6: return json::array({"x", 1});
    default: return json::object({{"x", 1}});
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const std::string_view payload(reinterpret_cast<const char*>(data + 3), size - 3);
  render_everything(payload);
  json document = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return 0;
  const std::vector<json*> values = values_of(document);
  *values[(size_t{data[0]} << 8 | data[1]) % values.size()] = replacement(data[2]);
  render_everything(document.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace));
  return 0;
}
