#include "engine/turn_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace channel {
namespace {

using nlohmann::json;

constexpr std::string_view kQuote = "<|\"|>";  // Gemma 4's string delimiter token

std::string gemma_string(std::string_view s) { return fmt::format("{}{}{}", kQuote, s, kQuote); }

std::string upper(std::string_view s, size_t max_length) {
  std::string out(s.substr(0, max_length));
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// "a string", "an object", "null": a JSON type for messages.
std::string kind_of(std::string_view type_name) {
  if (type_name == "null") return "null";
  return fmt::format("{} {}", std::string_view("aeiou").find(type_name.front()) == std::string_view::npos ? "a" : "an",
                     type_name);
}

// OP_SET_SYSTEM's fields are read through this: a field may be absent, but one that is there
// must have the type the grammar reads, or the payload is refused naming the field (before the
// session changes).
const json* field(const json& object, const char* key, json::value_t type, const std::string& path) {
  const auto found = object.find(key);
  if (found == object.end()) return nullptr;
  if (found->type() != type) {
    fail("SET_SYSTEM: {} must be {}, not {}", path, kind_of(json(type).type_name()), kind_of(found->type_name()));
  }
  return &*found;
}

std::string string_field(const json& object, const char* key, const std::string& path) {
  const json* value = field(object, key, json::value_t::string, path);
  return value ? value->get<std::string>() : std::string();
}

// Keys in byte order, as the original sorts them (nlohmann's object_t is a std::map: sorted).
std::string render_parameters(const json& parameters, const std::string& path) {
  std::string out = ",parameters:{";
  if (const json* properties = field(parameters, "properties", json::value_t::object, path + ".properties")) {
    out += "properties:{";
    bool first = true;
    for (const auto& [key, property] : properties->items()) {
      const std::string property_path = path + ".properties." + key;
      if (!property.is_object()) {
        fail("SET_SYSTEM: {} must be an object, not {}", property_path, kind_of(property.type_name()));
      }
      if (!first) out += ",";
      first = false;
      out += key + ":{";
      if (const json* d = field(property, "description", json::value_t::string, property_path + ".description")) {
        out += "description:" + gemma_string(d->get<std::string>()) + ",";
      }
      const json* t = field(property, "type", json::value_t::string, property_path + ".type");
      const std::string type = t ? upper(t->get<std::string>(), 32) : "STRING";
      if (type == "ARRAY") out += "items:{type:" + gemma_string("STRING") + "},";
      out += "type:" + gemma_string(type) + "}";
    }
    out += "},";
  }
  if (const json* required = field(parameters, "required", json::value_t::array, path + ".required");
      required && !required->empty()) {
    out += "required:[";
    for (size_t i = 0; i < required->size(); ++i) {
      const json& item = (*required)[i];
      if (!item.is_string()) {
        fail("SET_SYSTEM: {}.required[{}] must be a string, not {}", path, i, kind_of(item.type_name()));
      }
      out += (i ? "," : "") + gemma_string(item.get<std::string>());
    }
    out += "],";
  }
  out += "type:" + gemma_string("OBJECT") + "}";
  return out;
}

std::string render_tool_declarations(const json& prompt) {
  std::string out;
  const json* tools = field(prompt, "tools", json::value_t::array, "tools");
  if (!tools) return out;
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string path = fmt::format("tools[{}]", i);
    if (!tool.is_object()) fail("SET_SYSTEM: {} must be an object, not {}", path, kind_of(tool.type_name()));
    out += "<|tool>declaration:" + string_field(tool, "name", path + ".name") +
           "{description:" + gemma_string(string_field(tool, "description", path + ".description"));
    if (const json* p = field(tool, "parameters", json::value_t::object, path + ".parameters")) {
      out += render_parameters(*p, path + ".parameters");
    }
    out += "}<tool|>";
  }
  return out;
}

// A tool result nesting deeper than this is refused: rendering recurses, and a payload of
// nothing but brackets would otherwise overflow the stack.
constexpr int kMaxResultDepth = 256;

// A JSON value in Gemma's tool notation: unquoted keys, strings between <|"|> tokens.
std::string render_value(const json& value, int depth) {
  if (depth > kMaxResultDepth) fail("TOOL_RETURN: the result nests deeper than {} levels", kMaxResultDepth);
  switch (value.type()) {
    case json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ",";
        first = false;
        out += key + ":" + render_value(item, depth + 1);
      }
      return out + "}";
    }
    case json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) out += (i ? "," : "") + render_value(value[i], depth + 1);
      return out + "]";
    }
    case json::value_t::string: return gemma_string(value.get<std::string>());
    default: return value.dump();  // null, booleans, numbers
  }
}

}  // namespace

std::string render_chat_turn(ModelArch arch, std::string_view user_text) {
  if (arch == ModelArch::Gemma3) {
    return fmt::format("<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n", user_text);
  }
  return fmt::format("<|turn>user\n{}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", user_text);
}

std::string render_user_input(ModelArch arch, std::string_view text, bool reason) {
  if (arch == ModelArch::Gemma3) {
    return fmt::format("<start_of_turn>user\n{}<end_of_turn>\n<start_of_turn>model\n", text);
  }
  return fmt::format("<|turn>user\n{}\n<turn|>\n<|turn>model\n{}", text, reason ? "" : "<|channel>thought\n<channel|>");
}

std::optional<std::string> render_system_turn(ModelArch arch, std::string_view payload) {
  const json parsed = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return std::nullopt;
  const json* instructions_field = field(parsed, "instructions", json::value_t::string, "instructions");
  const std::string instructions = instructions_field ? instructions_field->get<std::string>() + "\n" : "";
  // Checked whatever the architecture: the same payload is valid for every model or for none.
  const std::string declarations = render_tool_declarations(parsed);
  if (arch == ModelArch::Gemma3) {
    // Gemma 3 has no system role or tool tokens: the instructions open the first user turn.
    return fmt::format("<start_of_turn>user\n{}<end_of_turn>\n", instructions);
  }
  return "<|turn>system\n<|think|>\n" + instructions + declarations + "<turn|>\n";
}

std::string render_tool_response(std::string_view name, std::string_view result) {
  const json parsed = json::parse(result, nullptr, /*allow_exceptions=*/false);
  std::string body;
  bool error = false;
  if (parsed.is_discarded()) {
    body = "{value:" + gemma_string(result) + "}";
    error = result.find("error") != std::string_view::npos;
  } else if (parsed.is_object()) {
    body = render_value(parsed, 0);
    error = parsed.contains("error");
  } else {
    body = "{value:" + render_value(parsed, 0) + "}";
  }
  std::string out = fmt::format("<|tool_response>response:{}{}<tool_response|><|channel>thought\n", name, body);
  if (error) out += "Notice: Tool execution failed. Analyze error and correct tool call:\n";
  return out;
}

std::string render_probe(std::string_view prompt, ProbeFraming framing) {
  switch (framing) {
    case ProbeFraming::BetweenTurns:
      return fmt::format("<|turn>user\n{}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", prompt);
    case ProbeFraming::AfterThought:
      return fmt::format("<channel|>\n<turn|>\n<|turn>user\n{}<turn|>\n<|turn>model\n<|channel>thought\n<channel|>", prompt);
    case ProbeFraming::Verbatim: break;
  }
  return std::string(prompt);
}

}  // namespace channel
