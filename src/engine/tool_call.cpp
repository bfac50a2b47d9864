#include "engine/tool_call.h"

#include <nlohmann/json.hpp>

#include "core/text.h"

namespace channel {
namespace {

using nlohmann::json;

constexpr std::string_view kQuote = "<|\"|>";
// Nesting deeper than this is refused rather than followed (the parser recurses).
constexpr int kMaxDepth = 64;

// A recursive-descent reader of the notation; the grammar follows llama.cpp's Gemma 4 tool-call
// parser (common/chat.cpp). Every method returns false on malformed input.
class NotationReader {
 public:
  explicit NotationReader(std::string_view text) : text_(text) {}

  bool read_document(json& out) {
    skip_spaces();
    if (!read_object(out, 0)) return false;
    skip_spaces();
    return pos_ == text_.size();
  }

 private:
  bool read_value(json& out, int depth) {
    if (depth > kMaxDepth) return false;
    skip_spaces();
    if (rest().starts_with(kQuote)) return read_string(out);
    if (peek('{')) return read_object(out, depth + 1);
    if (peek('[')) return read_array(out, depth + 1);
    for (const auto& [word, value] : {std::pair{"true", json(true)}, {"false", json(false)}, {"null", json(nullptr)}}) {
      if (rest().starts_with(word)) {
        pos_ += std::string_view(word).size();
        out = value;
        return true;
      }
    }
    return read_number(out);
  }

  bool read_string(json& out) {
    pos_ += kQuote.size();
    const size_t end = text_.find(kQuote, pos_);
    if (end == std::string_view::npos) return false;
    out = std::string(text_.substr(pos_, end - pos_));
    pos_ = end + kQuote.size();
    return true;
  }

  bool read_number(json& out) {
    // The longest prefix JSON accepts as a number; the JSON parser judges its form.
    const size_t start = pos_;
    while (pos_ < text_.size() && std::string_view("+-0123456789.eE").find(text_[pos_]) != std::string_view::npos) ++pos_;
    if (pos_ == start) return false;
    out = json::parse(text_.substr(start, pos_ - start), nullptr, /*allow_exceptions=*/false);
    return out.is_number();
  }

  bool read_object(json& out, int depth) {
    if (!take('{')) return false;
    out = json::object();
    skip_spaces();
    if (take('}')) return true;
    while (true) {
      skip_spaces();
      const size_t colon = text_.find(':', pos_);
      const size_t brace = text_.find('}', pos_);
      if (colon == std::string_view::npos || (brace != std::string_view::npos && brace < colon)) return false;
      const std::string key(trim(text_.substr(pos_, colon - pos_)));
      if (key.empty()) return false;
      pos_ = colon + 1;
      json value;
      if (!read_value(value, depth)) return false;
      out[key] = std::move(value);
      skip_spaces();
      if (take('}')) return true;
      if (!take(',')) return false;
    }
  }

  bool read_array(json& out, int depth) {
    if (!take('[')) return false;
    out = json::array();
    skip_spaces();
    if (take(']')) return true;
    while (true) {
      json value;
      if (!read_value(value, depth)) return false;
      out.push_back(std::move(value));
      skip_spaces();
      if (take(']')) return true;
      if (!take(',')) return false;
    }
  }

  std::string_view rest() const { return text_.substr(pos_); }
  bool peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }
  bool take(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }
  void skip_spaces() {
    while (pos_ < text_.size() && std::string_view(" \t\r\n").find(text_[pos_]) != std::string_view::npos) ++pos_;
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Where the arguments begin: the first '{' after the first ':' (npos if none).
size_t arguments_start(std::string_view body) {
  const size_t colon = body.find(':');
  return body.find('{', colon == std::string_view::npos ? 0 : colon + 1);
}

}  // namespace

ToolCall parse_tool_call(std::string_view notation, std::string_view text) {
  const size_t colon = notation.find(':');
  const size_t name_start = colon == std::string_view::npos ? 0 : colon + 1;
  const size_t brace = arguments_start(notation);
  ToolCall call;
  const std::string_view name =
      notation.substr(name_start, brace == std::string_view::npos ? std::string_view::npos : brace - name_start);
  call.name = std::string(trim(name, " \t\n\r\xe2\x96\x81"));
  call.arguments = brace == std::string_view::npos ? "{}" : std::string(trim(notation.substr(brace)));
  const size_t text_brace = arguments_start(text);
  call.json_arguments = text_brace == std::string_view::npos ? std::optional<std::string>("{}")
                                                             : tool_arguments_to_json(text.substr(text_brace));
  return call;
}

std::optional<std::string> tool_arguments_to_json(std::string_view notation) {
  json document;
  if (!NotationReader(notation).read_document(document)) return std::nullopt;
  // Strings may hold any bytes the model wrote; invalid UTF-8 is replaced, never thrown on.
  return document.dump(-1, ' ', /*ensure_ascii=*/false, json::error_handler_t::replace);
}

}  // namespace channel
