// OP_SET_SYSTEM and OP_TOOL_RETURN payloads: the grammar tests render them, and
// tests/fuzz/make_turn_grammar_corpus.cpp writes them out as fuzz_turn_grammar's seed corpus.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace channel::test {

inline constexpr std::string_view kSystemPromptWithTools =
    R"({"instructions":"Be brief.","tools":[{"name":"cmd","description":"Run a command",
    "parameters":{"properties":{"timeout":{"type":"integer"},"argv":{"description":"words","type":"array"}},
    "required":["argv"]}},{"name":"done","description":"Finish"}]})";

inline std::vector<std::string> turn_grammar_payloads() {
  return {
      std::string(kSystemPromptWithTools),
      R"({"instructions":"Be brief."})",
      R"({"tools":[{"name":"cmd","parameters":{"required":["argv"]}}]})",
      R"({"tools":[{"name":"lookup","description":"Looks it up","parameters":{"type":"object","properties":{}}}]})",
      R"({"stdout":"ok","code":0,"lines":["a","b"],"nested":{"x":null,"y":[true,1.5e3]}})",
      R"({"error":"boom"})",
      "42",
      "not json, an error",
  };
}

}  // namespace channel::test
