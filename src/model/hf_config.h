// config.json of a Hugging Face Gemma directory -> the GGUF metadata that llama.cpp's converter
// (convert_hf_to_gguf.py; conversion/gemma.py's Gemma3Model and Gemma4Model over base.py's
// TextModel) writes for it, read from the same keys. ModelConfig then resolves that metadata
// exactly as it resolves the converted file's, so a directory and its GGUF conversion give the
// same model.
//
// The converter reads the config through transformers (AutoConfig.from_pretrained(...).to_dict()),
// so a key the file leaves out has the value of transformers' config class, not the converter's
// own fallback: published configs are saved with only the keys that differ from those defaults
// (Gemma 3 4B's text_config has six). The defaults used here are Gemma3TextConfig's,
// Gemma4TextConfig's and Gemma4UnifiedTextConfig's (transformers' configuration_gemma3.py,
// configuration_gemma4.py, configuration_gemma4_unified.py), including Gemma 4's derived ones:
// layer_types 5 sliding : 1 global with the last layer global, global_head_dim 512 (or
// per_layer_config's), the global KV heads only with attention_k_eq_v, hidden_size_per_layer_input
// 256 (a dense config says 0; the unified class has none, so 0), and num_experts / top_k_experts /
// moe_intermediate_size None.
//
// Supported: Gemma3ForCausalLM, Gemma3ForConditionalGeneration (text part), Gemma4ForCausalLM,
// Gemma4ForConditionalGeneration (text part) and Gemma4UnifiedForConditionalGeneration (the 12B's
// text decoder, which the converter converts as Gemma 4's): dense models, E-models (per-layer
// embeddings, KV-shared layers, the double-wide MLP) and mixtures of experts. Refused, naming the
// feature: other architectures, RoPE scalings other than linear, activations other than
// GELU-tanh, and bidirectional (encoder) attention.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/gguf.h"
#include "model/model_config.h"

namespace channel {

struct HfModelDescription {
  ModelArch arch = ModelArch::Gemma3;
  // The converter's hparams: config.json with its text_config's keys moved to the top level
  // (TextModel.__init__) and the config class's defaults for the keys it leaves out.
  nlohmann::json hparams;
  std::vector<std::pair<std::string, GgufValue>> metadata;  // general.architecture and "<arch>.*"
  // Gemma 3 checkpoints store RMSNorm weights as w where the model multiplies by 1 + w; the
  // converter adds the 1 to every tensor whose name ends in "norm.weight" (Gemma3Model.norm_shift).
  bool norm_weights_plus_one = false;
  // Gemma 4: the `rope_freqs` tensor the converter generates for the global layers' proportional
  // RoPE (1 for the rotated pairs, 1e30 for the rest; Gemma4Model.generate_extra_tensors).
  std::vector<float> rope_freqs;
  // Gemma 3: the checkpoint's query scale is 1/sqrt(query_pre_attn_scalar); the converter does not
  // store it (llama.cpp derives it from the geometry), so the loader checks that the two agree.
  std::optional<double> query_pre_attn_scalar;
};

// `where` names the file in messages (".../config.json").
HfModelDescription describe_hf_model(const nlohmann::json& config, const std::string& where);


}  // namespace channel
