// Quantization on load (the original engine's --q4, --q8 and --quant): which type each weight
// matrix of a model is converted to while it loads. The choice follows llama.cpp's quantizer
// (`llama-quantize --pure` with --output-tensor-type / --token-embedding-type), so a file that
// llama.cpp quantized with the same settings holds the same bytes.
#pragma once

#include <optional>
#include <string_view>

#include "model/ggml_type.h"

namespace channel {

// What a weight matrix is to the conversion, named after llama.cpp's tensor categories.
enum class WeightRole {
  TokenEmbedding,  // token_embd and the E-models' per_layer_token_embd
  Output,          // output.weight, where a model has one
  Linear,          // every other layer matrix: attention q/k/v/o, FFN gate/up/down (experts' too), per-layer gate/proj
  KeptAsStored,    // per_layer_model_proj and MoE routers (ffn_gate_inp): llama.cpp never quantizes them
};

WeightRole weight_role_of(std::string_view tensor_name);

// Target types per role; nullopt keeps the stored type. The default converts nothing.
struct LoadConversion {
  std::optional<GgmlType> linear;
  std::optional<GgmlType> output;
  std::optional<GgmlType> token_embedding;

  bool converts_anything() const { return linear || output || token_embedding; }

  // --q4: the original engine's mixed mode.
  static LoadConversion q4_mix() { return {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::BF16}; }
  // --q8.
  static LoadConversion q8_mix() { return {GgmlType::Q8_0, GgmlType::Q8_0, GgmlType::BF16}; }
  // --quant TYPE: every weight matrix, embeddings included (Gemma's output is its embedding
  // matrix, so the output cannot take TYPE without them), as `llama-quantize --pure TYPE`.
  static LoadConversion uniform(GgmlType type) { return {type, type, type}; }
};

// The type a weight matrix of `role`, stored as `stored` with rows of `cols` values, is used in.
// A conversion only narrows: a quantized tensor is never requantized, and a target as wide as
// the stored type (F16 <-> BF16, or wider) keeps the stored type. A block type that does not
// divide the rows falls back to F16, as in llama.cpp. Norms and other vectors are not matrices
// and never reach this.
GgmlType target_type_on_load(const LoadConversion& conversion, WeightRole role, GgmlType stored, int64_t cols);

}  // namespace channel
