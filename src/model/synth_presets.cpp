#include "model/synth_presets.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "core/error.h"

namespace channel {
namespace {

struct PresetGeometry {
  std::string_view name;
  ModelArch arch;
  int layers;
  int hidden;
  int heads;
  int kv_heads_sliding;
  int kv_heads_global;
  int head_dim_sliding;
  int head_dim_global;
  int ffn;
  int sliding_window;
  float global_rope_linear_scaling;  // Gemma 3 global layers; 0: none
};

// Gemma 3 as gemma.cpp's configs.cc and the Hugging Face configs give it: one head geometry for
// all layers, linear RoPE scaling 8 on global layers except in 1B. Gemma 4's dense 12B and 31B
// (public configs): global layers have 512-wide heads and fewer KV heads.
constexpr std::array kPresets{
    PresetGeometry{.name = "gemma3-1b", .arch = ModelArch::Gemma3, .layers = 26, .hidden = 1152, .heads = 4,
                   .kv_heads_sliding = 1, .kv_heads_global = 1, .head_dim_sliding = 256, .head_dim_global = 256,
                   .ffn = 6912, .sliding_window = 512, .global_rope_linear_scaling = 0.0f},
    PresetGeometry{.name = "gemma3-4b", .arch = ModelArch::Gemma3, .layers = 34, .hidden = 2560, .heads = 8,
                   .kv_heads_sliding = 4, .kv_heads_global = 4, .head_dim_sliding = 256, .head_dim_global = 256,
                   .ffn = 10240, .sliding_window = 1024, .global_rope_linear_scaling = 8.0f},
    PresetGeometry{.name = "gemma3-12b", .arch = ModelArch::Gemma3, .layers = 48, .hidden = 3840, .heads = 16,
                   .kv_heads_sliding = 8, .kv_heads_global = 8, .head_dim_sliding = 256, .head_dim_global = 256,
                   .ffn = 15360, .sliding_window = 1024, .global_rope_linear_scaling = 8.0f},
    // 62 layers: ModelConfig gives this one the query scale 1/sqrt(hidden / heads) = 1/sqrt(168).
    PresetGeometry{.name = "gemma3-27b", .arch = ModelArch::Gemma3, .layers = 62, .hidden = 5376, .heads = 32,
                   .kv_heads_sliding = 16, .kv_heads_global = 16, .head_dim_sliding = 128, .head_dim_global = 128,
                   .ffn = 21504, .sliding_window = 1024, .global_rope_linear_scaling = 8.0f},
    PresetGeometry{.name = "gemma4-12b", .arch = ModelArch::Gemma4, .layers = 48, .hidden = 3840, .heads = 16,
                   .kv_heads_sliding = 8, .kv_heads_global = 1, .head_dim_sliding = 256, .head_dim_global = 512,
                   .ffn = 15360, .sliding_window = 1024, .global_rope_linear_scaling = 0.0f},
    PresetGeometry{.name = "gemma4-31b", .arch = ModelArch::Gemma4, .layers = 60, .hidden = 5376, .heads = 32,
                   .kv_heads_sliding = 16, .kv_heads_global = 4, .head_dim_sliding = 256, .head_dim_global = 512,
                   .ffn = 21504, .sliding_window = 1024, .global_rope_linear_scaling = 0.0f},
};

// Both families put one global layer after five sliding ones (layers 5, 11, 17, ...); Gemma 4's
// last layer is global too, which the synthesizer always makes it.
constexpr int kSlidingPeriod = 6;

}  // namespace

std::vector<std::string_view> synth_preset_names() {
  std::vector<std::string_view> names;
  for (const PresetGeometry& preset : kPresets) names.push_back(preset.name);
  return names;
}

SynthOptions synth_preset(std::string_view name) {
  const auto preset = std::find_if(kPresets.begin(), kPresets.end(),
                                   [name](const PresetGeometry& p) { return p.name == name; });
  if (preset == kPresets.end()) {
    fail("unknown synth preset '{}'; the presets are {}", name, fmt::join(synth_preset_names(), ", "));
  }
  SynthOptions o = default_synth_options(preset->arch);
  o.name = fmt::format("channel-synthetic-{}", preset->name);
  o.weight_type = GgmlType::Q4_0;
  o.embedding_type = GgmlType::Q8_0;
  o.share_layer_matrices = true;
  o.n_layer = preset->layers;
  o.n_embd = preset->hidden;
  o.n_head = preset->heads;
  o.n_head_kv = preset->kv_heads_sliding;
  o.n_head_kv_global = preset->kv_heads_global;
  o.head_dim = preset->head_dim_sliding;
  o.head_dim_global = preset->head_dim_global;
  o.n_ff = preset->ffn;
  o.sliding_window = preset->sliding_window;
  o.sliding_period = kSlidingPeriod;
  o.rope_scaling_factor = preset->global_rope_linear_scaling;
  // Gemma 4 global layers: proportional RoPE over a quarter of the frequency pairs, and no
  // attn_v (attention_k_eq_v), in both dense models.
  o.rotary_fraction = 0.25f;
  o.global_v_equals_k = true;
  return o;
}

}  // namespace channel
