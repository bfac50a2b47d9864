#include "model/hf_config.h"

#include <fmt/ranges.h>

#include <cmath>
#include <initializer_list>
#include <map>

#include "core/error.h"
#include "model/json_file.h"

namespace channel {
namespace {

using nlohmann::json;

// The metadata under construction. A key set twice keeps the later value in the first key's
// place, as gguf-py's writer does (Gemma3Model overrides some of TextModel's keys).
class ArchMetadata {
 public:
  explicit ArchMetadata(std::string arch) : arch_(std::move(arch)) { set_key("general.architecture", GgufValue::string(arch_)); }

  void set(std::string_view suffix, GgufValue value) { set_key(fmt::format("{}.{}", arch_, suffix), std::move(value)); }
  void set_u32(std::string_view suffix, int64_t value) { set(suffix, GgufValue::u32(static_cast<uint32_t>(value))); }
  void set_f32(std::string_view suffix, double value) { set(suffix, GgufValue::f32(static_cast<float>(value))); }
  // gguf-py's add_array of Python ints: INT32 elements.
  void set_i32_array(std::string_view suffix, const std::vector<int64_t>& values) {
    std::vector<GgufValue> elements;
    for (int64_t v : values) elements.push_back(GgufValue::i32(static_cast<int32_t>(v)));
    set(suffix, GgufValue::array(GgufValueType::INT32, std::move(elements)));
  }
  void set_bool_array(std::string_view suffix, const std::vector<bool>& values) {
    std::vector<GgufValue> elements;
    for (bool v : values) elements.push_back(GgufValue::boolean(v));
    set(suffix, GgufValue::array(GgufValueType::BOOL, std::move(elements)));
  }

  std::vector<std::pair<std::string, GgufValue>> take() { return std::move(entries_); }

 private:
  void set_key(std::string key, GgufValue value) {
    if (const auto it = index_.find(key); it != index_.end()) {
      entries_[it->second].second = std::move(value);
      return;
    }
    index_.emplace(key, entries_.size());
    entries_.emplace_back(std::move(key), std::move(value));
  }

