// libFuzzer target: tool-call text as a model may write it (it is model output, so anything can
// appear). parse_tool_call must split any bytes without undefined behaviour, and whenever it
// reports JSON arguments they must be a well-formed JSON object.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/tool_call.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const channel::ToolCall call = channel::parse_tool_call(text, text);
  if (call.json_arguments) {
    const auto parsed = nlohmann::json::parse(*call.json_arguments, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) {
      std::fprintf(stderr, "fuzz_tool_call: converted arguments are not a JSON object: %s\n",
                   call.json_arguments->c_str());
      std::abort();
    }
  }
  return 0;
}
