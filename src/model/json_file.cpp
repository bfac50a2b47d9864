#include "model/json_file.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace channel {

using nlohmann::json;

json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}", path.string());
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    fail("{} is not valid JSON ({})", path.string(), e.what());
  }
}

JsonObject::JsonObject(const json& value, std::string where) : object_(&value), where_(std::move(where)) {
  if (!value.is_object()) fail("{} is not a JSON object", where_);
}

const json* JsonObject::find(std::string_view key) const {
  const auto it = object_->find(key);
  return it == object_->end() || it->is_null() ? nullptr : &*it;
}

std::string JsonObject::name(std::string_view key) const { return fmt::format("{}: \"{}\"", where_, key); }

std::optional<int64_t> JsonObject::optional_integer(std::string_view key, int64_t min, int64_t max) const {
  const json* value = find(key);
  if (!value) return std::nullopt;
  int64_t result = 0;
  if (value->is_number_integer()) {
    if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      fail("{} = {} is out of range ({}..{})", name(key), value->dump(), min, max);
    }
    result = value->get<int64_t>();
  } else {
    fail("{} must be an integer, not {}", name(key), value->dump());
  }
  if (result < min || result > max) fail("{} = {} is out of range ({}..{})", name(key), result, min, max);
  return result;
}

std::optional<double> JsonObject::optional_number(std::string_view key) const {
  const json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_number()) fail("{} must be a number, not {}", name(key), value->dump());
  const double result = value->get<double>();
  if (!std::isfinite(result)) fail("{} = {} is not finite", name(key), value->dump());
  return result;
}

std::optional<bool> JsonObject::optional_boolean(std::string_view key) const {
  const json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_boolean()) fail("{} must be true or false, not {}", name(key), value->dump());
  return value->get<bool>();
}

std::optional<std::string> JsonObject::optional_string(std::string_view key) const {
  const json* value = find(key);
  if (!value) return std::nullopt;
  if (!value->is_string()) fail("{} must be a string, not {}", name(key), value->dump());
  return value->get<std::string>();
}

std::optional<JsonObject> JsonObject::optional_object(std::string_view key) const {
  const json* value = find(key);
  if (!value) return std::nullopt;
  return JsonObject(*value, name(key));
}

int64_t JsonObject::integer(std::string_view key, int64_t min, int64_t max) const {
  if (auto value = optional_integer(key, min, max)) return *value;
  fail("{} has no \"{}\"", where_, key);
}

double JsonObject::number(std::string_view key) const {
  if (auto value = optional_number(key)) return *value;
  fail("{} has no \"{}\"", where_, key);
}

std::string JsonObject::string(std::string_view key) const {
  if (auto value = optional_string(key)) return *value;
  fail("{} has no \"{}\"", where_, key);
}

JsonObject JsonObject::object(std::string_view key) const {
  if (auto value = optional_object(key)) return *value;
  fail("{} has no \"{}\"", where_, key);
}

}  // namespace channel
