#include "model/load_conversion.h"

namespace channel {
namespace {

double bits_per_value(GgmlType type) {
  const GgmlTypeTraits& traits = ggml_type_traits(type);
  return 8.0 * static_cast<double>(traits.block_bytes) / static_cast<double>(traits.block_elements);
}

}  // namespace

WeightRole weight_role_of(std::string_view tensor_name) {
  if (tensor_name == "token_embd.weight" || tensor_name == "per_layer_token_embd.weight") {
    return WeightRole::TokenEmbedding;
  }
  if (tensor_name == "output.weight") return WeightRole::Output;
  // llama.cpp's quantizer never quantizes these: per_layer_model_proj, and MoE routers (ffn_gate_inp).
  if (tensor_name == "per_layer_model_proj.weight" || tensor_name.ends_with(".ffn_gate_inp.weight")) {
    return WeightRole::KeptAsStored;
  }
  return WeightRole::Linear;
}

GgmlType target_type_on_load(const LoadConversion& conversion, WeightRole role, GgmlType stored, int64_t cols) {
  std::optional<GgmlType> wanted;
  switch (role) {
    case WeightRole::TokenEmbedding: wanted = conversion.token_embedding; break;
    case WeightRole::Output: wanted = conversion.output; break;
    case WeightRole::Linear: wanted = conversion.linear; break;
    case WeightRole::KeptAsStored: break;
  }
  if (!wanted || is_quantized(stored)) return stored;
  GgmlType target = *wanted;
  if (cols % ggml_type_traits(target).block_elements != 0) target = GgmlType::F16;
  return bits_per_value(target) < bits_per_value(stored) ? target : stored;
}

}  // namespace channel
