// The CPU reference backend: the Gemma 3 / Gemma 4 decoder (E-models' per-layer embeddings and
// KV-shared layers, and mixture-of-experts layers included) over GGUF weights, with the KV cache in f16 at fixed geometry
// (kKvSlots slots per layer that owns KV, allocated once). Batched prefill and
// single-token decode run the same code; work is split across a thread pool.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/activations.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/kernel_weights.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/moe.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace channel::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend(std::shared_ptr<const Model> model, int n_threads);

  // Throws channel::Error (leaving the KV cache untouched) for token ids outside the
  // vocabulary, slots outside the cache, negative positions or mismatched batch spans.
  bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
               std::span<const int32_t> candidates, Logits& out) override;

  void rotate_keys(std::span<const uint32_t> slots, int64_t delta) override;

  // Snapshots (cpu_backend_kv.cpp).
  void read_kv(std::span<const uint32_t> slots, KvBlob& out) const override;
  void write_kv(const KvBlob& blob) override;

  // nullptr: the memory scan reads the store's own rows in host memory.
  std::unique_ptr<RowDotTable> make_row_dot_table(size_t, size_t) override { return nullptr; }

  std::string description() const override;
  bool is_gpu() const override { return false; }

  const Model& model() const { return *model_; }
  int n_threads() const { return pool_.size(); }

 private:
  struct LayerCache {
    std::vector<uint16_t> k;  // [kKvSlots][n_head_kv * head_dim], f16
    std::vector<uint16_t> v;
    // Keys as first written, for slots that have been moved by rotate_keys ([kv::kTotalSlots]).
    std::vector<uint16_t> k_as_written;
  };

  void embed(const Batch& batch);
  void prepare_per_layer_inputs(const Batch& batch);
  void attention_block(int il, const Batch& batch, const kv::SlotRuns& view_slots);
  void ffn_block(int il, int64_t n_tokens);
  void dense_ffn(int il, int64_t n_tokens);  // into proj_
  void moe_ffn(int il, int64_t n_tokens);    // into proj_
  void route_to_experts(int il, int64_t n_tokens);
  void per_layer_embedding_block(int il, int64_t n_tokens);
  // proj_ rows RMS-normed with `norm` and added to the residual x_ (the sandwich norms).
  void add_normed_projection(std::span<const float> norm, int64_t n_tokens);
  void scale_layer_output(int il, int64_t n_tokens);
  void output_logits(int64_t n_tokens, LogitsWanted wanted, std::span<const int32_t> candidates, Logits& out);

  std::shared_ptr<const Model> model_;
  ThreadPool pool_;
  KernelWeights weights_;          // the matrices as the kernels read them
  std::vector<LayerCache> cache_;  // one per layer that owns KV (ModelConfig::n_kv_layers)
  std::vector<int32_t> slot_position_;  // RoPE position of each slot's key, -1 when empty
  std::vector<int64_t> slot_moved_by_;  // positions rotate_keys moved a slot since it was written

  // Attention inputs rebuilt per layer: the view as one list, each token's visible positions.
  std::vector<uint32_t> view_list_;
  std::vector<int32_t> min_position_, max_position_;
  AttentionScratch attention_scratch_;
  // The matrix products' converted activations, reused from one product to the next.
  ActivationBuffers activation_buffers_;
  MatmulBatchScratch batch_scratch_;  // a layer's products of one input (Q, K, V; gate, up)
  // Activations for the current batch, [n_tokens][width].
  std::vector<float> x_, normed_, q_, k_, v_, attn_, proj_, gate_, up_;
  // E-models: every layer's per-layer embedding input, [n_layer][n_tokens][n_embd_per_layer].
  std::vector<float> per_layer_inputs_;
  // MoE layers: the router's logits, the routing, the experts' summed output and their buffers.
  std::vector<float> router_logits_, experts_out_;
  Routing routing_;
  ExpertScratch expert_scratch_;
};

}  // namespace channel::cpu
