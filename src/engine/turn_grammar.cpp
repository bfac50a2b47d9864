#include "engine/turn_grammar.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

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

// Keys in byte order, as the original sorts them (nlohmann's object_t is a std::map: sorted).
std::string render_parameters(const json& parameters) {
  std::string out = ",parameters:{";
  if (const auto properties = parameters.find("properties"); properties != parameters.end() && properties->is_object()) {
    out += "properties:{";
    bool first = true;
    for (const auto& [key, property] : properties->items()) {
      if (!first) out += ",";
      first = false;
      out += key + ":{";
      std::string type = "STRING";
      if (property.is_object()) {
        if (const auto d = property.find("description"); d != property.end() && d->is_string()) {
          out += "description:" + gemma_string(d->get<std::string>()) + ",";
        }
        if (const auto t = property.find("type"); t != property.end() && t->is_string()) {
          type = upper(t->get<std::string>(), 32);
        }
        if (type == "ARRAY") out += "items:{type:" + gemma_string("STRING") + "},";
      }
      out += "type:" + gemma_string(type) + "}";
    }
    out += "},";
  }
  if (const auto required = parameters.find("required");
      required != parameters.end() && required->is_array() && !required->empty()) {
    out += "required:[";
    bool first = true;
    for (const auto& item : *required) {
      if (!first) out += ",";
      first = false;
      out += gemma_string(item.is_string() ? item.get<std::string>() : item.dump());
    }
    out += "],";
  }
  out += "type:" + gemma_string("OBJECT") + "}";
  return out;
}

// A JSON value in Gemma's tool notation: unquoted keys, strings between <|"|> tokens.
std::string render_value(const json& value) {
  switch (value.type()) {
    case json::value_t::object: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ",";
        first = false;
        out += key + ":" + render_value(item);
      }
      return out + "}";
    }
    case json::value_t::array: {
      std::string out = "[";
      for (size_t i = 0; i < value.size(); ++i) out += (i ? "," : "") + render_value(value[i]);
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
  std::string instructions;
  if (const auto i = parsed.find("instructions"); i != parsed.end() && i->is_string()) {
    instructions = i->get<std::string>() + "\n";
  }
  if (arch == ModelArch::Gemma3) {
    // Gemma 3 has no system role or tool tokens: the instructions open the first user turn.
    return fmt::format("<start_of_turn>user\n{}<end_of_turn>\n", instructions);
  }
  std::string out = "<|turn>system\n<|think|>\n" + instructions;
  if (const auto tools = parsed.find("tools"); tools != parsed.end() && tools->is_array()) {
    for (const json& tool : *tools) {
      if (!tool.is_object()) continue;
      const std::string name = tool.value("name", std::string());
      const std::string description = tool.contains("description") && tool["description"].is_string()
                                          ? tool["description"].get<std::string>()
                                          : std::string();
      out += "<|tool>declaration:" + name + "{description:" + gemma_string(description);
      if (const auto p = tool.find("parameters"); p != tool.end() && p->is_object()) out += render_parameters(*p);
      out += "}<tool|>";
    }
  }
  return out + "<turn|>\n";
}

std::string render_tool_response(std::string_view name, std::string_view result) {
  const json parsed = json::parse(result, nullptr, /*allow_exceptions=*/false);
  std::string body;
  bool error = false;
  if (parsed.is_discarded()) {
    body = "{value:" + gemma_string(result) + "}";
    error = result.find("error") != std::string_view::npos;
  } else if (parsed.is_object()) {
    body = render_value(parsed);
    error = parsed.contains("error");
  } else {
    body = "{value:" + render_value(parsed) + "}";
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
