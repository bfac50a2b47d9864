#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/error.h"
#include "model/gguf.h"

namespace channel {
namespace {

// Reads `<arch>.<suffix>` keys with the conversions and defaults llama.cpp applies.
class ArchKeys {
 public:
  ArchKeys(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return fmt::format("{}.{}", arch_, suffix); }
  const GgufValue* find(std::string_view suffix) const { return file_.find(key(suffix)); }

  int64_t require_int(std::string_view suffix) const {
    const std::string k = key(suffix);
    return file_.require(k).as_int(k);
  }
  int64_t int_or(std::string_view suffix, int64_t fallback) const {
    const GgufValue* v = find(suffix);
    return v ? v->as_int(key(suffix)) : fallback;
  }
  double float_or(std::string_view suffix, double fallback) const {
    const GgufValue* v = find(suffix);
    return v ? v->as_float(key(suffix)) : fallback;
  }

  // A value that is either one integer for all layers or an array with one entry per layer.
  std::vector<int64_t> per_layer_ints(std::string_view suffix, int n_layer, std::vector<int64_t> fallback) const {
    const GgufValue* v = find(suffix);
    if (!v) return fallback;
    const std::string k = key(suffix);
    if (v->type != GgufValueType::ARRAY) return std::vector<int64_t>(n_layer, v->as_int(k));
    const GgufArray& array = v->as_array(k);
    if (static_cast<int64_t>(array.elements.size()) != n_layer) {
      fail("metadata '{}' has {} entries but the model has {} layers", k, array.elements.size(), n_layer);
    }
    std::vector<int64_t> out;
    for (const auto& element : array.elements) out.push_back(element.as_int(k));
    return out;
  }

