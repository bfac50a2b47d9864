// The hyperparameters of a Gemma 3 or Gemma 4 text decoder (E-models and mixture-of-experts
// models included), read from GGUF metadata (the same keys and defaults llama.cpp uses), with everything per layer
// resolved up front so the forward pass never branches on the architecture for geometry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace channel {

class GgufFile;

enum class ModelArch { Gemma3, Gemma4 };

struct LayerConfig {
  bool sliding = false;   // sliding-window (local) attention vs global attention
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;       // key and value head size (equal in Gemma)
  int n_ff = 0;
  int n_rot = 0;          // leading head dims that RoPE rotates (pairs i and i + n_rot/2)
  float rope_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / linear scaling factor
  bool rope_freq_factors = false;  // Gemma 4 global layers divide frequencies by `rope_freqs`
  // The layer whose KV this layer attends over: itself, or for a Gemma 4 E-model's KV-shared
  // layer the earlier layer of the same type that llama.cpp reuses (the shared layer writes none).
  int kv_layer = 0;
  // Gemma 4 mixture-of-experts layer: routed experts beside the dense (shared) FFN. llama.cpp
  // makes a layer one by the presence of its router tensor, ffn_gate_inp.
  bool moe = false;
};

// Gemma 4 E-models: the scalars of the per-layer inputs in llama.cpp's gemma4 graph (the backends
// apply them in its order: ops.h per_layer_input, per_layer_inputs.comp).
struct PerLayerInputScales {
  float projection = 1.0f;  // 1/sqrt(n_embd): the model projection, before its norm
  float token = 1.0f;       // sqrt(n_embd_per_layer): the token's per-layer embedding row
  float input = 1.0f;       // 1/sqrt(2): their sum
};

struct ModelConfig {
  ModelArch arch = ModelArch::Gemma3;
  std::string arch_name;         // "gemma3" / "gemma4"
  std::string model_name;        // general.name, if any
  int n_layer = 0;
  int n_embd = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;
  int sliding_window = 0;
  float norm_eps = 1e-6f;
  float query_scale = 1.0f;      // multiplies Q before attention (kq scale is 1)
  float final_softcap = 0.0f;    // 0: none; else logits = c * tanh(logits / c)
  bool v_norm = false;           // Gemma 4: unweighted RMSNorm of V
  bool layer_output_scale = false;  // Gemma 4: learned scalar on each layer's output
  int n_embd_per_layer = 0;      // Gemma 4 E-models: per-layer embedding width (0: none)
  // Layers 0..n_kv_layers-1 own a KV cache; the rest (Gemma 4 E-models' KV-shared layers) read
  // the cache of their kv_layer. Equal to n_layer when no layer shares.
  int n_kv_layers = 0;
  // Gemma 4 mixture of experts (26B-A4B): expert_count experts of expert_feed_forward_length
  // hidden units each, expert_used_count of them routed per token. 0 for dense models.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;
  std::vector<LayerConfig> layers;

  // Reads and checks the configuration; throws channel::Error naming the key or the feature
  // when the model is malformed or is one this engine cannot run (other architectures).
  static ModelConfig from_gguf(const GgufFile& file);

  bool owns_kv(int il) const { return il < n_kv_layers; }
  bool has_per_layer_embeddings() const { return n_embd_per_layer > 0; }
  bool has_experts() const { return n_expert > 0; }
  PerLayerInputScales per_layer_input_scales() const;

  int max_head_dim() const;
  int max_kv_width() const;      // max over layers of n_head_kv * head_dim
  int max_q_width() const;       // max over layers of n_head * head_dim
  int max_ff() const;
};

const char* arch_display_name(ModelArch arch);

}  // namespace channel
