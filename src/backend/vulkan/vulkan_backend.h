// The Vulkan backend: the Gemma 3 / Gemma 4 decoder of the CPU backend (E-models included),
// every step a compute shader on the GPU (or on lavapipe, Mesa's CPU driver, in tests). Weights
// live on the device in their GGUF encoding; the KV cache is f16 at the fixed geometry (kKvSlots
// slots per layer that owns KV, allocated once); attention reads the slots of the attention view through a slot list,
// so sliding and evicting never move KV memory. A forward step is recorded in sequences of
// `layers_per_submit` layers, each submitted with its own fence (seed 001: short submissions
// against driver watchdogs); cancellation is checked between them. The sequences are recorded
// once per step shape (tokens, logits wanted) and replayed: everything that changes from step to
// step (tokens, positions, slots, the attention view and its workgroup counts) is read from
// buffers the host writes before the step.
#pragma once

#include <functional>
#include <list>
#include <map>
#include <string>
#include <memory>
#include <optional>
#include <vector>

#include "backend/backend.h"
#include "backend/vulkan/buffer.h"
#include "backend/vulkan/command_sequence.h"
#include "backend/vulkan/device.h"
#include "backend/vulkan/matmul_kernels.h"
#include "backend/vulkan/pipeline.h"
#include "backend/vulkan/transfer.h"
#include "backend/vulkan/tuning.h"
#include "backend/vulkan/weight_prefetch.h"
#include "model/model.h"

namespace channel::vulkan {

struct InputsPush;  // shader_push.h

struct VulkanBackendOptions {
  std::optional<uint32_t> device_index;  // default: the best device (discrete, integrated, ..., CPU)
  int layers_per_submit = 4;
  // Bytes of the next product's weights read into the L2 cache beside each stage that leaves the
  // GPU idle, in passes of matrix-vector products (weight_prefetch.h); 0: none. Default: the
  // device's (prefetch_budget_bytes in vulkan_backend.cpp), CHANNEL_VULKAN_PREFETCH_MB overriding.
  std::optional<uint64_t> prefetch_bytes;
};

class VulkanBackend final : public Backend {
 public:
  // Opens the device and uploads the weights. Throws channel::Error when there is no usable
  // device or the model does not fit.
  VulkanBackend(std::shared_ptr<const Model> model, const VulkanBackendOptions& options);
  ~VulkanBackend() override;

  bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
               std::span<const int32_t> candidates, Logits& out) override;
  void rotate_keys(std::span<const uint32_t> slots, int64_t delta) override;
  void read_kv(std::span<const uint32_t> slots, KvBlob& out) const override;
  void write_kv(const KvBlob& blob) override;
  std::unique_ptr<RowDotTable> make_row_dot_table(size_t rows, size_t width) override;
  std::string description() const override;
  bool is_gpu() const override { return true; }

  // Forward passes recorded so far (a step whose shape was recorded before replays its pass).
  uint64_t passes_recorded() const { return passes_recorded_; }

 private:
  struct LayerWeights;
  struct LayerCache {
    Buffer k, v;          // f16 [kKvSlots][n_head_kv * head_dim]
    Buffer k_as_written;  // keys as first written, for slots rotate_keys has moved ([kv::kTotalSlots] rows)
  };
  // One RoPE parameter set (layers of one type share it): rotate_keys' angles depend only on it.
  struct RopeSet {
    int n_rot = 0;
    float base = 0, freq_scale = 1;
    const std::vector<float>* freq_factors = nullptr;
  };
  // The tokens of one sub-batch as the shaders see them.
  struct Step {
    uint32_t first = 0;     // index of its first token in the batch
    uint32_t n_tokens = 0;
  };
  // Which layer types' attention is split-KV in a step (decode over 257+ cells): their chunks
  // are merged by a dispatch of its own, which other steps do not record.
  struct AttentionSplit {
    bool global = false, sliding = false;
    bool operator==(const AttentionSplit&) const = default;
  };
  // What a recorded forward pass depends on beside the contents of the buffers it reads: a step
  // of the same shape replays it.
  struct PassShape {
    uint32_t n_tokens = 0;
    AttentionSplit split;
    LogitsWanted logits = LogitsWanted::None;  // computed at the end of the pass (<= kMaxLogitRows rows)
    uint32_t n_candidates = 0;
    bool copy_hidden = false;  // the last token's hidden state copied out at the end of the pass
    bool operator==(const PassShape&) const = default;
  };
  // A command sequence and, when profiling, the stage that ends at each of its timestamps.
  struct ProfiledSequence {
    std::unique_ptr<CommandSequence> commands;
    std::vector<std::string> marks;
  };
  // A step's sequences: the embedding and the layers in chunks of layers_per_submit, the last one
  // also the pass's logits and hidden state copy. The first sequences_recorded of them are
  // recorded for `shape` (a pass cancelled halfway leaves the rest to its next run).
  struct RecordedPass {
    PassShape shape;
    std::vector<ProfiledSequence> sequences;
    size_t sequences_recorded = 0;
  };

