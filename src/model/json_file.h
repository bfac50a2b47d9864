// The JSON files of a Hugging Face model directory (config.json, tokenizer.json, the safetensors
// index, ...): reading one, and typed look-ups whose errors name the file and the key, so that a
// malformed file is one line a user can act on.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace channel {

// Throws channel::Error "cannot read PATH" or "PATH is not valid JSON (...)".
nlohmann::json read_json_file(const std::filesystem::path& path);

// One JSON object and where it came from ("DIR/config.json", "DIR/config.json: text_config").
// A key whose value is null counts as absent, as Python's dict.get sees it in the converter
// (`hparams.get("final_logit_softcapping")` is None either way).
class JsonObject {
 public:
  // Fails unless `value` is an object. The object must outlive this view.
  JsonObject(const nlohmann::json& value, std::string where);

  const std::string& where() const { return where_; }
  const nlohmann::json& value() const { return *object_; }
  const nlohmann::json* find(std::string_view key) const;  // null when absent or null
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Required values; each fails naming the key when absent or of another type. Integers must be
  // whole numbers in [min, max].
  int64_t integer(std::string_view key, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  double number(std::string_view key) const;
  std::string string(std::string_view key) const;
  JsonObject object(std::string_view key) const;

  std::optional<int64_t> optional_integer(std::string_view key, int64_t min = INT64_MIN, int64_t max = INT64_MAX) const;
  std::optional<double> optional_number(std::string_view key) const;
  std::optional<bool> optional_boolean(std::string_view key) const;
  std::optional<std::string> optional_string(std::string_view key) const;
  std::optional<JsonObject> optional_object(std::string_view key) const;

  // "WHERE: KEY" for messages about a value that is present but wrong.
  std::string name(std::string_view key) const;

 private:
  const nlohmann::json* object_;
  std::string where_;
};

}  // namespace channel
