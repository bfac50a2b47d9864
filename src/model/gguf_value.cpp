// GgufValue: constructors, typed accessors and comparison.
#include <bit>
#include <limits>

#include "core/error.h"
#include "model/gguf.h"

namespace channel {

std::string_view gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::UINT8: return "u8";
    case GgufValueType::INT8: return "i8";
    case GgufValueType::UINT16: return "u16";
    case GgufValueType::INT16: return "i16";
    case GgufValueType::UINT32: return "u32";
    case GgufValueType::INT32: return "i32";
    case GgufValueType::FLOAT32: return "f32";
    case GgufValueType::BOOL: return "bool";
    case GgufValueType::STRING: return "string";
    case GgufValueType::ARRAY: return "array";
    case GgufValueType::UINT64: return "u64";
    case GgufValueType::INT64: return "i64";
    case GgufValueType::FLOAT64: return "f64";
  }
  return "unknown";
}

GgufValue GgufValue::u8(uint8_t v) { return {GgufValueType::UINT8, uint64_t{v}, nullptr}; }
GgufValue GgufValue::i8(int8_t v) { return {GgufValueType::INT8, int64_t{v}, nullptr}; }
GgufValue GgufValue::u16(uint16_t v) { return {GgufValueType::UINT16, uint64_t{v}, nullptr}; }
GgufValue GgufValue::i16(int16_t v) { return {GgufValueType::INT16, int64_t{v}, nullptr}; }
GgufValue GgufValue::u32(uint32_t v) { return {GgufValueType::UINT32, uint64_t{v}, nullptr}; }
GgufValue GgufValue::i32(int32_t v) { return {GgufValueType::INT32, int64_t{v}, nullptr}; }
GgufValue GgufValue::u64(uint64_t v) { return {GgufValueType::UINT64, v, nullptr}; }
GgufValue GgufValue::i64(int64_t v) { return {GgufValueType::INT64, v, nullptr}; }
GgufValue GgufValue::f32(float v) { return {GgufValueType::FLOAT32, double{v}, nullptr}; }
GgufValue GgufValue::f64(double v) { return {GgufValueType::FLOAT64, v, nullptr}; }
GgufValue GgufValue::boolean(bool v) { return {GgufValueType::BOOL, v, nullptr}; }

GgufValue GgufValue::string(std::string v) {
  // The view points into the heap-allocated string, which stays put when the value is copied
  // or moved (copies share it).
  auto owned = std::make_shared<std::string>(std::move(v));
  return {GgufValueType::STRING, std::string_view(*owned), owned};
}

GgufValue GgufValue::array(GgufValueType element_type, std::vector<GgufValue> elements) {
  auto array = std::make_shared<GgufArray>(GgufArray{element_type, std::move(elements)});
  return {GgufValueType::ARRAY, std::move(array), nullptr};
}

int64_t GgufValue::as_int(std::string_view what) const {
  if (const auto* value = std::get_if<int64_t>(&data)) return *value;
  if (const auto* value = std::get_if<uint64_t>(&data)) {
    if (*value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail("{} is {}, which is too large", what, *value);
    }
    return static_cast<int64_t>(*value);
  }
  fail("{} must be an integer, not {}", what, gguf_value_type_name(type));
}

double GgufValue::as_float(std::string_view what) const {
  if (const auto* value = std::get_if<double>(&data)) return *value;
  if (const auto* value = std::get_if<int64_t>(&data)) return static_cast<double>(*value);
  if (const auto* value = std::get_if<uint64_t>(&data)) return static_cast<double>(*value);
  fail("{} must be a number, not {}", what, gguf_value_type_name(type));
}

bool GgufValue::as_bool(std::string_view what) const {
  if (const auto* value = std::get_if<bool>(&data)) return *value;
  fail("{} must be a bool, not {}", what, gguf_value_type_name(type));
}

std::string_view GgufValue::as_string(std::string_view what) const {
  if (const auto* value = std::get_if<std::string_view>(&data)) return *value;
  fail("{} must be a string, not {}", what, gguf_value_type_name(type));
}

const GgufArray& GgufValue::as_array(std::string_view what) const {
  const auto* value = std::get_if<std::shared_ptr<GgufArray>>(&data);
  if (value == nullptr || *value == nullptr)
    fail("{} must be an array, not {}", what, gguf_value_type_name(type));
  return **value;
}

bool operator==(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type || a.data.index() != b.data.index()) return false;
  if (const auto* x = std::get_if<double>(&a.data)) {
    return std::bit_cast<uint64_t>(*x) == std::bit_cast<uint64_t>(std::get<double>(b.data));
  }
  if (const auto* x = std::get_if<std::shared_ptr<GgufArray>>(&a.data)) {
    const auto& y = std::get<std::shared_ptr<GgufArray>>(b.data);
    if (*x == nullptr || y == nullptr) return *x == y;
    return (*x)->element_type == y->element_type && (*x)->elements == y->elements;
  }
  return a.data == b.data;  // integers, bools and strings (string_view compares the characters)
}

}  // namespace channel