 private:
  const GgufFile& file_;
  std::string arch_;
};

int checked_positive(int64_t value, std::string_view what, int64_t limit = 1 << 24) {
  if (value <= 0 || value > limit) fail("model metadata: {} = {} is out of range (1..{})", what, value, limit);
  return static_cast<int>(value);
}

// A value that llama.cpp reads as one integer or a per-layer array (get_key_or_arr) but whose
// gemma4 graph uses only one value of for every layer (layer 0's): refused unless uniform.
int64_t uniform_per_layer_int(const ArchKeys& keys, std::string_view suffix, int n_layer) {
  const std::vector<int64_t> values = keys.per_layer_ints(suffix, n_layer, {0});
  for (int64_t v : values) {
    if (v != values.front()) {
      fail("metadata '{}' differs between layers ({} and {}); llama.cpp's gemma4 graph uses one value for all",
           keys.key(suffix), values.front(), v);
    }
  }
  return values.front();
}

// Gemma 4 mixture of experts, with llama.cpp's keys and checks. A layer is an MoE layer when it
// has a router (ffn_gate_inp), as llama.cpp decides per layer; its experts' width and count come
// from the metadata.
void read_experts(ModelConfig& config, const ArchKeys& keys, const GgufFile& file) {
  constexpr int kMaxExperts = 1024;  // llama.cpp's LLAMA_MAX_EXPERTS
  const int64_t n_expert = keys.int_or("expert_count", 0);
  const int64_t n_used = uniform_per_layer_int(keys, "expert_used_count", config.n_layer);
  if (n_expert < 0 || n_expert > kMaxExperts) {
    fail("metadata '{}' = {} is out of range (0..{})", keys.key("expert_count"), n_expert, kMaxExperts);
  }
  bool any_router = false;
  for (int il = 0; il < config.n_layer; ++il) {
    config.layers[il].moe = file.find_tensor(fmt::format("blk.{}.ffn_gate_inp.weight", il)) != nullptr;
    any_router = any_router || config.layers[il].moe;
  }
  if (n_expert == 0) {
    if (any_router) fail("the model has expert routers (ffn_gate_inp) but no metadata '{}'", keys.key("expert_count"));
    if (n_used != 0) fail("metadata '{}' = {} without experts", keys.key("expert_used_count"), n_used);
    return;
  }
  if (n_used <= 0 || n_used > n_expert) {
    fail("metadata '{}' = {} must be in 1..{} (the expert count)", keys.key("expert_used_count"), n_used, n_expert);
  }
  if (keys.int_or("expert_group_count", 0) > 1) {
    fail("metadata '{}' > 1: grouped expert selection is not supported", keys.key("expert_group_count"));
  }
  config.n_expert = static_cast<int>(n_expert);
  config.n_expert_used = static_cast<int>(n_used);
  if (any_router) {
    config.n_ff_exp = checked_positive(uniform_per_layer_int(keys, "expert_feed_forward_length", config.n_layer),
                                       keys.key("expert_feed_forward_length"));
  }
}

// Gemma 4 E-models: the last `attention.shared_kv_layers` layers compute no K/V. llama.cpp
// (its KV-cache reuse callback for gemma4) gives each the cache of layer n_kv_layers - 2 if it is
// sliding and n_kv_layers - 1 if it is global, so those two must be of those types and every
// shared layer's KV geometry must be its source's.
void share_kv_layers(ModelConfig& config, int64_t n_shared, const std::string& key) {
  const int n_layer = config.n_layer;
  if (n_shared < 0 || n_shared >= n_layer) fail("metadata '{}' = {} must be in 0..{}", key, n_shared, n_layer - 1);
  if (n_shared == 0) return;
  config.n_kv_layers = n_layer - static_cast<int>(n_shared);
  if (config.n_kv_layers < 2) {
    fail("metadata '{}' = {} leaves {} layer(s) with KV; llama.cpp needs at least 2", key, n_shared, config.n_kv_layers);
  }
  for (int il = config.n_kv_layers; il < n_layer; ++il) {
    LayerConfig& layer = config.layers[il];
    const int source = config.n_kv_layers - (layer.sliding ? 2 : 1);
    const LayerConfig& from = config.layers[source];
    const char* type = layer.sliding ? "sliding" : "global";
    if (from.sliding != layer.sliding) {
      fail("KV-shared layer {} is {} but layer {}, whose KV it reuses (as llama.cpp assigns it), is not", il, type,
           source);
    }
    if (from.n_head_kv != layer.n_head_kv || from.head_dim != layer.head_dim) {
      fail("KV-shared layer {} has {} KV heads of size {} but layer {}, whose KV it reuses, has {} of size {}", il,
           layer.n_head_kv, layer.head_dim, source, from.n_head_kv, from.head_dim);
    }
    layer.kv_layer = source;
  }
}

// Sliding-window pattern: a scalar period in gemma3 (layer il is local iff il % period < period-1,
// period 0 = all local), a bool per layer in gemma4.
std::vector<bool> sliding_layers(const ArchKeys& keys, ModelArch arch, int n_layer) {
  std::vector<bool> sliding(n_layer, false);
  const GgufValue* pattern = keys.find("attention.sliding_window_pattern");
  if (pattern && pattern->type == GgufValueType::ARRAY) {
    const std::string k = keys.key("attention.sliding_window_pattern");
    const GgufArray& array = pattern->as_array(k);
    if (static_cast<int>(array.elements.size()) != n_layer) {
      fail("metadata '{}' has {} entries but the model has {} layers", k, array.elements.size(), n_layer);
    }
    for (int il = 0; il < n_layer; ++il) sliding[il] = array.elements[il].as_bool(k);
    return sliding;
  }
  if (arch == ModelArch::Gemma4) fail("metadata '{}' must be an array of one bool per layer", keys.key("attention.sliding_window_pattern"));
  const int64_t period = pattern ? pattern->as_int(keys.key("attention.sliding_window_pattern")) : 6;
  if (period < 0) fail("metadata '{}' is negative", keys.key("attention.sliding_window_pattern"));
  for (int il = 0; il < n_layer; ++il) sliding[il] = period == 0 || (il % period < period - 1);
  return sliding;
}

}  // namespace

const char* arch_display_name(ModelArch arch) { return arch == ModelArch::Gemma3 ? "Gemma 3" : "Gemma 4"; }

ModelConfig ModelConfig::from_gguf(const GgufFile& file) {
  ModelConfig config;
  const GgufValue& arch_value = file.require("general.architecture");
  config.arch_name = std::string(arch_value.as_string("general.architecture"));
  if (config.arch_name == "gemma3") {
    config.arch = ModelArch::Gemma3;
  } else if (config.arch_name == "gemma4") {
    config.arch = ModelArch::Gemma4;
  } else {
    fail("architecture '{}' is not supported: Channel runs gemma3 and gemma4 models", config.arch_name);
  }
  if (const GgufValue* name = file.find("general.name")) config.model_name = std::string(name->as_string("general.name"));

  const ArchKeys keys(file, config.arch_name);

  config.n_layer = checked_positive(keys.require_int("block_count"), keys.key("block_count"), 4096);
  config.n_embd = checked_positive(keys.require_int("embedding_length"), keys.key("embedding_length"));
  config.n_ctx_train = checked_positive(keys.int_or("context_length", 131072), keys.key("context_length"), 1 << 30);
  config.norm_eps = static_cast<float>(keys.float_or("attention.layer_norm_rms_epsilon", 1e-6));
  config.final_softcap = static_cast<float>(keys.float_or("final_logit_softcapping", 0.0));
  config.sliding_window = static_cast<int>(keys.int_or("attention.sliding_window", 0));
  if (config.sliding_window < 0) fail("metadata '{}' is negative", keys.key("attention.sliding_window"));

  const int n_layer = config.n_layer;
  const auto n_head = keys.per_layer_ints("attention.head_count", n_layer, {});
  if (n_head.empty()) fail("missing metadata key '{}'", keys.key("attention.head_count"));
  const auto n_head_kv = keys.per_layer_ints("attention.head_count_kv", n_layer, n_head);
  const auto n_ff = keys.per_layer_ints("feed_forward_length", n_layer, {});
  if (n_ff.empty()) fail("missing metadata key '{}'", keys.key("feed_forward_length"));

  const int64_t head_dim_default = config.n_embd / std::max<int64_t>(1, n_head[0]);
  const int64_t head_dim_global = keys.int_or("attention.key_length", head_dim_default);
  const int64_t value_dim_global = keys.int_or("attention.value_length", head_dim_default);
  const int64_t head_dim_sliding = keys.int_or("attention.key_length_swa", head_dim_global);
  const int64_t value_dim_sliding = keys.int_or("attention.value_length_swa", value_dim_global);
  if (head_dim_global != value_dim_global || head_dim_sliding != value_dim_sliding) {
    fail("model has key head size != value head size, which Gemma models do not have");
  }
  const int64_t n_rot_global = keys.int_or("rope.dimension_count", head_dim_global);
  const int64_t n_rot_sliding = keys.int_or("rope.dimension_count_swa", n_rot_global);

  // RoPE: freq_base is the global-layer base; sliding layers use freq_base_swa (default 10000,
  // which Gemma 3 files do not store). Linear scaling applies to global layers only.
  const double base_global = keys.float_or("rope.freq_base", 10000.0);
  const double base_sliding = keys.float_or("rope.freq_base_swa", 10000.0);
  double scaling_factor = keys.float_or("rope.scaling.factor", 0.0);
  if (scaling_factor == 0.0) scaling_factor = keys.float_or("rope.scale_linear", 0.0);
  if (const GgufValue* type = keys.find("rope.scaling.type")) {
    const auto name = type->as_string(keys.key("rope.scaling.type"));
    if (name != "linear" && name != "none") fail("RoPE scaling type '{}' is not supported (only linear)", name);
  }
  if (!(scaling_factor >= 0.0) || !std::isfinite(scaling_factor)) fail("RoPE scaling factor {} is invalid", scaling_factor);
  const float freq_scale_global = scaling_factor == 0.0 ? 1.0f : static_cast<float>(1.0 / scaling_factor);

  const std::vector<bool> sliding = sliding_layers(keys, config.arch, n_layer);
  const bool any_sliding = std::find(sliding.begin(), sliding.end(), true) != sliding.end();
  if (any_sliding && config.sliding_window <= 0) {
    fail("model has sliding-window layers but metadata '{}' is missing or 0", keys.key("attention.sliding_window"));
  }

  for (int il = 0; il < n_layer; ++il) {
    LayerConfig layer;
    layer.sliding = sliding[il];
    layer.kv_layer = il;
    layer.n_head = checked_positive(n_head[il], "attention.head_count", 4096);
    layer.n_head_kv = checked_positive(n_head_kv[il], "attention.head_count_kv", 4096);
    if (layer.n_head % layer.n_head_kv != 0) {
      fail("layer {}: {} query heads are not a multiple of {} KV heads", il, layer.n_head, layer.n_head_kv);
    }
    layer.head_dim = checked_positive(layer.sliding ? head_dim_sliding : head_dim_global, "attention.key_length", 8192);
    layer.n_rot = checked_positive(layer.sliding ? n_rot_sliding : n_rot_global, "rope.dimension_count", 8192);
    if (layer.n_rot > layer.head_dim || layer.n_rot % 2 != 0) {
      fail("layer {}: RoPE dimension count {} must be even and at most the head size {}", il, layer.n_rot, layer.head_dim);
    }
    layer.n_ff = checked_positive(n_ff[il], "feed_forward_length");
    layer.rope_base = static_cast<float>(layer.sliding ? base_sliding : base_global);
    layer.rope_freq_scale = layer.sliding ? 1.0f : freq_scale_global;
    layer.rope_freq_factors = config.arch == ModelArch::Gemma4 && !layer.sliding;
    if (!(layer.rope_base > 0.0f) || !std::isfinite(layer.rope_base)) fail("layer {}: RoPE base {} is invalid", il, layer.rope_base);
    config.layers.push_back(layer);
  }
  config.n_kv_layers = n_layer;

  if (config.arch == ModelArch::Gemma4) {
    const int64_t per_layer = keys.int_or("embedding_length_per_layer_input", 0);
    if (per_layer != 0) config.n_embd_per_layer = checked_positive(per_layer, keys.key("embedding_length_per_layer_input"));
    share_kv_layers(config, keys.int_or("attention.shared_kv_layers", 0), keys.key("attention.shared_kv_layers"));
    read_experts(config, keys, file);
  }

  if (config.arch == ModelArch::Gemma3) {
    // Gemma 3 scales queries by 1/sqrt(head_dim), except 27B (62 layers) which uses
    // 1/sqrt(n_embd / n_head) = 1/sqrt(168), as llama.cpp and Hugging Face do.
    const float divisor = n_layer == 62 ? static_cast<float>(config.n_embd / config.layers[0].n_head)
                                        : static_cast<float>(config.layers[0].head_dim);
    config.query_scale = 1.0f / std::sqrt(divisor);
  } else {
    config.query_scale = 1.0f;  // Gemma 4 uses self.scaling = 1.0
    config.v_norm = true;
    config.layer_output_scale = true;
  }

  const GgufValue& tokens = file.require("tokenizer.ggml.tokens");
  config.n_vocab = checked_positive(static_cast<int64_t>(tokens.as_array("tokenizer.ggml.tokens").elements.size()),
                                    "tokenizer.ggml.tokens size", 1 << 22);
  return config;
}

PerLayerInputScales ModelConfig::per_layer_input_scales() const {
  return {1.0f / std::sqrt(static_cast<float>(n_embd)), std::sqrt(static_cast<float>(n_embd_per_layer)),
          1.0f / std::sqrt(2.0f)};
}

int ModelConfig::max_head_dim() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.head_dim);
  return m;
}
int ModelConfig::max_kv_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.n_head_kv * l.head_dim);
  return m;
}
int ModelConfig::max_q_width() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.n_head * l.head_dim);
  return m;
}
int ModelConfig::max_ff() const {
  int m = 0;
  for (const auto& l : layers) m = std::max(m, l.n_ff);
  return m;
}

}  // namespace channel
