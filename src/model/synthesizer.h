// Writes random-weight Gemma 3 / Gemma 4 GGUF files of any geometry and weight type, with the
// tokenizer copied from a vocabulary GGUF. Tests make their models with it at run time, and
// the same seed gives the same file, so a model quantized to every type shares one set of
// underlying f32 weights. Speed benchmarks make models of real Gemma sizes with it
// (model/synth_presets.h), with share_layer_matrices so that gigabytes are written in minutes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/ggml_type.h"
#include "model/gguf.h"
#include "model/model_config.h"

namespace channel {

struct SynthOptions {
  ModelArch arch = ModelArch::Gemma4;
  std::string vocab_path;           // GGUF whose tokenizer.* metadata is copied
  GgmlType weight_type = GgmlType::F32;     // attention and FFN matrices
  GgmlType embedding_type = GgmlType::F32;  // token_embd (tied output)
  // Layer matrices whose type is not weight_type, by their name within a layer ("attn_v" for
  // blk.N.attn_v.weight): models whose projections mix types, as some converters write them.
  std::map<std::string, GgmlType> layer_matrix_types;
  uint64_t seed = 1;
  int n_layer = 6;
  int n_embd = 128;
  int n_head = 4;
  int n_head_kv = 2;
  int n_head_kv_global = 1;         // Gemma 4: KV heads of global layers (per-layer array)
  int head_dim = 32;                // sliding layers (Gemma 3: all layers)
  int head_dim_global = 64;         // Gemma 4 global layers
  int n_ff = 256;
  int sliding_window = 32;
  int sliding_period = 3;           // every period-th layer is global (and the last for Gemma 4)
  float rotary_fraction = 0.25f;    // Gemma 4 global layers: share of frequency pairs rotated
  bool global_v_equals_k = true;    // Gemma 4 global layers without attn_v
  bool layer_output_scale = true;   // Gemma 4: a learned scalar on each layer's output (optional in llama.cpp)
  float rope_scaling_factor = 8.0f; // Gemma 3 global layers, linear; 0: none (no keys, as Gemma 3 1B)
  // Gemma 4 E-models. Per-layer embeddings of this width (0: none); and KV sharing: the last
  // n_kv_shared layers have no attn_k/attn_v/attn_k_norm, reuse the KV of the layers llama.cpp
  // assigns them, and have the double-wide FFN (2 * n_ff) of Gemma 4 E2B.
  int n_embd_per_layer = 0;
  int n_kv_shared = 0;
  // Gemma 4 mixture of experts (26B-A4B's layout): with n_expert > 0 every layer routes each
  // token to n_expert_used of n_expert experts of n_ff_exp hidden units (fused gate/up
  // tensors, per-expert output scales), beside its dense FFN of n_ff.
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;
  // For benchmark models: every layer stores the matrices of the first layer of its type
  // (sliding or global), drawn and encoded once and held in memory once; norms and layer scalars
  // stay per layer. The file still holds each layer's own copy, so a forward pass moves the bytes
  // per token of a model with distinct layers, but the values of only two layers are drawn.
  bool share_layer_matrices = false;
  std::string name = "channel-synthetic";
  // Scripted continuations, for end-to-end tests of the engine's turn logic: each sequence's
  // token i is followed by token i + 1 with a logit far above all others (the layers add
  // nothing to the residual stream and the output matrix maps each scripted token to its
  // successor). A token may have one successor only; at most n_embd tokens have one.
  std::vector<std::vector<int32_t>> script;
  // With a script, a model whose answer only episodic recall can give, for the tests of memory:
  // `memory` gets an embedding axis of its own (every other token is zero there), and the last
  // global layer's attention spreads evenly over every key it reads (zero queries), takes values
  // from that axis alone (so every other token's value is exactly zero) and writes what it finds
  // onto an axis of its own (zero in every embedding) that only `answer`'s output row reads. So
  // `answer` is the argmax wherever `memory`'s KV is visible to that layer (in the stream, or
  // recalled into the recall slots) and out of reach wherever it is not.
  struct RecallCue {
    int32_t memory = -1;
    int32_t answer = -1;
  };
  std::optional<RecallCue> recall_cue;
};

// Fills in Gemma-3/Gemma-4 specific defaults that differ (used by the CLI before applying flags).
SynthOptions default_synth_options(ModelArch arch);

// The successor of each scripted token; throws channel::Error for a token with two different
// successors, an id outside the vocabulary, or more scripted tokens than embedding dimensions.
std::map<int32_t, int32_t> script_successors(const std::vector<std::vector<int32_t>>& script, int64_t n_vocab,
                                             int n_embd);

// Validates the geometry (block sizes, head counts) and writes the model; throws channel::Error.
void synthesize_model(const SynthOptions& options, const std::string& out_path);

// The metadata synthesize_model writes (architecture, geometry, tokenizer) without any tensor,
// after the same geometry checks: what a model of these options would be, known without
// drawing or writing its weights (a preset model is gigabytes).
GgufWriter synth_metadata(const SynthOptions& options);

}  // namespace channel
