// A loaded Gemma model: its configuration and views of every weight in the mapped GGUF file.
// Large matrices stay in their GGUF encoding unless the load converts them (quantization on
// load, load_conversion.h): then the model owns the converted bytes and the views point there.
// The small per-channel vectors (norm weights, RoPE frequency factors, layer scalars) are
// decoded to f32 once at load.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/load_conversion.h"
#include "model/matrix_conversion.h"
#include "model/model_config.h"
#include "model/weight_matrix.h"

namespace channel {

// A Gemma 4 MoE layer's routed experts and the norms around them, as llama.cpp's gemma4 graph
// uses them (src/models/gemma4.cpp). Each expert matrix is one 3-D GGUF tensor viewed as its
// experts' matrices stacked: expert e's rows are rows [e * r, (e + 1) * r) of the view, for the r
// rows of one expert (expert_rows).
struct ExpertWeights {
  std::vector<float> pre_norm_2;      // pre_ffw_norm_2: [n_embd], the experts' input norm
  std::vector<float> post_norm_1;     // post_ffw_norm_1: [n_embd], on the dense (shared) FFN's output
  std::vector<float> post_norm_2;     // post_ffw_norm_2: [n_embd], on the experts' weighted sum
  WeightMatrix router;                // ffn_gate_inp: n_embd -> n_expert
  std::vector<float> router_scale;    // ffn_gate_inp.scale: [n_embd], on the router's input
  // Either gate_up (fused: per expert 2 * n_ff_exp rows, gate rows first) or gate and up.
  WeightMatrix gate_up;               // ffn_gate_up_exps: n_embd -> 2 * n_ff_exp, per expert
  WeightMatrix gate;                  // ffn_gate_exps: n_embd -> n_ff_exp, per expert
  WeightMatrix up;                    // ffn_up_exps: n_embd -> n_ff_exp, per expert
  WeightMatrix down;                  // ffn_down_exps: n_ff_exp -> n_embd, per expert
  std::vector<float> down_scale;      // ffn_down_exps.scale: [n_expert] (empty: 1), on each expert's output

  bool fused_gate_up() const { return gate_up.data != nullptr; }
};

// Expert `e`'s matrix within a stacked expert tensor of n_expert experts.
WeightMatrix expert_rows(const WeightMatrix& stacked, int n_expert, int e);

struct LayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  WeightMatrix wq;                    // n_embd -> n_head * head_dim
  WeightMatrix wk;                    // n_embd -> n_head_kv * head_dim (empty on KV-shared layers)
  std::optional<WeightMatrix> wv;     // absent on Gemma 4 layers where V = K
  WeightMatrix wo;                    // n_head * head_dim -> n_embd
  std::vector<float> q_norm;          // [head_dim]
  std::vector<float> k_norm;          // [head_dim] (empty on KV-shared layers)
  std::vector<float> post_attn_norm;  // [n_embd]
  std::vector<float> ffn_norm;        // [n_embd]
  WeightMatrix ffn_gate;              // n_embd -> n_ff
  WeightMatrix ffn_up;                // n_embd -> n_ff
  WeightMatrix ffn_down;              // n_ff -> n_embd
  std::vector<float> post_ffn_norm;   // [n_embd]
  std::vector<float> rope_freq_factors;  // [n_rot / 2] on Gemma 4 global layers, else empty
  float output_scale = 1.0f;          // Gemma 4 layer_output_scale
  // Gemma 4 E-models' per-layer embedding block (empty without per-layer embeddings).
  WeightMatrix per_layer_gate;        // per_layer_inp_gate: n_embd -> n_embd_per_layer
  WeightMatrix per_layer_proj;        // n_embd_per_layer -> n_embd
  std::vector<float> per_layer_post_norm;  // [n_embd]
  // Gemma 4 MoE layers only (LayerConfig::moe); ffn_* above is then the dense (shared) FFN.
  std::optional<ExpertWeights> experts;
};

// Gemma 4 E-models: the inputs of every layer's per-layer embedding block, made once per token
// from the token's own per-layer embedding row and a projection of its scaled token embedding.
struct PerLayerInputWeights {
  WeightMatrix token_embd;            // per_layer_token_embd: per token, n_layer * n_embd_per_layer values
  WeightMatrix model_proj;            // per_layer_model_proj: n_embd -> n_layer * n_embd_per_layer
  std::vector<float> proj_norm;       // per_layer_proj_norm: [n_embd_per_layer]
};

struct ModelLoadOptions {
  LoadConversion conversion;  // default: every weight in its stored type
  int conversion_threads = 0;  // 0: all hardware threads
  // Called before the first conversion (done 0) and after each converted matrix.
  std::function<void(int done, int total)> conversion_progress;
};

// A weight matrix that the load converted, and the type it is used in.
struct ConvertedWeight {
  std::string tensor;
  GgmlType type;
};

class Model {
 public:
  // Opens, validates and binds a GGUF model, or a Hugging Face directory (hf_directory.h) when
  // `path` is a directory; throws channel::Error with a message naming the file and the problem.
  static std::shared_ptr<const Model> load(const std::string& path, const ModelLoadOptions& options = {});
  static std::shared_ptr<const Model> from_gguf(GgufFile file, const ModelLoadOptions& options = {});

  const ModelConfig& config() const { return config_; }
  const GgufFile& gguf() const { return file_; }
  const WeightMatrix& token_embedding() const { return token_embd_; }
  const WeightMatrix& output() const { return output_; }  // tied to token_embd when absent
  bool output_tied() const { return output_tied_; }
  const std::vector<float>& output_norm() const { return output_norm_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const PerLayerInputWeights& per_layer_inputs() const { return per_layer_inputs_; }  // E-models only
  // The matrices the load converted, in load order (empty without a conversion).
  const std::vector<ConvertedWeight>& converted_weights() const { return converted_weights_; }
  // Whether `w` views bytes the load converted (held by the model), not the model's file.
  bool holds_converted_bytes(const WeightMatrix& w) const;

 private:
  struct MatrixBinding;
  Model(GgufFile file, const ModelLoadOptions& options);
  void convert_matrices(const std::vector<MatrixBinding>& bindings, const ModelLoadOptions& options);

  GgufFile file_;
  ModelConfig config_;
  WeightMatrix token_embd_;
  WeightMatrix output_;
  bool output_tied_ = true;
  std::vector<float> output_norm_;
  std::vector<LayerWeights> layers_;
  PerLayerInputWeights per_layer_inputs_;
  std::vector<ConvertedWeight> converted_weights_;
  std::vector<MatrixBytes> converted_bytes_;  // what the converted views point into
};

}  // namespace channel
