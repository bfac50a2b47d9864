#include "model/ggml_type.h"

#include <array>
#include <cctype>

#include "core/error.h"

namespace channel {
namespace {

constexpr std::array<GgmlTypeTraits, 5> kSupported = {{
    {GgmlType::F32, "f32", 1, 4},
    {GgmlType::F16, "f16", 1, 2},
    {GgmlType::Q4_0, "q4_0", kQuantBlock, sizeof(BlockQ4_0)},
    {GgmlType::Q8_0, "q8_0", kQuantBlock, sizeof(BlockQ8_0)},
    {GgmlType::BF16, "bf16", 1, 2},
}};

// Names of all ggml type ids (ggml.h), so an unsupported type is named in errors.
constexpr std::array<std::string_view, 40> kAllNames = {
    "f32",    "f16",   "q4_0",    "q4_1",    "q4_2",   "q4_3",  "q5_0",    "q5_1",    "q8_0",   "q8_1",
    "q2_K",   "q3_K",  "q4_K",    "q5_K",    "q6_K",   "q8_K",  "iq2_xxs", "iq2_xs",  "iq3_xxs", "iq1_s",
    "iq4_nl", "iq3_s", "iq2_s",   "iq4_xs",  "i8",     "i16",   "i32",     "i64",     "f64",    "iq1_m",
    "bf16",   "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0", "tq2_0", "iq4_nl_4_4", "iq4_nl_4_8",
    "iq4_nl_8_8", "mxfp4"};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
  for (const auto& traits : kSupported) {
    if (static_cast<uint32_t>(traits.type) == type_id) return traits;
  }
  return std::nullopt;
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) {
  for (const auto& traits : kSupported) {
    if (traits.type == type) return traits;
  }
  fail("internal error: unsupported ggml type {}", static_cast<uint32_t>(type));
}

std::string_view ggml_type_name(uint32_t type_id) {
  if (type_id < kAllNames.size()) return kAllNames[type_id];
  return "unknown";
}

size_t ggml_row_bytes(GgmlType type, int64_t n_elements) {
  const auto& traits = ggml_type_traits(type);
  if (n_elements < 0 || n_elements % traits.block_elements != 0) {
    fail("a row of {} values cannot be stored as {} (blocks of {})", n_elements, traits.name,
         traits.block_elements);
  }
  return static_cast<size_t>(n_elements / traits.block_elements) * traits.block_bytes;
}

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
  std::string lower;
  for (char c : name) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (const auto& traits : kSupported) {
    if (traits.name == lower) return traits.type;
  }
  return std::nullopt;
}

}  // namespace channel