  void upload_weights();
  void allocate_state();
  bool forward_step(const Batch& batch, const AttentionView& view, const Step& step, LogitsWanted wanted,
                    std::span<const int32_t> candidates, Logits& out);
  AttentionSplit write_step_inputs(const Batch& batch, const AttentionView& view, const Step& step);
  // Each layer's AttentionStepParams for this step's views.
  AttentionSplit write_attention_steps(const AttentionView& view, uint32_t n_tokens);
  void write_per_layer_token_rows(const Batch& batch, const Step& step);
  // The pass for `shape`: one of the last kMaxRecordedPasses, or one to be recorded as it runs.
  RecordedPass& pass_for(const PassShape& shape);
  // Records sequence `index` of `pass` for its shape.
  void record_pass_sequence(RecordedPass& pass, size_t index);
  // Submits a pass's sequences in order (recording those not yet recorded), asking `cancelled`
  // before each; false if it said so.
  bool run_pass(RecordedPass& pass, const std::function<bool()>& cancelled);
  // Records `sequence` anew: begin, record(commands), end, with profiling marks around.
  void record(ProfiledSequence& sequence, const std::function<void(CommandSequence&)>& record);
  // Records `commands` into adhoc_ and runs them (work that is not replayed).
  void run_adhoc(const std::function<void(CommandSequence&)>& commands);
  // KV export and import (read_kv, write_kv) move a layer's keys or values (a part) through
  // kv_rows_, several parts a submission: part p of a batch at f16 value first_value.
  struct KvPart {
    int layer;
    bool keys;
    uint64_t first_value;
  };
  struct KvPartBatch {
    std::vector<KvPart> parts;
  };
  std::vector<KvPartBatch> kv_part_batches(uint32_t n_slots) const;
  void wait_for_all_sequences();
  void record_embed(CommandSequence& seq, uint32_t n_tokens);
  // Gemma 4 E-models: every layer's per-layer embedding input, once per step after the embedding.
  void record_per_layer_inputs(CommandSequence& seq, uint32_t n_tokens);
  void record_layer(CommandSequence& seq, int il, const PassShape& shape);
  // Where layer il's Q, K and V projections of a token lie in qkv_.
  struct Projections {
    VkDeviceAddress q, k, v;
  };
  Projections projections_of(int il) const;
  // attention_inputs.glsl's parameters for layer il and n_tokens tokens.
  InputsPush attention_inputs(int il, uint32_t n_tokens) const;
  void record_attention(CommandSequence& seq, int il, const PassShape& shape);
  void record_ffn(CommandSequence& seq, int il, uint32_t n_tokens);
  void record_per_layer_embedding(CommandSequence& seq, int il, uint32_t n_tokens);
  // The sandwich norm of proj_ (by `norm`) into the residual and the layer's output scale, which
  // end layer il; fused with the next layer's attention input norm where that layer's input is
  // prepared here (attention_input_prepared). `stage` / `fused_stage` name it for profiling.
  void record_layer_output_norm(CommandSequence& seq, int il, VkDeviceAddress norm, uint32_t n_tokens,
                                const char* stage, const char* fused_stage);
  // Whether layer il's attention input (normed and quantized) is written by layer il - 1.
  bool attention_input_prepared(int il) const;
  void record_norm(CommandSequence& seq, VkDeviceAddress x, VkDeviceAddress weight, VkDeviceAddress dst,
                   VkDeviceAddress residual, uint32_t n, uint32_t rows, float out_scale);
  // RMSNorm of `rows` embedding-wide rows of x by `weight`, prepared as the input of weight_type
  // matrices; with a residual, first Gemma's sandwich norm (residual = (residual + norm(x) *
  // weight) * out_scale) and then the norm of the new residual by next_weight. Q4_0 / Q8_0: one
  // fused kernel writing the int8 activations, with the prefetch of `consumers` (the matrices
  // the result feeds; null entries skipped) beside it. Ends with a barrier.
  PreparedActivations record_norm_input(CommandSequence& seq, GgmlType weight_type, VkDeviceAddress x,
                                        VkDeviceAddress weight, VkDeviceAddress residual, VkDeviceAddress next_weight,
                                        float out_scale, uint32_t rows,
                                        std::span<const DeviceMatrix* const> consumers);
  // `prepared` where it serves matrix m, else m's own activations: the residual stream x_ normed
  // again by `norm` (after a barrier: the products before read the scratch buffer they overwrite).
  PreparedActivations input_for(CommandSequence& seq, const PreparedActivations& prepared, const DeviceMatrix& m,
                                VkDeviceAddress norm, uint32_t n_tokens);
  // Records prefetch_'s read of `matrices` where a pass of n_tokens streams them through the
  // matrix-vector kernel (after a stage that leaves the GPU mostly idle, before its barrier).
  void record_prefetch(CommandSequence& seq, uint32_t n_tokens, std::span<const DeviceMatrix* const> matrices);
  // GEGLU of gate_ and `up` ([n_tokens][n_ff]) prepared as the input of weight_type matrices (Q4_0 /
  // Q8_0: one fused kernel). Ends with a barrier.
  PreparedActivations record_geglu_input(CommandSequence& seq, GgmlType weight_type, VkDeviceAddress up,
                                         uint32_t n_tokens, uint32_t n_ff);
  void record_logits(CommandSequence& seq, uint32_t first_row, uint32_t n_rows, LogitsWanted wanted,
                     uint32_t n_candidates);
  // Copies the last of n_tokens rows of the residual stream to last_hidden_.
  void record_hidden_copy(CommandSequence& seq, uint32_t n_tokens);
  // The end of a pass of this shape: the hidden state copy and the logits.
  void record_pass_outputs(CommandSequence& seq, const PassShape& shape);
  const ComputePipeline& pipeline(std::string_view shader, uint32_t extra = 0);
  // attention_rows.comp for the one-row scheme or for split-KV chunks (each has its own shape).
  const ComputePipeline& attention_rows_pipeline(bool split);
  // Profiling (CHANNEL_VULKAN_PROFILE=1): GPU time per stage of the forward pass, summed over the
  // backend's life and printed to stderr when it is destroyed. mark() adds a timestamp to the
  // sequence being recorded (record()).
  void mark(CommandSequence& seq, const char* stage);
  // Runs f; when profiling, adds its host time to host_ns_[step] (is the host or the GPU the
  // bottleneck: time recording and submitting against time waiting for the device).
  template <class F>
  void host_timed(const char* step, F&& f);
  // Waits for `sequence` if it is pending, then adds its stage times to the profile.
  void wait_and_collect(ProfiledSequence& sequence);
  VkDeviceAddress vector_address(const std::vector<float>& values) const;
  uint64_t rope_set_offset(int set) const;  // byte offset of a RoPE set's cos/sin in rope_

