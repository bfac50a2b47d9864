#include "model/hf_tensor_names.h"

#include <array>
#include <charconv>
#include <utility>

#include "core/error.h"

namespace channel {
namespace {

// TextModel.filter_tensors: multimodal parts a text conversion skips (the patterns that can occur
// in a Gemma 3 or Gemma 4 checkpoint, e.g. vision_tower.*, multi_modal_projector.*,
// embed_vision.*, audio_tower.*, embed_audio.*, and the 12B's vision_embedder.*).
bool is_multimodal(std::string_view name) {
  for (std::string_view part : {"vision_", "vision.", "visual.", "audio_", "audio.", "projector.", "patch_embed"}) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  return false;
}

// ModelBase.prepare_tensors drops these caches.
bool is_dropped_cache(std::string_view name) {
  for (std::string_view suffix : {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"}) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kModelTensors = {{
    {"model.embed_tokens.weight", "token_embd.weight"},
    {"model.norm.weight", "output_norm.weight"},
    {"lm_head.weight", "output.weight"},
    // Gemma 4 E-models' per-layer embeddings (gguf-py's PER_LAYER_* names, shared with Gemma 3n).
    {"model.embed_tokens_per_layer.weight", "per_layer_token_embd.weight"},
    {"model.per_layer_model_projection.weight", "per_layer_model_proj.weight"},
    {"model.per_layer_projection_norm.weight", "per_layer_proj_norm.weight"},
}};

// model.layers.N.<hf> -> blk.N.<gguf>.
constexpr std::array<std::pair<std::string_view, std::string_view>, 25> kLayerTensors = {{
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"post_attention_layernorm.weight", "post_attention_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
    {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
    // Gemma 4's per-layer output scalar: the converter appends ".weight" (Gemma4Model.filter_tensors).
    {"layer_scalar", "layer_output_scale.weight"},
    // Gemma 4 E-models: the per-layer input's gate, projection and norm.
    {"per_layer_input_gate.weight", "inp_gate.weight"},
    {"per_layer_projection.weight", "proj.weight"},
    {"post_per_layer_input_norm.weight", "post_norm.weight"},
    // Gemma 4 mixture of experts, beside the dense MLP above: its norms, the router
    // (Gemma4Model.modify_tensors renames router.scale and router.per_expert_scale to the ".scale"
    // of ffn_gate_inp and ffn_down_exps), and the experts, stored as 3-D parameters without
    // ".weight", which Gemma4Model.filter_tensors appends. Their layouts are the GGUF's:
    // gate_up_proj [experts, 2 * moe_intermediate_size (gate rows, then up), hidden], down_proj
    // [experts, hidden, moe_intermediate_size].
    {"pre_feedforward_layernorm_2.weight", "pre_ffw_norm_2.weight"},
    {"post_feedforward_layernorm_1.weight", "post_ffw_norm_1.weight"},
    {"post_feedforward_layernorm_2.weight", "post_ffw_norm_2.weight"},
    {"router.proj.weight", "ffn_gate_inp.weight"},
    {"router.scale", "ffn_gate_inp.scale"},
    {"router.per_expert_scale", "ffn_down_exps.scale"},
    {"experts.gate_up_proj", "ffn_gate_up_exps.weight"},
    {"experts.down_proj", "ffn_down_exps.weight"},
}};

std::optional<std::string> layer_tensor(std::string_view name) {
  constexpr std::string_view kPrefix = "model.layers.";
  if (!name.starts_with(kPrefix)) return std::nullopt;
  const std::string_view rest = name.substr(kPrefix.size());
  int layer = -1;
  const auto [end, error] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (error != std::errc() || end == rest.data() || *end != '.' || layer < 0) return std::nullopt;
  const std::string_view suffix = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
  for (const auto& [hf, gguf] : kLayerTensors) {
    if (suffix == hf) return fmt::format("blk.{}.{}", layer, gguf);
  }
  return std::nullopt;
}

}  // namespace

std::string hf_name_of_gguf_tensor(std::string_view gguf_name, std::string_view text_prefix) {
  if (gguf_name == "output.weight") return "lm_head.weight";
  for (const auto& [hf, gguf] : kModelTensors) {
    if (gguf_name == gguf) return fmt::format("{}{}", text_prefix, hf.substr(std::string_view("model.").size()));
  }
  constexpr std::string_view kPrefix = "blk.";
  if (!gguf_name.starts_with(kPrefix)) return "";
  const std::string_view rest = gguf_name.substr(kPrefix.size());
  const size_t dot = rest.find('.');
  if (dot == std::string_view::npos) return "";
  for (const auto& [hf, gguf] : kLayerTensors) {
    if (rest.substr(dot + 1) == gguf) return fmt::format("{}layers.{}.{}", text_prefix, rest.substr(0, dot), hf);
  }
  return "";
}

std::optional<std::string> gguf_name_of_hf_tensor(std::string_view hf_name) {
  // ModelBase.filter_tensors: Gemma3/4ForConditionalGeneration keep the text model under
  // "language_model." (model.language_model.layers.0... or language_model.model.layers.0...).
  std::string name(hf_name);
  for (size_t at = name.find("language_model."); at != std::string::npos; at = name.find("language_model.", at)) {
    name.erase(at, std::string_view("language_model.").size());
  }
  if (is_multimodal(name) || is_dropped_cache(name)) return std::nullopt;
  for (const auto& [hf, gguf] : kModelTensors) {
    if (name == hf) return std::string(gguf);
  }
  if (auto mapped = layer_tensor(name)) return mapped;
  fail("tensor '{}' is not one of a Gemma 3 or Gemma 4 text model (llama.cpp's converter would not map it either)",
       hf_name);
}

}  // namespace channel