  std::string arch_;
  std::vector<std::pair<std::string, GgufValue>> entries_;
  std::map<std::string, size_t> index_;
};

constexpr int64_t kMaxSize = 1 << 24;  // bounds every size before it reaches int arithmetic

// ModelBase.find_hparam: the value of the first of `keys` the hparams hold, a null one included
// (to_dict() holds Gemma4TextConfig's num_experts = None, which ends the search); nullopt when
// that value is null or none of the keys is there.
std::optional<int64_t> find_hparam(const JsonObject& hparams, std::initializer_list<const char*> keys, int64_t max) {
  for (const char* key : keys) {
    if (hparams.value().contains(key)) return hparams.optional_integer(key, 0, max);
  }
  return std::nullopt;
}

// The converter's architecture: architectures[0], or text_config's when it has one.
std::string architecture_of(const JsonObject& config) {
  const auto first = [](const JsonObject& object) -> std::optional<std::string> {
    const json* list = object.find("architectures");
    if (!list) return std::nullopt;
    if (!list->is_array() || list->empty() || !(*list)[0].is_string()) {
      fail("{} must be a non-empty list of strings", object.name("architectures"));
    }
    return (*list)[0].get<std::string>();
  };
  std::optional<std::string> arch = first(config);
  if (const auto text = config.optional_object("text_config")) {  // also checks that it is an object
    if (auto text_arch = first(*text)) arch = text_arch;
  }
  if (!arch) fail("{} has no \"architectures\": cannot tell which model it is", config.where());
  return *arch;
}

// The transformers config class that AutoConfig builds for an architecture: its defaults are what
// the converter sees for the keys a config.json leaves out.
enum class TextConfigClass { Gemma3Text, Gemma4Text, Gemma4UnifiedText };

TextConfigClass config_class_of(const std::string& architecture, const std::string& where) {
  if (architecture == "Gemma3ForCausalLM" || architecture == "Gemma3ForConditionalGeneration") return TextConfigClass::Gemma3Text;
  if (architecture == "Gemma4ForCausalLM" || architecture == "Gemma4ForConditionalGeneration") return TextConfigClass::Gemma4Text;
  // The 12B "unified" (encoder-free) model: conversion/gemma.py's Gemma4UnifiedModel is a
  // Gemma4Model with model_arch GEMMA4, so its text decoder converts as any Gemma 4's.
  if (architecture == "Gemma4UnifiedForConditionalGeneration") return TextConfigClass::Gemma4UnifiedText;
  fail("{}: architecture '{}' is not supported: Channel reads Gemma3ForCausalLM, Gemma3ForConditionalGeneration, "
       "Gemma4ForCausalLM, Gemma4ForConditionalGeneration and Gemma4UnifiedForConditionalGeneration directories",
       where, architecture);
}

ModelArch arch_of(TextConfigClass config_class) {
  return config_class == TextConfigClass::Gemma3Text ? ModelArch::Gemma3 : ModelArch::Gemma4;
}

// TextModel.__init__: hparams = {**config, **config["text_config"]}, where config is transformers'
// to_dict(): every key the file leaves out has its config class's default.
json text_hparams(const JsonObject& config, TextConfigClass config_class) {
  json hparams = config.value();
  if (const auto text = config.optional_object("text_config")) {
    for (const auto& [key, value] : text->value().items()) hparams[key] = value;
  }
  const auto set_default = [&](const char* key, json value) {
    if (!hparams.contains(key)) hparams[key] = std::move(value);
  };
  // The defaults all three config classes share.
  set_default("num_attention_heads", 8);
  set_default("num_key_value_heads", 4);
  set_default("head_dim", 256);
  set_default("hidden_activation", "gelu_pytorch_tanh");
  set_default("rms_norm_eps", 1e-6);
  set_default("hidden_size", 2304);
  set_default("intermediate_size", 9216);
  if (config_class == TextConfigClass::Gemma3Text) {
    set_default("vocab_size", 262208);
    set_default("num_hidden_layers", 26);
    set_default("max_position_embeddings", 131072);
    set_default("rope_theta", 1'000'000.0);
    set_default("rope_local_base_freq", 10'000.0);
    set_default("query_pre_attn_scalar", 256);
    set_default("sliding_window", 4096);
    set_default("sliding_window_pattern", 6);
    return hparams;
  }
  set_default("vocab_size", 262144);
  set_default("num_hidden_layers", 30);
  set_default("num_kv_shared_layers", 0);
  set_default("attention_k_eq_v", false);
  set_default("rope_parameters", json{{"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 10'000.0}}},
                                      {"full_attention", {{"rope_type", "proportional"}, {"partial_rotary_factor", 0.25},
                                                          {"rope_theta", 1'000'000.0}}}});
  if (config_class == TextConfigClass::Gemma4UnifiedText) {
    // Gemma4UnifiedTextConfig (configuration_gemma4_unified.py) has no per-layer-input or expert
    // attributes, so a config without them has none: the converter's hparams.get(...) or 0 and
    // find_hparam(optional=True) write 0 and no expert keys.
    set_default("max_position_embeddings", 262144);
    set_default("sliding_window", 1024);
    return hparams;
  }
  set_default("max_position_embeddings", 131072);
  set_default("sliding_window", 512);
  set_default("hidden_size_per_layer_input", 256);  // so a dense model's config says 0
  // None in to_dict(), so the converter's find_hparam stops at them and writes no expert keys.
  set_default("num_experts", nullptr);
  set_default("top_k_experts", nullptr);
  set_default("moe_intermediate_size", nullptr);
  return hparams;
}

// TextModel.__init__'s rope_parameters: rope_parameters or rope_scaling, with rope_theta,
// rope_local_base_freq and partial_rotary_factor mirrored in when it is not already split into
// full_attention / sliding_attention parts.
json rope_parameters_of(const JsonObject& hparams) {
  json rope = json::object();
  if (const json* given = hparams.find("rope_parameters")) {
    rope = *given;
  } else if (const json* scaling = hparams.find("rope_scaling")) {
    rope = *scaling;
  }
  if (!rope.is_object()) fail("{} must be an object", hparams.name(hparams.has("rope_parameters") ? "rope_parameters" : "rope_scaling"));
  if (!rope.contains("full_attention") && !rope.contains("sliding_attention")) {
    if (const json* local = hparams.find("rope_local_base_freq")) rope["sliding_attention"] = {{"rope_theta", *local}};
    if (!rope.contains("rope_theta")) {
      if (const json* theta = hparams.find("rope_theta")) rope["rope_theta"] = *theta;
    }
    if (!rope.contains("rope_type") && rope.contains("type")) rope["rope_type"] = rope["type"];
    if (!rope.contains("partial_rotary_factor")) {
      if (const json* factor = hparams.find("partial_rotary_factor")) rope["partial_rotary_factor"] = *factor;
    }
  }
  return rope;
}

void refuse_unsupported(const JsonObject& hparams, ModelArch arch) {
  if (const auto activation = hparams.optional_string("hidden_activation"); activation && *activation != "gelu_pytorch_tanh") {
    fail("{} = '{}' is not supported: Gemma's FFN is GELU-tanh (gelu_pytorch_tanh)", hparams.name("hidden_activation"), *activation);
  }
  if (hparams.optional_string("use_bidirectional_attention") == "all") {
    fail("{}: use_bidirectional_attention = \"all\" makes an encoder, not a causal language model", hparams.where());
  }
  if (arch == ModelArch::Gemma3) {
    // Gemma 3 has no experts (Gemma 4's are read: set_common_keys' expert keys, hf_tensor_names).
    for (const char* key : {"num_experts", "num_local_experts"}) {
      if (const int64_t n = hparams.optional_integer(key).value_or(0); n > 0) {
        fail("{}: {} = {}: Gemma 3 has no mixture-of-experts variant", hparams.where(), key, n);
      }
    }
    if (hparams.has("attn_logit_softcapping")) {
      fail("{} is set; Gemma 3 has none and the converter refuses it", hparams.name("attn_logit_softcapping"));
    }
  }
}

// Linear scaling (TextModel.set_gguf_parameters, from the full-attention part) is the only one
// the engine computes; "default" and Gemma 4's "proportional" (expressed by rope_freqs) need
// no key. Anything else would be computed wrongly, so it is refused.
void set_rope_scaling(ArchMetadata& out, const JsonObject& rope_full, ModelArch arch) {
  const auto type = rope_full.optional_string("rope_type");
  if (!type || *type == "default") return;
  if (*type == "proportional" && arch == ModelArch::Gemma4) return;
  if (*type != "linear") fail("{} = '{}' is not supported (Channel computes default and linear RoPE)", rope_full.name("rope_type"), *type);
  if (const auto factor = rope_full.optional_number("factor")) {
    out.set("rope.scaling.type", GgufValue::string("linear"));
    out.set_f32("rope.scaling.factor", *factor);
  }
}

// layer_types: one "sliding_attention" or "full_attention" per layer (Gemma4Model: sliding iff
// t == "sliding_attention"); nullopt when the config has none.
std::optional<std::vector<bool>> listed_sliding_layers(const JsonObject& hparams, int64_t n_layer) {
  const json* types = hparams.find("layer_types");
  if (!types) return std::nullopt;
  if (!types->is_array() || static_cast<int64_t>(types->size()) != n_layer) {
    fail("{} must list one type per layer ({})", hparams.name("layer_types"), n_layer);
  }
  std::vector<bool> sliding;
  for (const json& type : *types) {
    if (type != "sliding_attention" && type != "full_attention") {
      fail("{} holds {}; expected \"sliding_attention\" or \"full_attention\"", hparams.name("layer_types"), type.dump());
    }
    sliding.push_back(type == "sliding_attention");
  }
  return sliding;
}

// Gemma 3's layer types. The converter writes none (llama.cpp then assumes 5 sliding layers to
// 1 global); writing them out as one bool per layer says the same for every published
// checkpoint and stays right for a config whose layer_types say otherwise.
std::vector<bool> gemma3_sliding_layers(const JsonObject& hparams, int64_t n_layer) {
  if (auto listed = listed_sliding_layers(hparams, n_layer)) return *listed;
  // Gemma3TextConfig's default: layer i is global iff (i + 1) % sliding_window_pattern == 0.
  const int64_t period = hparams.optional_integer("sliding_window_pattern", 1, kMaxSize).value_or(6);
  std::vector<bool> sliding;
  for (int64_t il = 0; il < n_layer; ++il) sliding.push_back((il + 1) % period != 0);
  return sliding;
}

// Gemma4TextConfig.__post_init__: layer_types default to 5 sliding : 1 global, and the last layer
// is made global whatever they say.
std::vector<bool> gemma4_sliding_layers(const JsonObject& hparams, int64_t n_layer) {
  std::vector<bool> sliding;
  if (auto listed = listed_sliding_layers(hparams, n_layer)) {
    sliding = *listed;
  } else {
    for (int64_t il = 0; il < n_layer; ++il) sliding.push_back((il + 1) % 6 != 0);
  }
  sliding.back() = false;
  return sliding;
}

// Gemma 4's global layers: head size and KV heads. transformers turns global_head_dim (default
// 512) and num_global_key_value_heads (only where attention_k_eq_v) into per_layer_config entries
// of the full-attention layers, which is what a config saved by it holds instead; the converter
// reads either, the first full layer's entry for the latter.
struct GlobalLayerGeometry {
  int64_t head_dim = 512;
  std::optional<int64_t> n_head_kv;
};

GlobalLayerGeometry gemma4_global_geometry(const JsonObject& hparams, const std::vector<bool>& sliding) {
  GlobalLayerGeometry geometry;
  std::optional<JsonObject> first_full;
  if (const auto per_layer = hparams.optional_object("per_layer_config")) {
    for (size_t il = 0; il < sliding.size() && !first_full; ++il) {
      if (!sliding[il]) first_full = per_layer->optional_object(std::to_string(il));
    }
  }
  if (const auto head_dim = hparams.optional_integer("global_head_dim", 1, 8192)) {
    geometry.head_dim = *head_dim;
  } else if (first_full) {
    geometry.head_dim = first_full->optional_integer("head_dim", 1, 8192).value_or(geometry.head_dim);
  }
  const auto kv = hparams.optional_integer("num_global_key_value_heads", 1, 4096);
  if (kv && hparams.optional_boolean("attention_k_eq_v").value_or(false)) {
    geometry.n_head_kv = kv;
  } else if (first_full) {
    geometry.n_head_kv = first_full->optional_integer("num_key_value_heads", 1, 4096);
  }
  return geometry;
}

// TextModel.set_gguf_parameters and Gemma3Model.set_gguf_parameters (which Gemma 4 inherits); the
// converter's own fallbacks never apply, text_hparams has given every key its value.
void set_common_keys(ArchMetadata& out, const JsonObject& hparams, const JsonObject& rope) {
  out.set_u32("block_count", hparams.integer("num_hidden_layers", 1, 4096));
  out.set_u32("context_length", hparams.integer("max_position_embeddings", 1, 1 << 30));
  out.set_u32("embedding_length", hparams.integer("hidden_size", 1, kMaxSize));
  out.set_u32("feed_forward_length", hparams.integer("intermediate_size", 1, kMaxSize));
  out.set_u32("attention.head_count", hparams.integer("num_attention_heads", 1, 4096));
  out.set_f32("attention.layer_norm_rms_epsilon", hparams.number("rms_norm_eps"));
  const int64_t head_dim = hparams.integer("head_dim", 1, 8192);
  out.set_u32("attention.key_length", head_dim);
  out.set_u32("attention.value_length", head_dim);
  const JsonObject rope_full = rope.optional_object("full_attention").value_or(rope);
  out.set_f32("rope.freq_base", rope_full.optional_number("rope_theta").value_or(1'000'000.0));  // for global layers
  if (const auto sliding = rope.optional_object("sliding_attention")) {
    if (const auto theta = sliding->optional_number("rope_theta")) out.set_f32("rope.freq_base_swa", *theta);
  }
  if (const auto softcap = hparams.optional_number("final_logit_softcapping"); softcap && *softcap != 0.0) {
    out.set_f32("final_logit_softcapping", *softcap);
  }
  if (hparams.optional_integer("sliding_window_pattern").value_or(0) != 1) {
    out.set_u32("attention.sliding_window", hparams.integer("sliding_window", 1, 1 << 30));
  }
  out.set_u32("attention.head_count_kv", hparams.integer("num_key_value_heads", 1, 4096));
  // TextModel.set_gguf_parameters' expert keys, under the names it looks for (Gemma 4 26B-A4B:
  // num_experts and top_k_experts).
  if (const auto n = find_hparam(hparams, {"num_local_experts", "num_experts", "n_routed_experts"}, 4096)) {
    out.set_u32("expert_count", *n);
  }
  if (const auto n = find_hparam(hparams, {"num_experts_per_tok", "num_experts_per_token", "top_k_experts"}, 4096)) {
    out.set_u32("expert_used_count", *n);
  }
}

// Gemma4Model.set_gguf_parameters' E-model keys: the KV-shared layers at the end, the per-layer
// input width (hparams.get(...) or 0), and with use_double_wide_mlp the FFN width doubled on the
// shared layers, written as one width per layer.
void set_gemma4_e_model_keys(ArchMetadata& out, const JsonObject& hparams, int64_t n_layer) {
  const int64_t n_kv_shared = hparams.integer("num_kv_shared_layers", 0, n_layer);
  out.set_u32("attention.shared_kv_layers", n_kv_shared);
  out.set_u32("embedding_length_per_layer_input", hparams.optional_integer("hidden_size_per_layer_input", 0, kMaxSize).value_or(0));
  if (hparams.optional_boolean("use_double_wide_mlp").value_or(false)) {
    const int64_t n_ff = hparams.integer("intermediate_size", 1, kMaxSize / 2);
    std::vector<int64_t> per_layer;
    for (int64_t il = 0; il < n_layer; ++il) per_layer.push_back(il < n_layer - n_kv_shared ? n_ff : 2 * n_ff);
    out.set_i32_array("feed_forward_length", per_layer);
  }
}

// Gemma4Model.set_gguf_parameters and generate_extra_tensors.
void set_gemma4_keys(ArchMetadata& out, HfModelDescription& model, const JsonObject& hparams, const JsonObject& rope) {
  const int64_t n_layer = hparams.integer("num_hidden_layers", 1, 4096);
  set_gemma4_e_model_keys(out, hparams, n_layer);
  const std::vector<bool> sliding = gemma4_sliding_layers(hparams, n_layer);
  out.set_bool_array("attention.sliding_window_pattern", sliding);

  const GlobalLayerGeometry global = gemma4_global_geometry(hparams, sliding);
  const int64_t head_dim_full = global.head_dim;
  const int64_t head_dim_swa = hparams.integer("head_dim", 1, 8192);
  out.set_u32("attention.key_length", head_dim_full);
  out.set_u32("attention.value_length", head_dim_full);
  out.set_u32("attention.key_length_swa", head_dim_swa);
  out.set_u32("attention.value_length_swa", head_dim_swa);
  // find_hparam without optional=True: Gemma4TextConfig's to_dict() always holds
  // moe_intermediate_size (None when dense). Gemma4UnifiedTextConfig's holds it only when the file
  // does (the 12B's conversion script writes None); without it the converter stops with a
  // KeyError, and Channel reads the model as having no experts, which is what it is.
  if (const auto n_ff_exp = find_hparam(hparams, {"expert_intermediate_size", "moe_intermediate_size"}, kMaxSize)) {
    out.set_u32("expert_feed_forward_length", *n_ff_exp);
  }

  if (global.n_head_kv) {
    const int64_t kv_swa = hparams.integer("num_key_value_heads", 1, 4096);
    std::vector<int64_t> per_layer;
    for (bool is_swa : sliding) per_layer.push_back(is_swa ? kv_swa : *global.n_head_kv);
    out.set_i32_array("attention.head_count_kv", per_layer);
  }

  // Sliding layers rotate head_dim * the top-level partial_rotary_factor (the converter reads it
  // there, not in sliding_attention); global layers use proportional RoPE, which llama.cpp runs
  // as full rotation with frequency factors of 1e30 for the pairs that must not turn.
  const double swa_factor = rope.optional_number("partial_rotary_factor").value_or(1.0);
  out.set_u32("rope.dimension_count", head_dim_full);
  out.set_u32("rope.dimension_count_swa", static_cast<int64_t>(static_cast<double>(head_dim_swa) * swa_factor));

  const auto rope_full = rope.optional_object("full_attention");
  if (!rope_full) fail("{} has no \"full_attention\" part (Gemma 4's global-layer RoPE)", rope.where());
  if (rope_full->optional_string("rope_type") != "proportional") {
    fail("{} must be \"proportional\" for Gemma 4's global layers", rope_full->name("rope_type"));
  }
  const double full_factor = rope_full->number("partial_rotary_factor");
  if (!(full_factor > 0.0 && full_factor <= 1.0)) fail("{} = {} must be in (0, 1]", rope_full->name("partial_rotary_factor"), full_factor);
  const auto n_rotated = static_cast<size_t>(static_cast<double>(head_dim_full) * full_factor / 2);
  model.rope_freqs.assign(static_cast<size_t>(head_dim_full / 2), 1e30f);
  std::fill_n(model.rope_freqs.begin(), std::min(n_rotated, model.rope_freqs.size()), 1.0f);
}

}  // namespace

HfModelDescription describe_hf_model(const json& config_json, const std::string& where) {
  const JsonObject config(config_json, where);
  HfModelDescription model;
  const TextConfigClass config_class = config_class_of(architecture_of(config), where);
  model.arch = arch_of(config_class);
  model.hparams = text_hparams(config, config_class);
  const JsonObject hparams(model.hparams, where);
  refuse_unsupported(hparams, model.arch);
  const json rope_json = rope_parameters_of(hparams);
  const JsonObject rope(rope_json, hparams.name("rope_parameters"));

  ArchMetadata out(model.arch == ModelArch::Gemma3 ? "gemma3" : "gemma4");
  set_common_keys(out, hparams, rope);
  set_rope_scaling(out, rope.optional_object("full_attention").value_or(rope), model.arch);
  if (model.arch == ModelArch::Gemma3) {
    const int64_t n_layer = hparams.integer("num_hidden_layers", 1, 4096);
    out.set_bool_array("attention.sliding_window_pattern", gemma3_sliding_layers(hparams, n_layer));
    model.norm_weights_plus_one = true;
    model.query_pre_attn_scalar = hparams.optional_number("query_pre_attn_scalar");
  } else {
    set_gemma4_keys(out, model, hparams, rope);
  }
  model.metadata = out.take();
  return model;
}

}  // namespace channel