  std::shared_ptr<const Model> model_;
  VulkanBackendOptions options_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<PipelineCache> pipelines_;
  std::unique_ptr<MatmulKernels> matmul_;
  std::unique_ptr<WeightPrefetch> prefetch_;
  mutable std::unique_ptr<Transfer> transfer_;
  std::list<RecordedPass> passes_;  // most recently used first
  uint64_t passes_recorded_ = 0;
  ProfiledSequence adhoc_;  // work recorded where it runs: KV moves and export, long logits passes
  bool profiling_ = false;
  std::vector<std::string>* marks_being_recorded_ = nullptr;  // record(): where mark() adds its stages
  bool profile_batch_ = false;  // the step being recorded has several tokens: its stages are counted apart
  struct StageTime {
    double ns = 0;
    uint64_t count = 0;
  };
  std::map<std::string, StageTime> profile_ns_;
  std::map<std::string, double> host_ns_;

  // Weights: one buffer per matrix, all f32 vectors (norms, frequency factors) in one buffer.
  std::vector<Buffer> matrix_buffers_;
  DeviceMatrix token_embd_, output_;
  DeviceMatrix per_layer_model_proj_;  // Gemma 4 E-models only
  std::vector<LayerWeights> layers_;
  Buffer vectors_;
  std::vector<std::pair<const float*, VkDeviceAddress>> vector_addresses_;
  Buffer gelu_table_;  // model/gelu_table.h, for GEGLU

  std::vector<LayerCache> cache_;  // one per layer that owns KV (ModelConfig::n_kv_layers)
  std::vector<int32_t> slot_position_;  // host copy: RoPE position of each slot's key, -1 when empty
  std::vector<int64_t> slot_moved_by_;
  std::vector<RopeSet> rope_sets_;
  std::vector<int> rope_set_of_layer_;

  // Per-step inputs written by the host (kUpload) and activations (kDevice), sized for kMaxStep
  // tokens.
  Buffer tokens_, positions_, slots_, slot_positions_, global_view_, sliding_view_, candidates_, rope_;
  Buffer attention_steps_;  // AttentionStepParams per layer
  Buffer x_, normed_, qkv_, q_, attn_, proj_, gate_, up_, scratch_, logits_;
  Buffer last_hidden_;  // readback of Batch::last_hidden
  // Gemma 4 E-models: the step's per_layer_token_embd rows ([n_tokens][n_layer][width], gathered
  // on the host), their model projection (likewise) and the layers' inputs ([n_layer][n_tokens][width]).
  Buffer per_layer_token_rows_, per_layer_projected_, per_layer_inputs_;
  Buffer partials_;  // split-KV attention: per (head, chunk) maximum, sum and accumulators
  // A count per head of rows of the Q/K/V product (record_head_matvec), zero between dispatches.
  Buffer arrivals_;
  Buffer inputs_params_;  // InputsPush per layer (record_head_matvec)
  // Set from tuning.h in the constructor (no defaults here: tuning.cpp holds them).
  uint32_t tiled_attention_tokens_ = 0;  // tokens of one head per workgroup of the prefill attention
  uint32_t split_kv_chunk_keys_ = 0;     // listed keys per chunk of split-KV decode attention
  AttentionRowsShapes attention_rows_;   // decode attention's key batches and workgroups
  // rotate_keys and KV export/import.
  Buffer rotate_slots_, rotate_first_move_, rotate_cos_sin_, kv_rows_, kv_row_ids_;
};

}  // namespace channel::vulkan
