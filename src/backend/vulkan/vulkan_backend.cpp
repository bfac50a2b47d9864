#include "backend/vulkan/vulkan_backend.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cctype>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "backend/backend_checks.h"
#include "backend/vulkan/attention_step.h"
#include "backend/vulkan/device_matrix.h"
#include "backend/vulkan/row_dot_table.h"
#include "backend/vulkan/shader_push.h"
#include "backend/vulkan/tuning.h"
#include "backend/vulkan/shaders/shared_memory.glsl"
#include "core/error.h"
#include "model/gelu_table.h"
#include "model/quantize.h"
#include "model/rope.h"

namespace channel::vulkan {
namespace {

// Tokens per recorded step: longer batches run as several steps (activations are sized for it).
constexpr uint32_t kMaxStep = 512;
// Logit rows per output pass: LogitsWanted::All over a long batch is read back in pieces.
constexpr uint32_t kMaxLogitRows = 64;
// Candidate ids a probe may ask for in one pass.
constexpr uint32_t kMaxCandidates = 4096;
// Recorded passes kept for replay, the least recently used re-recorded first: decode, a probe,
// and the two shapes of a long prefill (full steps and the rest) stay recorded together.
constexpr size_t kMaxRecordedPasses = 8;
// Steps of up to this many tokens are submitted whole (run_pass): milliseconds of device work.
constexpr uint32_t kWholePassTokens = 16;

constexpr uint32_t kNormWorkgroup = 256;
constexpr uint32_t kElementWorkgroup = 256;
constexpr uint32_t kHeadWorkgroup = 64;
constexpr uint32_t kAttentionWorkgroup = 128;

std::string type_suffix(GgmlType type) {
  std::string name(ggml_type_traits(type).name);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return name;
}

// Mixture-of-experts layers have no kernels here yet: such a model is refused before any device
// memory is taken.
void refuse_unsupported_features(const ModelConfig& config) {
  if (config.has_experts()) {
    fail("Vulkan: this is a Gemma 4 mixture-of-experts model ({} experts, {} per token); the Vulkan backend does "
         "not run those yet; use --backend cpu",
         config.n_expert, config.n_expert_used);
  }
}

}  // namespace

struct VulkanBackend::LayerWeights {
  DeviceMatrix wq, wk, wo, gate, up, down;  // wk empty on KV-shared layers
  std::optional<DeviceMatrix> wv;
  // wq, wk and wv as one matrix (their rows in that order, each of them a row range of it) where
  // the layer has K and its three matrices share type and width: one product dispatch, not three.
  std::optional<DeviceMatrix> wqkv;
  // Values of a token's Q, K and V projections, side by side in qkv_.
  uint32_t projections_width() const { return static_cast<uint32_t>(wq.rows + wk.rows + (wv ? wv->rows : 0)); }
  // The matrices of the Q, K and V products (K empty and V absent, null, where the layer has none).
  std::array<const DeviceMatrix*, 3> qkv() const { return {&wq, &wk, wv ? &*wv : nullptr}; }
  VkDeviceAddress attn_norm = 0, q_norm = 0, k_norm = 0, post_attn_norm = 0, ffn_norm = 0, post_ffn_norm = 0;
  float output_scale = 1.0f;
  // Gemma 4 E-models' per-layer embedding block (empty without per-layer embeddings).
  DeviceMatrix per_layer_gate, per_layer_proj;
  VkDeviceAddress per_layer_post_norm = 0;
};

VulkanBackend::VulkanBackend(std::shared_ptr<const Model> model, const VulkanBackendOptions& options)
    : model_(std::move(model)), options_(options), slot_position_(kKvSlots, -1), slot_moved_by_(kKvSlots, 0) {
  if (options_.layers_per_submit < 1) fail("--layers-per-submit must be at least 1");
  refuse_unsupported_features(model_->config());
  device_ = std::make_unique<Device>(options_.device_index);
  // CHANNEL_VULKAN_PIPELINE_STATS=1: each pipeline's driver statistics (registers a thread on
  // NVIDIA), printed when the backend closes.
  pipelines_ = std::make_unique<PipelineCache>(*device_, diagnostic_switch("CHANNEL_VULKAN_PIPELINE_STATS"));
  tiled_attention_tokens_ =
      tiled_attention_tokens(device_->info(), static_cast<uint32_t>(model_->config().max_head_dim()));
  split_kv_chunk_keys_ = split_kv_chunk_keys(kKvSlots);
  attention_rows_ = attention_rows_shapes(device_->info(), static_cast<uint32_t>(model_->config().max_head_dim()));
  matmul_ = std::make_unique<MatmulKernels>(*device_, *pipelines_, matmul_options(device_->info()));
  prefetch_ = std::make_unique<WeightPrefetch>(*device_, *pipelines_,
                                               prefetch_budget_bytes(device_->info(), options_.prefetch_bytes));
  transfer_ = std::make_unique<Transfer>(*device_);
  adhoc_.commands = std::make_unique<CommandSequence>(*device_);
  profiling_ = diagnostic_switch("CHANNEL_VULKAN_PROFILE");
  upload_weights();
  allocate_state();
}

VulkanBackend::~VulkanBackend() {
  if (!device_) return;
  device_->wait_idle();
  for (const std::string& line : pipelines_->statistics_report()) fmt::print(stderr, "vulkan pipeline {}\n", line);
  if (profiling_ && !profile_ns_.empty()) {
    double total = 0;
    for (const auto& [stage, time] : profile_ns_) total += time.ns;
    fmt::print(stderr, "vulkan profile: GPU time by stage, {:.1f} ms in all\n", total / 1e6);
    for (const auto& [stage, time] : profile_ns_) {
      fmt::print(stderr, "  {:<24} {:10.2f} ms {:5.1f}% {:8} times {:8.2f} us each\n", stage, time.ns / 1e6,
                 100.0 * time.ns / total, time.count, time.ns / 1e3 / time.count);
    }
    fmt::print(stderr, "vulkan profile: host time by step ({} passes recorded)\n", passes_recorded_);
    for (const auto& [step, ns] : host_ns_) fmt::print(stderr, "  {:<24} {:10.2f} ms\n", step, ns / 1e6);
  }
}

template <class F>
void VulkanBackend::host_timed(const char* step, F&& f) {
  if (!profiling_) {
    f();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  f();
  host_ns_[step] += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

void VulkanBackend::mark(CommandSequence& seq, const char* stage) {
  if (!profiling_ || marks_being_recorded_ == nullptr) return;
  auto& marks = *marks_being_recorded_;
  if (marks.size() >= CommandSequence::kMaxTimestamps) return;
  marks.push_back(profile_batch_ ? fmt::format("batch: {}", stage) : std::string(stage));
  seq.write_timestamp(static_cast<uint32_t>(marks.size() - 1));
}

void VulkanBackend::wait_and_collect(ProfiledSequence& sequence) {
  if (!sequence.commands->pending()) return;
  host_timed("wait", [&] { sequence.commands->wait(); });
  if (!profiling_ || sequence.marks.empty()) return;
  std::vector<double> ns;
  host_timed("profile read", [&] { ns = sequence.commands->timestamps_ns(); });
  for (size_t i = 1; i < sequence.marks.size(); ++i) {
    StageTime& stage = profile_ns_[sequence.marks[i]];
    stage.ns += ns[i] - ns[i - 1];
    ++stage.count;
  }
}

void VulkanBackend::record(ProfiledSequence& sequence, const std::function<void(CommandSequence&)>& record) {
  CommandSequence& seq = *sequence.commands;
  sequence.marks.clear();
  marks_being_recorded_ = &sequence.marks;
  seq.begin();
  mark(seq, "start");
  record(seq);
  seq.end();
  marks_being_recorded_ = nullptr;
}

void VulkanBackend::run_adhoc(const std::function<void(CommandSequence&)>& commands) {
  record(adhoc_, commands);
  adhoc_.commands->submit();
  wait_and_collect(adhoc_);
}

void VulkanBackend::wait_for_all_sequences() {
  for (RecordedPass& pass : passes_) {
    for (ProfiledSequence& sequence : pass.sequences) wait_and_collect(sequence);
  }
  wait_and_collect(adhoc_);
}

std::string VulkanBackend::description() const {
  const DeviceInfo& info = device_->info();
  return fmt::format("vulkan ({}, {}, {:.1f} GiB, subgroup {}{})", info.name, device_type_name(info.type),
                     info.device_local_bytes / double(1ull << 30), info.subgroup_size,
                     matmul_->uses_integer_dot() ? ", integer dot" : "");
}

// ------------------------------------------------------------------------------------ set-up

void VulkanBackend::upload_weights() {
  const ModelConfig& config = model_->config();
  // Each matrix (or stack of matrices sharing one product) in a buffer of its own.
  const auto upload_stacked = [this](std::span<const WeightMatrix* const> parts) {
    int64_t rows = 0;
    for (const WeightMatrix* part : parts) rows += part->rows;
    Buffer& buffer = matrix_buffers_.emplace_back(
        *device_, device_matrix_bytes(parts[0]->type, rows, parts[0]->cols), MemoryUse::kDevice);
    return upload_stacked_matrices(*transfer_, buffer, 0, parts);
  };
  const auto upload = [&](const WeightMatrix& m) {
    const WeightMatrix* parts[] = {&m};
    return upload_stacked(parts);
  };

  // Every f32 vector the shaders read (norm weights) in one buffer, each 16-byte aligned.
  std::vector<const std::vector<float>*> vectors = {&model_->output_norm()};
  for (const auto& w : model_->layers()) {
    for (const auto* v : {&w.attn_norm, &w.q_norm, &w.k_norm, &w.post_attn_norm, &w.ffn_norm, &w.post_ffn_norm,
                          &w.per_layer_post_norm}) {
      if (!v->empty()) vectors.push_back(v);
    }
  }
  if (config.has_per_layer_embeddings()) vectors.push_back(&model_->per_layer_inputs().proj_norm);
  uint64_t total = 0;
  std::vector<uint64_t> offsets;
  for (const auto* v : vectors) {
    offsets.push_back(total);
    total += (v->size() * sizeof(float) + 15) / 16 * 16;
  }
  vectors_ = Buffer(*device_, total, MemoryUse::kDevice);
  for (size_t i = 0; i < vectors.size(); ++i) {
    transfer_->upload(vectors_, offsets[i], vectors[i]->data(), vectors[i]->size() * sizeof(float));
    vector_addresses_.emplace_back(vectors[i]->data(), vectors_.address() + offsets[i]);
  }

  const auto& gelu = gelu_f16_table();
  gelu_table_ = Buffer(*device_, sizeof(gelu), MemoryUse::kDevice);
  transfer_->upload(gelu_table_, 0, gelu.data(), sizeof(gelu));

  matrix_buffers_.reserve(3 + 9 * model_->layers().size());
  token_embd_ = upload(model_->token_embedding());
  output_ = model_->output_tied() ? token_embd_ : upload(model_->output());
  // per_layer_token_embd stays on the host (write_step_inputs gathers the batch's rows): it is
  // read a row per token, and on E2B it is about as large as the rest of the model.
  if (config.has_per_layer_embeddings()) per_layer_model_proj_ = upload(model_->per_layer_inputs().model_proj);
  for (int il = 0; il < config.n_layer; ++il) {
    const auto& w = model_->layers()[il];
    LayerWeights& d = layers_.emplace_back();
    // A KV-shared layer has no K/V projections or K norm: it reads its source layer's cache.
    std::vector<const WeightMatrix*> projections = {&w.wq};
    if (config.owns_kv(il)) projections.push_back(&w.wk);
    if (w.wv) projections.push_back(&*w.wv);
    const auto stacks = [&](const WeightMatrix* m) { return m->type == w.wq.type && m->cols == w.wq.cols; };
    if (config.owns_kv(il) && std::all_of(projections.begin(), projections.end(), stacks)) {
      d.wqkv = upload_stacked(projections);
      d.wq = matrix_rows(*d.wqkv, 0, w.wq.rows);
      d.wk = matrix_rows(*d.wqkv, w.wq.rows, w.wk.rows);
      if (w.wv) d.wv = matrix_rows(*d.wqkv, w.wq.rows + w.wk.rows, w.wv->rows);
    } else {
      d.wq = upload(w.wq);
      if (config.owns_kv(il)) d.wk = upload(w.wk);
      if (w.wv) d.wv = upload(*w.wv);
    }
    if (config.owns_kv(il)) d.k_norm = vector_address(w.k_norm);
    d.wo = upload(w.wo);
    d.gate = upload(w.ffn_gate);
    d.up = upload(w.ffn_up);
    d.down = upload(w.ffn_down);
    d.attn_norm = vector_address(w.attn_norm);
    d.q_norm = vector_address(w.q_norm);
    d.post_attn_norm = vector_address(w.post_attn_norm);
    d.ffn_norm = vector_address(w.ffn_norm);
    d.post_ffn_norm = vector_address(w.post_ffn_norm);
    d.output_scale = w.output_scale;
    if (config.has_per_layer_embeddings()) {
      d.per_layer_gate = upload(w.per_layer_gate);
      d.per_layer_proj = upload(w.per_layer_proj);
      d.per_layer_post_norm = vector_address(w.per_layer_post_norm);
    }
  }
}

uint64_t VulkanBackend::rope_set_offset(int set) const {
  int max_rot = 2;
  for (const RopeSet& r : rope_sets_) max_rot = std::max(max_rot, r.n_rot);
  return uint64_t(set) * kMaxStep * (max_rot / 2) * 8;  // [kMaxStep][pairs][cos, sin] f32 per set
}

VkDeviceAddress VulkanBackend::vector_address(const std::vector<float>& values) const {
  for (const auto& [data, address] : vector_addresses_) {
    if (data == values.data()) return address;
  }
  fail("internal: a weight vector was not uploaded");
}

void VulkanBackend::allocate_state() {
  const ModelConfig& config = model_->config();
  size_t max_kv_width = 0, max_q_width = 0, max_ff = 0;
  for (int il = 0; il < config.n_layer; ++il) {
    const LayerConfig& lc = config.layers[il];
    // attention_rows.comp gives each invocation pairs of head dims.
    if (lc.head_dim % 2 != 0) fail("Vulkan: layer {} has an odd head size ({}); the CPU backend runs it", il, lc.head_dim);
    const size_t width = kv_width(lc);
    max_kv_width = std::max(max_kv_width, width);
    max_q_width = std::max(max_q_width, static_cast<size_t>(lc.n_head) * lc.head_dim);
    max_ff = std::max(max_ff, static_cast<size_t>(lc.n_ff));
    // KV-shared layers read their source layer's cache and get none (as on the CPU).
    if (config.owns_kv(il)) {
      LayerCache& cache = cache_.emplace_back();
      cache.k = Buffer(*device_, kKvSlots * width * 2, MemoryUse::kDevice);
      cache.v = Buffer(*device_, kKvSlots * width * 2, MemoryUse::kDevice);
      cache.k_as_written = Buffer(*device_, kv::kTotalSlots * width * 2, MemoryUse::kDevice);
    }

    // Layers with the same RoPE parameters share the angles rotate_keys uploads.
    const auto& factors = model_->layers()[il].rope_freq_factors;
    const auto same = [&](const RopeSet& s) {
      return s.n_rot == lc.n_rot && s.base == lc.rope_base && s.freq_scale == lc.rope_freq_scale &&
             *s.freq_factors == factors;
    };
    auto it = std::find_if(rope_sets_.begin(), rope_sets_.end(), same);
    if (it == rope_sets_.end()) {
      rope_sets_.push_back({lc.n_rot, lc.rope_base, lc.rope_freq_scale, &factors});
      it = rope_sets_.end() - 1;
    }
    rope_set_of_layer_.push_back(static_cast<int>(it - rope_sets_.begin()));
  }

  const uint64_t n = kMaxStep;
  const auto device_f32 = [&](uint64_t count) { return Buffer(*device_, count * 4, MemoryUse::kDevice); };
  const auto upload = [&](uint64_t bytes) { return Buffer(*device_, bytes, MemoryUse::kUpload); };
  tokens_ = upload(n * 4);
  positions_ = upload(n * 4);
  slots_ = upload(n * 4);
  slot_positions_ = upload(kKvSlots * 4);
  global_view_ = upload(kKvSlots * 4);
  sliding_view_ = upload(kKvSlots * 4);
  candidates_ = upload(kMaxCandidates * 4);
  rope_ = upload(rope_set_offset(static_cast<int>(rope_sets_.size())));
  attention_steps_ = upload(uint64_t(config.n_layer) * sizeof(AttentionStepParams));
  std::memcpy(slot_positions_.mapped(), slot_position_.data(), kKvSlots * 4);

  int max_heads = 1;
  for (const LayerConfig& lc : config.layers) max_heads = std::max(max_heads, lc.n_head);
  partials_ = device_f32(uint64_t(max_heads) * split_kv_max_chunks(split_kv_chunk_keys_) * (2 + config.max_head_dim()));
  // A count per head of rows of the Q/K/V product (n_head + 2 n_head_kv at most), zero between
  // dispatches.
  arrivals_ = Buffer(*device_, uint64_t{3} * max_heads * 4, MemoryUse::kDevice);
  run_adhoc([&](CommandSequence& seq) { seq.fill(arrivals_, 0, arrivals_.size(), 0); });
  x_ = device_f32(n * config.n_embd);
  normed_ = device_f32(n * config.n_embd);
  q_ = device_f32(n * max_q_width);
  attn_ = device_f32(n * max_q_width);
  uint32_t max_projections_width = 0;
  for (const LayerWeights& w : layers_) max_projections_width = std::max(max_projections_width, w.projections_width());
  qkv_ = device_f32(n * max_projections_width);
  proj_ = device_f32(n * config.n_embd);
  // gate_ also takes the per-layer embedding block's gate.
  gate_ = device_f32(n * std::max<size_t>(max_ff, config.n_embd_per_layer));
  up_ = device_f32(n * max_ff);
  if (config.has_per_layer_embeddings()) {
    const uint64_t all_layers = uint64_t(config.n_layer) * config.n_embd_per_layer;
    per_layer_token_rows_ = upload(n * all_layers * 4);
    per_layer_projected_ = device_f32(n * all_layers);
    per_layer_inputs_ = device_f32(n * all_layers);
  }
  uint64_t scratch = 16;
  for (const auto& w : layers_) {  // every matrix's input (a layer's matrices may differ in type)
    for (const DeviceMatrix* m : {&w.wq, &w.wk, &w.wo, &w.gate, &w.up, &w.down, &w.per_layer_gate, &w.per_layer_proj}) {
      scratch = std::max(scratch, MatmulKernels::scratch_bytes(m->type, n, m->cols));
    }
    if (w.wv) scratch = std::max(scratch, MatmulKernels::scratch_bytes(w.wv->type, n, w.wv->cols));
  }
  scratch = std::max(scratch, MatmulKernels::scratch_bytes(per_layer_model_proj_.type, n, per_layer_model_proj_.cols));
  scratch = std::max(scratch, MatmulKernels::scratch_bytes(output_.type, kMaxLogitRows, output_.cols));
  scratch_ = Buffer(*device_, scratch, MemoryUse::kDevice);
  logits_ = Buffer(*device_, uint64_t{kMaxLogitRows} * config.n_vocab * 4, MemoryUse::kReadback);
  last_hidden_ = Buffer(*device_, uint64_t(config.n_embd) * 4, MemoryUse::kReadback);

  rotate_slots_ = upload(kv::kTotalSlots * 4);
  rotate_first_move_ = upload(kv::kTotalSlots * 4);
  int max_rot = 0;
  for (const auto& s : rope_sets_) max_rot = std::max(max_rot, s.n_rot);
  rotate_cos_sin_ = upload(uint64_t{kv::kTotalSlots} * rope_sets_.size() * std::max(1, max_rot / 2) * 8);
  kv_rows_ = Buffer(*device_, uint64_t{kv::kTotalSlots} * max_kv_width * 2, MemoryUse::kReadback);
  kv_row_ids_ = upload(kv::kTotalSlots * 4 * 3);  // slots, moved sources, moved destinations

  // Each layer's attention inputs' parameters, for products that prepare the inputs themselves
  // (MatmulKernels::record_head_matvec, which takes the token count from its own push constants).
  std::vector<InputsPush> inputs(config.n_layer);
  for (int il = 0; il < config.n_layer; ++il) inputs[il] = attention_inputs(il, 0);
  inputs_params_ = Buffer(*device_, inputs.size() * sizeof(InputsPush), MemoryUse::kDevice);
  transfer_->upload(inputs_params_, 0, inputs.data(), inputs.size() * sizeof(InputsPush));
}

const ComputePipeline& VulkanBackend::pipeline(std::string_view shader, uint32_t extra) {
  const uint32_t max_head_dim = static_cast<uint32_t>(model_->config().max_head_dim());
  if (shader == "rms_norm") {
    const uint32_t spec[] = {kNormWorkgroup, kNormWorkgroup};
    return pipelines_->get(shader, spec);
  }
  if (shader == "norm_quantize") {
    const DeviceInfo& info = device_->info();
    const uint32_t workgroup = norm_quantize_workgroup(info, kNormWorkgroup);
    const uint32_t n = static_cast<uint32_t>(model_->config().n_embd);
    const uint32_t spec[] = {workgroup, workgroup / info.min_subgroup_size, (n + workgroup - 1) / workgroup};
    return pipelines_->get(shader, spec);
  }
  if (shader == "per_layer_inputs") {
    const uint32_t spec[] = {kHeadWorkgroup, kHeadWorkgroup};
    return pipelines_->get(shader, spec);
  }
  if (shader == "attention_inputs") {
    const uint32_t spec[] = {kHeadWorkgroup, kHeadWorkgroup, max_head_dim};
    return pipelines_->get(shader, spec);
  }
  if (shader == "attention") {
    const uint32_t spec[] = {max_head_dim, tiled_attention_tokens_};
    return pipelines_->get(shader, spec);
  }
  if (shader == "attention_combine") {
    const uint32_t max_chunks = split_kv_max_chunks(split_kv_chunk_keys_);
    const uint32_t spec[] = {combine_workgroup(device_->info(), max_chunks), max_chunks};
    return pipelines_->get(shader, spec);
  }
  const uint32_t spec[] = {extra != 0 ? extra : kElementWorkgroup};
  return pipelines_->get(shader, spec);
}

const ComputePipeline& VulkanBackend::attention_rows_pipeline(bool split) {
  const uint32_t max_head_dim = static_cast<uint32_t>(model_->config().max_head_dim());
  const AttentionRowsShape& shape = split ? attention_rows_.split : attention_rows_.one_row;
  return pipelines_->get("attention_rows", attention_rows_constants(shape, max_head_dim, split));
}

// ------------------------------------------------------------------------------------ forward

bool VulkanBackend::forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
                            std::span<const int32_t> candidates, Logits& out) {
  const ModelConfig& config = model_->config();
  check_forward_inputs(batch, view, wanted, candidates, config.n_vocab);
  if (wanted == LogitsWanted::Candidates && candidates.size() > kMaxCandidates) {
    fail("{} candidate tokens exceed the {} a probe may ask for", candidates.size(), kMaxCandidates);
  }
  const uint32_t n_tokens = static_cast<uint32_t>(batch.tokens.size());
  for (uint32_t t = 0; t < n_tokens; ++t) {
    slot_position_[batch.slots[t]] = batch.positions[t];
    slot_moved_by_[batch.slots[t]] = 0;
  }
  out.n_rows = 0;
  out.n_cols = wanted == LogitsWanted::Candidates ? static_cast<int64_t>(candidates.size()) : config.n_vocab;
  out.values.clear();
  if (wanted == LogitsWanted::None) out.n_cols = 0;
  for (uint32_t first = 0; first < n_tokens; first += kMaxStep) {
    const Step step{first, std::min(kMaxStep, n_tokens - first)};
    const bool last_step = first + step.n_tokens == n_tokens;
    const LogitsWanted step_wanted = wanted == LogitsWanted::All || last_step ? wanted : LogitsWanted::None;
    if (!forward_step(batch, view, step, step_wanted, candidates, out)) return false;
  }
  return true;
}

VulkanBackend::AttentionSplit VulkanBackend::write_step_inputs(const Batch& batch, const AttentionView& view,
                                                               const Step& step) {
  // The host-visible inputs may be written only while nothing recorded earlier still reads them.
  wait_for_all_sequences();
  std::memcpy(tokens_.mapped(), batch.tokens.data() + step.first, step.n_tokens * 4);
  std::memcpy(positions_.mapped(), batch.positions.data() + step.first, step.n_tokens * 4);
  std::memcpy(slots_.mapped(), batch.slots.data() + step.first, step.n_tokens * 4);
  std::memcpy(slot_positions_.mapped(), slot_position_.data(), kKvSlots * 4);
  // RoPE cos/sin of every token for each parameter set, from the same code as the CPU's.
  RopeTable table;
  for (size_t set = 0; set < rope_sets_.size(); ++set) {
    const RopeSet& r = rope_sets_[set];
    auto* out = reinterpret_cast<float*>(rope_.mapped() + rope_set_offset(static_cast<int>(set)));
    for (uint32_t t = 0; t < step.n_tokens; ++t) {
      table.compute(batch.positions[step.first + t], r.n_rot, r.base, r.freq_scale, *r.freq_factors);
      for (int i = 0; i < table.pairs(); ++i) {
        *out++ = table.cos(i);
        *out++ = table.sin(i);
      }
    }
  }
  const AttentionSplit split = write_attention_steps(view, step.n_tokens);
  if (model_->config().has_per_layer_embeddings()) write_per_layer_token_rows(batch, step);
  return split;
}

VulkanBackend::AttentionSplit VulkanBackend::write_attention_steps(const AttentionView& view, uint32_t n_tokens) {
  struct ListedView {
    uint32_t count = 0;
    int32_t first_cell = 0;
  };
  const auto write_view = [this](const kv::SlotRuns& runs, Buffer& buffer) {
    auto* out = reinterpret_cast<uint32_t*>(buffer.mapped());
    ListedView listed;
    runs.for_each([&](uint32_t slot) { out[listed.count++] = slot; });
    // On a fresh stream a key's llama.cpp KV cell is its position (as the CPU backend assumes).
    listed.first_cell = listed.count == 0 ? 0 : std::max(0, slot_position_[out[0]]);
    return listed;
  };
  const ListedView global = write_view(view.global_slots, global_view_);
  const ListedView sliding = write_view(view.sliding_slots, sliding_view_);
  const ModelConfig& config = model_->config();
  auto* steps = reinterpret_cast<AttentionStepParams*>(attention_steps_.mapped());
  AttentionSplit split_layers;
  for (int il = 0; il < config.n_layer; ++il) {
    const LayerConfig& lc = config.layers[il];
    const ListedView& listed = lc.sliding ? sliding : global;
    // The scheme, and its workgroups: tiled per (block of tiled_attention_tokens_ tokens, head);
    // split-KV per (token, head, chunk), then the chunks merged per (token, head); one-row per
    // (token, head).
    const AttentionStepParams p = attention_step_params(device_->info(), n_tokens, lc.head_dim, lc.n_head,
                                                        listed.count, listed.first_cell, split_kv_chunk_keys_,
                                                        tiled_attention_tokens_);
    steps[il] = p;  // mapped memory, written and not read back
    (lc.sliding ? split_layers.sliding : split_layers.global) |= p.scheme == 1;
  }
  return split_layers;
}

void VulkanBackend::write_per_layer_token_rows(const Batch& batch, const Step& step) {
  // Each token's per_layer_token_embd row, decoded exactly (as the CPU backend's dequantize_row).
  const WeightMatrix& table = model_->per_layer_inputs().token_embd;
  auto* out = reinterpret_cast<float*>(per_layer_token_rows_.mapped());
  for (uint32_t t = 0; t < step.n_tokens; ++t) {
    const int32_t token = batch.tokens[step.first + t];
    dequantize(table.type, table.row(token), table.cols, out + uint64_t(t) * table.cols);
  }
}

bool VulkanBackend::forward_step(const Batch& batch, const AttentionView& view, const Step& step,
                                 LogitsWanted wanted, std::span<const int32_t> candidates, Logits& out) {
  const ModelConfig& config = model_->config();
  AttentionSplit split;
  host_timed("step inputs", [&] { split = write_step_inputs(batch, view, step); });
  const uint32_t n = step.n_tokens;
  const uint32_t n_cand = static_cast<uint32_t>(candidates.size());
  if (wanted == LogitsWanted::Candidates) std::memcpy(candidates_.mapped(), candidates.data(), n_cand * 4);

  // The logits of up to kMaxLogitRows rows and the batch's last hidden state come at the end of
  // the pass (no device round trip of their own); more rows follow in passes of their own.
  const bool logits_in_pass = wanted != LogitsWanted::None && (wanted != LogitsWanted::All || n <= kMaxLogitRows);
  const bool copy_hidden = batch.last_hidden != nullptr && step.first + n == batch.tokens.size();
  const PassShape shape{n, split, logits_in_pass ? wanted : LogitsWanted::None,
                        wanted == LogitsWanted::Candidates ? n_cand : 0,
                        copy_hidden && (logits_in_pass || wanted == LogitsWanted::None)};
  profile_batch_ = n > 1;
  if (!run_pass(pass_for(shape), batch.cancelled)) return false;

  const auto collect_hidden = [&] {
    const auto* values = reinterpret_cast<const float*>(last_hidden_.mapped());
    batch.last_hidden->assign(values, values + config.n_embd);
  };
  const int64_t cols = out.n_cols;
  const auto collect_logits = [&](uint32_t rows) {
    const auto* values = reinterpret_cast<const float*>(logits_.mapped());
    out.values.insert(out.values.end(), values, values + static_cast<size_t>(rows) * cols);
    out.n_rows += rows;
  };
  host_timed("copy out", [&] {
    if (logits_in_pass) collect_logits(wanted == LogitsWanted::All ? n : 1);
    if (shape.copy_hidden) collect_hidden();
  });
  if (wanted != LogitsWanted::All || logits_in_pass) return true;

  // All rows of a long step: kMaxLogitRows at a time, the hidden state with the last of them.
  for (uint32_t row = 0; row < n; row += kMaxLogitRows) {
    const uint32_t rows = std::min(kMaxLogitRows, n - row);
    const bool with_hidden = copy_hidden && row + rows == n;
    run_adhoc([&](CommandSequence& seq) {
      if (with_hidden) record_hidden_copy(seq, n);
      record_logits(seq, row, rows, wanted, n_cand);
    });
    collect_logits(rows);
    if (with_hidden) collect_hidden();
  }
  return true;
}

VulkanBackend::RecordedPass& VulkanBackend::pass_for(const PassShape& shape) {
  const auto found = std::find_if(passes_.begin(), passes_.end(), [&](const RecordedPass& p) { return p.shape == shape; });
  if (found != passes_.end()) {
    passes_.splice(passes_.begin(), passes_, found);
    return passes_.front();
  }
  // A new shape: the least recently used pass's sequences take it, or new ones; run_pass records
  // them as it goes.
  if (passes_.size() >= kMaxRecordedPasses) {
    passes_.splice(passes_.begin(), passes_, std::prev(passes_.end()));
  } else {
    passes_.emplace_front();
  }
  RecordedPass& pass = passes_.front();
  pass.shape = shape;
  const int n_layer = model_->config().n_layer;
  const int per_submit = options_.layers_per_submit;
  pass.sequences.resize(static_cast<size_t>((n_layer + per_submit - 1) / per_submit));
  for (ProfiledSequence& sequence : pass.sequences) {
    if (!sequence.commands) sequence.commands = std::make_unique<CommandSequence>(*device_);
  }
  pass.sequences_recorded = 0;
  ++passes_recorded_;
  return pass;
}

void VulkanBackend::record_pass_sequence(RecordedPass& pass, size_t index) {
  const int n_layer = model_->config().n_layer;
  const int first = static_cast<int>(index) * options_.layers_per_submit;
  const int last = std::min(n_layer, first + options_.layers_per_submit);
  record(pass.sequences[index], [&](CommandSequence& seq) {
    if (first == 0) record_embed(seq, pass.shape.n_tokens);
    for (int il = first; il < last; ++il) record_layer(seq, il, pass.shape);
    if (last == n_layer) record_pass_outputs(seq, pass.shape);
  });
}

bool VulkanBackend::run_pass(RecordedPass& pass, const std::function<bool()>& cancelled) {
  // A long pass keeps two sequences in flight: the device goes on to the next chunk of layers
  // while the host waits for the one before it and asks about cancellation, so a cancelled
  // prefill stops with little queued. A short one (decode, a probe: a few milliseconds) is
  // submitted whole, cancellation asked before each submission as ever: waiting on a fence
  // between chunks left the device idle whenever the host woke late (an H100 decoding the 12B
  // preset during a 16-core build: 145 against 154 tok/s on a quiet host). A sequence not yet
  // recorded for this shape is recorded just before its submission, while the device runs the
  // ones before it (recording a whole pass first would keep the device idle: ~46 ms for 512
  // tokens of a 12B model on the H200).
  auto& sequences = pass.sequences;
  const size_t in_flight = pass.shape.n_tokens <= kWholePassTokens ? sequences.size() : 2;
  bool was_cancelled = false;
  for (size_t i = 0; i < sequences.size(); ++i) {
    if (cancelled && cancelled()) {
      was_cancelled = true;
      break;
    }
    if (i == pass.sequences_recorded) {
      host_timed("record", [&] { record_pass_sequence(pass, i); });
      ++pass.sequences_recorded;
    }
    if (i >= in_flight) wait_and_collect(sequences[i - in_flight]);
    host_timed("submit", [&] { sequences[i].commands->submit(); });
  }
  for (ProfiledSequence& sequence : sequences) wait_and_collect(sequence);
  return !was_cancelled;
}

void VulkanBackend::record_hidden_copy(CommandSequence& seq, uint32_t n_tokens) {
  const uint64_t hidden_bytes = uint64_t(model_->config().n_embd) * 4;
  seq.copy(x_, uint64_t{n_tokens - 1} * hidden_bytes, last_hidden_, 0, hidden_bytes);
}

void VulkanBackend::record_pass_outputs(CommandSequence& seq, const PassShape& shape) {
  if (shape.copy_hidden) record_hidden_copy(seq, shape.n_tokens);
  if (shape.logits == LogitsWanted::None) return;
  const bool all_rows = shape.logits == LogitsWanted::All;
  record_logits(seq, all_rows ? 0 : shape.n_tokens - 1, all_rows ? shape.n_tokens : 1, shape.logits,
                shape.n_candidates);
}

void VulkanBackend::record_embed(CommandSequence& seq, uint32_t n_tokens) {
  const ModelConfig& config = model_->config();
  const EmbedPush push{token_embd_.data,
                       token_embd_.scales,
                       tokens_.address(),
                       x_.address(),
                       static_cast<uint32_t>(token_embd_.row_bytes),
                       static_cast<uint32_t>(config.n_embd),
                       std::sqrt(static_cast<float>(config.n_embd)),
                       n_tokens};
  seq.dispatch_groups(pipeline("embed_" + type_suffix(token_embd_.type)), push, n_tokens);
  seq.barrier();
  mark(seq, "embed");
  if (config.has_per_layer_embeddings()) record_per_layer_inputs(seq, n_tokens);
}

void VulkanBackend::record_per_layer_inputs(CommandSequence& seq, uint32_t n_tokens) {
  const ModelConfig& config = model_->config();
  const uint32_t n_embd = static_cast<uint32_t>(config.n_embd);
  const uint32_t width = static_cast<uint32_t>(config.n_embd_per_layer);
  // The projection of the scaled token embeddings for all layers at once, then per (token, layer)
  // its norm plus the token's own row (per_layer_inputs.comp).
  const PreparedActivations a = matmul_->record_prepare(seq, per_layer_model_proj_.type, x_.address(), n_tokens,
                                                        n_embd, n_embd, scratch_.address());
  seq.barrier();
  matmul_->record_matmul(seq, per_layer_model_proj_, a, per_layer_projected_.address(), config.n_layer * width);
  seq.barrier();
  mark(seq, "per-layer projection");
  const PerLayerInputScales scales = config.per_layer_input_scales();
  const PerLayerInputsPush push{per_layer_projected_.address(),
                                per_layer_token_rows_.address(),
                                vector_address(model_->per_layer_inputs().proj_norm),
                                per_layer_inputs_.address(),
                                width,
                                static_cast<uint32_t>(config.n_layer),
                                n_tokens,
                                config.norm_eps,
                                scales.projection,
                                scales.token,
                                scales.input,
                                0};
  seq.dispatch_groups(pipeline("per_layer_inputs"), push, uint64_t{n_tokens} * config.n_layer);
  seq.barrier();
  mark(seq, "per-layer inputs");
}

void VulkanBackend::record_norm(CommandSequence& seq, VkDeviceAddress x, VkDeviceAddress weight, VkDeviceAddress dst,
                                VkDeviceAddress residual, uint32_t n, uint32_t rows, float out_scale) {
  const NormPush push{x, weight, dst, residual, n, n, n, model_->config().norm_eps, out_scale, rows};
  seq.dispatch_groups(pipeline("rms_norm"), push, rows);
  seq.barrier();
}

PreparedActivations VulkanBackend::record_norm_input(CommandSequence& seq, GgmlType weight_type, VkDeviceAddress x,
                                                     VkDeviceAddress weight, VkDeviceAddress residual,
                                                     VkDeviceAddress next_weight, float out_scale, uint32_t rows,
                                                     std::span<const DeviceMatrix* const> consumers) {
  const uint32_t n = static_cast<uint32_t>(model_->config().n_embd);
  if (is_quantized(weight_type)) {
    const PreparedActivations prepared = MatmulKernels::quantized_layout(weight_type, rows, n, scratch_.address());
    const NormQuantizePush push{x, weight, residual, next_weight, prepared.values, prepared.scales, n,
                                model_->config().norm_eps, out_scale, rows};
    seq.dispatch_groups(pipeline("norm_quantize"), push, rows);
    record_prefetch(seq, rows, consumers);
    seq.barrier();
    return prepared;
  }
  if (residual != 0) {
    record_norm(seq, x, weight, 0, residual, n, rows, out_scale);
    record_norm(seq, residual, next_weight, normed_.address(), 0, n, rows, 1.0f);
  } else {
    record_norm(seq, x, weight, normed_.address(), 0, n, rows, 1.0f);
  }
  const PreparedActivations prepared =
      matmul_->record_prepare(seq, weight_type, normed_.address(), rows, n, n, scratch_.address());
  seq.barrier();
  return prepared;
}

PreparedActivations VulkanBackend::input_for(CommandSequence& seq, const PreparedActivations& prepared,
                                             const DeviceMatrix& m, VkDeviceAddress norm, uint32_t n_tokens) {
  if (MatmulKernels::shares_activations(prepared.weight_type, m.type)) return prepared;
  seq.barrier();
  return record_norm_input(seq, m.type, x_.address(), norm, 0, 0, 1.0f, n_tokens, std::array{&m});
}

void VulkanBackend::record_layer(CommandSequence& seq, int il, const PassShape& shape) {
  const uint32_t n_tokens = shape.n_tokens;
  record_attention(seq, il, shape);
  record_ffn(seq, il, n_tokens);
  if (model_->config().has_per_layer_embeddings()) record_per_layer_embedding(seq, il, n_tokens);
}

VulkanBackend::Projections VulkanBackend::projections_of(int il) const {
  // A token's projections lie side by side in qkv_: Q, then K, then V (Gemma 4 layers without
  // attn_v: V = K, the projection before K's norm and RoPE).
  const LayerConfig& lc = model_->config().layers[il];
  const VkDeviceAddress q = qkv_.address(), k = q + uint64_t(lc.n_head) * lc.head_dim * 4;
  return {q, k, layers_[il].wv ? k + uint64_t{kv_width(lc)} * 4 : k};
}

InputsPush VulkanBackend::attention_inputs(int il, uint32_t n_tokens) const {
  const ModelConfig& config = model_->config();
  const LayerConfig& lc = config.layers[il];
  const LayerWeights& w = layers_[il];
  const LayerCache& cache = cache_[lc.kv_layer];
  const Projections in = projections_of(il);
  // The heads are the queries, then the keys and values the layer writes: none on a KV-shared layer.
  const uint32_t written_kv_heads = config.owns_kv(il) ? static_cast<uint32_t>(lc.n_head_kv) : 0;
  return {in.q,
          in.k,
          in.v,
          q_.address(),
          w.q_norm,
          w.k_norm,
          rope_.address() + rope_set_offset(rope_set_of_layer_[il]),
          slots_.address(),
          cache.k.address(),
          cache.v.address(),
          static_cast<uint32_t>(lc.head_dim),
          static_cast<uint32_t>(lc.n_head),
          written_kv_heads,
          static_cast<uint32_t>(lc.n_rot),
          config.query_scale,
          config.norm_eps,
          config.v_norm ? 1u : 0u,
          n_tokens,
          w.projections_width(),
          0};
}

void VulkanBackend::record_attention(CommandSequence& seq, int il, const PassShape& shape) {
  const uint32_t n_tokens = shape.n_tokens;
  const ModelConfig& config = model_->config();
  const LayerConfig& lc = config.layers[il];
  const LayerWeights& w = layers_[il];
  const uint32_t n_embd = static_cast<uint32_t>(config.n_embd);
  const uint32_t q_width = static_cast<uint32_t>(lc.n_head * lc.head_dim);

  const PreparedActivations a =
      attention_input_prepared(il)
          ? MatmulKernels::quantized_layout(w.wq.type, n_tokens, n_embd, scratch_.address())
          : record_norm_input(seq, w.wq.type, x_.address(), w.attn_norm, 0, 0, 1.0f, n_tokens,
                              w.qkv());
  mark(seq, "attn norm");
  // A KV-shared layer computes queries only and attends over its source layer's cache.
  const bool writes_kv = config.owns_kv(il);
  const uint32_t projections = w.projections_width();
  const Projections in = projections_of(il);
  // Where the matrix-vector kernel serves the stacked product, it also prepares each head's
  // attention inputs (one dispatch and barrier fewer).
  const bool inputs_in_product = w.wqkv && matmul_->head_matvec_applies(*w.wqkv, lc.head_dim, a);
  if (inputs_in_product) {
    matmul_->record_head_matvec(seq, *w.wqkv, a, in.q, projections, lc.head_dim, config.max_head_dim(),
                                inputs_params_.address() + uint64_t(il) * sizeof(InputsPush), arrivals_.address());
  } else if (w.wqkv) {
    matmul_->record_matmul(seq, *w.wqkv, a, in.q, projections);
  } else {
    // Projections of other types than wq's may need activations of their own.
    PreparedActivations input = a;
    const auto record_projection = [&](const DeviceMatrix& m, VkDeviceAddress out) {
      input = input_for(seq, input, m, w.attn_norm, n_tokens);
      matmul_->record_matmul(seq, m, input, out, projections);
    };
    record_projection(w.wq, in.q);
    if (writes_kv) record_projection(w.wk, in.k);
    if (w.wv) record_projection(*w.wv, in.v);
  }
  seq.barrier();
  if (inputs_in_product) {
    mark(seq, "qkv + qk norm + rope + kv");
  } else {
    mark(seq, "qkv");
    const InputsPush inputs = attention_inputs(il, n_tokens);
    seq.dispatch_groups(pipeline("attention_inputs", kHeadWorkgroup), inputs,
                        uint64_t{n_tokens} * (inputs.n_head + 2 * inputs.n_head_kv));
    seq.barrier();
    mark(seq, "qk norm + rope + kv");
  }
  LayerCache& cache = cache_[lc.kv_layer];

  // Where a head is whole Q8_0 blocks, the attention kernel writes wo's quantized input itself
  // (one dispatch and barrier fewer per layer); otherwise f32, quantized after it.
  const bool quantize_in_attention = is_quantized(w.wo.type) && lc.head_dim % kQuantBlock == 0;
  const PreparedActivations quantized_output =
      quantize_in_attention ? MatmulKernels::quantized_layout(w.wo.type, n_tokens, q_width, scratch_.address())
                            : PreparedActivations{};
  // The view's length, the scheme and the workgroup counts are the step's (write_attention_steps).
  const uint64_t step_offset = uint64_t(il) * sizeof(AttentionStepParams);
  const VkDeviceAddress step = attention_steps_.address() + step_offset;
  const AttentionPush attention{q_.address(),
                                cache.k.address(),
                                cache.v.address(),
                                lc.sliding ? sliding_view_.address() : global_view_.address(),
                                slot_positions_.address(),
                                positions_.address(),
                                attn_.address(),
                                static_cast<uint32_t>(lc.head_dim),
                                static_cast<uint32_t>(lc.n_head),
                                static_cast<uint32_t>(lc.n_head_kv),
                                lc.sliding ? config.sliding_window : 0,
                                n_tokens,
                                0,
                                step,
                                partials_.address(),
                                quantized_output.values,
                                quantized_output.scales};
  const bool tiled = tiled_attention(n_tokens, lc.head_dim);
  const bool split = lc.sliding ? shape.split.sliding : shape.split.global;
  seq.dispatch_indirect(tiled ? pipeline("attention") : attention_rows_pipeline(split), attention, attention_steps_,
                        step_offset + offsetof(AttentionStepParams, attention_groups));
  record_prefetch(seq, n_tokens, std::array{&w.wo});
  seq.barrier();
  static constexpr const char* kAttentionStage[2][2] = {{"attention (global)", "attention (sliding)"},
                                                         {"attention tiled (global)", "attention tiled (sliding)"}};
  mark(seq, kAttentionStage[tiled ? 1 : 0][lc.sliding ? 1 : 0]);
  if (split) {  // the chunks merged per head
    const CombinePush combine{partials_.address(),
                              attn_.address(),
                              quantized_output.values,
                              quantized_output.scales,
                              step,
                              n_tokens * static_cast<uint32_t>(lc.n_head),
                              static_cast<uint32_t>(lc.head_dim)};
    seq.dispatch_indirect(pipeline("attention_combine"), combine, attention_steps_,
                          step_offset + offsetof(AttentionStepParams, combine_groups));
    seq.barrier();
    mark(seq, "attention combine");
  }

  PreparedActivations o = quantized_output;
  if (!quantize_in_attention) {
    o = matmul_->record_prepare(seq, w.wo.type, attn_.address(), n_tokens, q_width, q_width, scratch_.address());
    seq.barrier();
    mark(seq, "wo input");
  }
  matmul_->record_matmul(seq, w.wo, o, proj_.address(), n_embd);
  seq.barrier();
  mark(seq, "wo");
}

void VulkanBackend::record_ffn(CommandSequence& seq, int il, uint32_t n_tokens) {
  const ModelConfig& config = model_->config();
  const LayerWeights& w = layers_[il];
  const uint32_t n_embd = static_cast<uint32_t>(config.n_embd);
  const uint32_t n_ff = static_cast<uint32_t>(config.layers[il].n_ff);

  // The attention block's sandwich norm into the residual, then the FFN's input norm.
  const PreparedActivations a = record_norm_input(seq, w.gate.type, proj_.address(), w.post_attn_norm, x_.address(),
                                                  w.ffn_norm, 1.0f, n_tokens, std::array{&w.gate, &w.up});
  mark(seq, "post-attn + ffn norm");
  PreparedActivations d;
  if (matmul_->gated_matvec_applies(w.gate, w.up, w.down.type, a)) {
    // Few tokens: the products, GEGLU and the down product's input quantization in one dispatch,
    // into gate_ (free here, and apart from the scratch buffer `a` is read from).
    d = MatmulKernels::quantized_layout(w.down.type, n_tokens, n_ff, gate_.address());
    matmul_->record_gated_matvec(seq, w.gate, w.up, a, gelu_table_.address(), d);
    seq.barrier();
    mark(seq, "gate/up + geglu");
  } else {
    matmul_->record_matmul(seq, w.gate, a, gate_.address(), n_ff);
    // The norm above has updated the residual, so up's own activations (if it needs them) start there.
    matmul_->record_matmul(seq, w.up, input_for(seq, a, w.up, w.ffn_norm, n_tokens), up_.address(), n_ff);
    seq.barrier();
    mark(seq, "gate/up");
    d = record_geglu_input(seq, w.down.type, up_.address(), n_tokens, n_ff);
    mark(seq, "geglu");
  }
  matmul_->record_matmul(seq, w.down, d, proj_.address(), n_embd);
  seq.barrier();
  mark(seq, "down");
  if (config.has_per_layer_embeddings()) {
    // The per-layer embedding block comes next and ends the layer.
    record_norm(seq, proj_.address(), w.post_ffn_norm, 0, x_.address(), n_embd, n_tokens, 1.0f);
    mark(seq, "post-ffn norm");
  } else {
    record_layer_output_norm(seq, il, w.post_ffn_norm, n_tokens, "post-ffn norm", "post-ffn + next attn norm");
  }
}

// x += RMSNorm(proj(gelu(gate(x)) * this layer's per-layer input)), as the CPU backend.
void VulkanBackend::record_per_layer_embedding(CommandSequence& seq, int il, uint32_t n_tokens) {
  const ModelConfig& config = model_->config();
  const LayerWeights& w = layers_[il];
  const uint32_t n_embd = static_cast<uint32_t>(config.n_embd);
  const uint32_t width = static_cast<uint32_t>(config.n_embd_per_layer);
  const PreparedActivations a =
      matmul_->record_prepare(seq, w.per_layer_gate.type, x_.address(), n_tokens, n_embd, n_embd, scratch_.address());
  seq.barrier();
  matmul_->record_matmul(seq, w.per_layer_gate, a, gate_.address(), width);
  seq.barrier();
  mark(seq, "per-layer gate");
  // This layer's inputs: the per_layer_inputs_ rows of layer il, one per token.
  const VkDeviceAddress inputs = per_layer_inputs_.address() + uint64_t(il) * n_tokens * width * 4;
  const PreparedActivations d = record_geglu_input(seq, w.per_layer_proj.type, inputs, n_tokens, width);
  mark(seq, "per-layer geglu");
  matmul_->record_matmul(seq, w.per_layer_proj, d, proj_.address(), n_embd);
  seq.barrier();
  mark(seq, "per-layer proj");
  record_layer_output_norm(seq, il, w.per_layer_post_norm, n_tokens, "per-layer norm", "per-layer + next attn norm");
}

void VulkanBackend::record_layer_output_norm(CommandSequence& seq, int il, VkDeviceAddress norm, uint32_t n_tokens,
                                             const char* stage, const char* fused_stage) {
  const ModelConfig& config = model_->config();
  const LayerWeights& w = layers_[il];
  if (il + 1 < config.n_layer && attention_input_prepared(il + 1)) {
    // The sandwich norm into the residual, then the next layer's attention input norm.
    const LayerWeights& next = layers_[il + 1];
    record_norm_input(seq, next.wq.type, proj_.address(), norm, x_.address(), next.attn_norm, w.output_scale,
                      n_tokens, next.qkv());
    mark(seq, fused_stage);
  } else {
    record_norm(seq, proj_.address(), norm, 0, x_.address(), static_cast<uint32_t>(config.n_embd), n_tokens,
                w.output_scale);
    mark(seq, stage);
  }
}

void VulkanBackend::record_prefetch(CommandSequence& seq, uint32_t n_tokens,
                                    std::span<const DeviceMatrix* const> matrices) {
  if (matmul_->auto_picks_matvec(n_tokens)) prefetch_->record(seq, matrices);
}

bool VulkanBackend::attention_input_prepared(int il) const {
  // Quantized Q/K/V read Q8_0 activations whose layout (MatmulKernels::quantized_layout) needs no
  // recorded state, so the previous layer's last norm can write them (one dispatch fewer).
  return il > 0 && is_quantized(layers_[il].wq.type);
}

PreparedActivations VulkanBackend::record_geglu_input(CommandSequence& seq, GgmlType weight_type, VkDeviceAddress up,
                                                      uint32_t n_tokens, uint32_t n_ff) {
  const uint64_t n = uint64_t{n_tokens} * n_ff;
  if (is_quantized(weight_type)) {
    const PreparedActivations prepared =
        MatmulKernels::quantized_layout(weight_type, n_tokens, n_ff, scratch_.address());
    const GegluQuantizePush push{gate_.address(),       up,            prepared.values, prepared.scales,
                                 gelu_table_.address(), static_cast<uint32_t>(n), 0};
    seq.dispatch_groups(pipelines_->get("geglu_quantize"), push, groups_for(n, 256));  // a value per invocation
    seq.barrier();
    return prepared;
  }
  const GegluPush geglu{gate_.address(), up, gate_.address(), gelu_table_.address(), static_cast<uint32_t>(n), 0};
  seq.dispatch_groups(pipeline("geglu"), geglu, groups_for(n, kElementWorkgroup));
  seq.barrier();
  const PreparedActivations prepared =
      matmul_->record_prepare(seq, weight_type, gate_.address(), n_tokens, n_ff, n_ff, scratch_.address());
  seq.barrier();
  return prepared;
}

void VulkanBackend::record_logits(CommandSequence& seq, uint32_t first_row, uint32_t n_rows, LogitsWanted wanted,
                                  uint32_t n_candidates) {
  const ModelConfig& config = model_->config();
  const uint32_t n_embd = static_cast<uint32_t>(config.n_embd);
  const VkDeviceAddress rows = x_.address() + uint64_t{first_row} * n_embd * 4;
  record_norm(seq, rows, vector_address(model_->output_norm()), normed_.address(), 0, n_embd, n_rows, 1.0f);
  const PreparedActivations a =
      matmul_->record_prepare(seq, output_.type, normed_.address(), n_rows, n_embd, n_embd, scratch_.address());
  seq.barrier();
  mark(seq, "output norm");
  uint32_t cols = static_cast<uint32_t>(config.n_vocab);
  if (wanted == LogitsWanted::Candidates) {
    cols = n_candidates;
    matmul_->record_matmul_rows(seq, output_, a, candidates_.address(), n_candidates, logits_.address(), cols);
  } else {
    matmul_->record_matmul(seq, output_, a, logits_.address(), cols);
  }
  mark(seq, "output matmul");
  if (config.final_softcap > 0.0f) {
    seq.barrier();
    const SoftcapPush softcap{logits_.address(), n_rows * cols, config.final_softcap, 1.0f / config.final_softcap, 0};
    seq.dispatch_groups(pipeline("softcap"), softcap, groups_for(uint64_t{n_rows} * cols, kElementWorkgroup));
    mark(seq, "softcap");
  }
}

// ------------------------------------------------------------------------------------ KV moves

void VulkanBackend::rotate_keys(std::span<const uint32_t> slots, int64_t delta) {
  check_written_slots(slots, slot_position_, "rotate");
  if (slots.empty()) return;
  const ModelConfig& config = model_->config();
  const uint32_t n = static_cast<uint32_t>(slots.size());
  wait_for_all_sequences();
  auto* slot_ids = reinterpret_cast<uint32_t*>(rotate_slots_.mapped());
  auto* first_move = reinterpret_cast<uint32_t*>(rotate_first_move_.mapped());
  for (uint32_t i = 0; i < n; ++i) {
    slot_ids[i] = slots[i];
    first_move[i] = slot_moved_by_[slots[i]] == 0 ? 1u : 0u;
  }
  // cos/sin of each slot's whole move, per RoPE set, from the same code as the CPU's rotation
  // (model/rope.h), so the device applies the CPU's turn.
  auto* cos_sin = reinterpret_cast<float*>(rotate_cos_sin_.mapped());
  std::vector<uint64_t> set_offset;
  std::vector<float> c, s;
  uint64_t offset = 0;
  for (const RopeSet& set : rope_sets_) {
    set_offset.push_back(offset);
    const int half = set.n_rot / 2;
    c.resize(static_cast<size_t>(half));
    s.resize(static_cast<size_t>(half));
    for (uint32_t i = 0; i < n; ++i) {
      rope_rotation_by(slot_moved_by_[slots[i]] + delta, set.n_rot, set.base, set.freq_scale, *set.freq_factors,
                       c.data(), s.data());
      for (int pair = 0; pair < half; ++pair) {
        cos_sin[offset++] = c[pair];
        cos_sin[offset++] = s[pair];
      }
    }
  }
  run_adhoc([&](CommandSequence& seq) {
    for (int il = 0; il < config.n_kv_layers; ++il) {
      const LayerConfig& lc = config.layers[il];
      const RotatePush push{rotate_slots_.address(),
                            rotate_first_move_.address(),
                            rotate_cos_sin_.address() + set_offset[rope_set_of_layer_[il]] * 4,
                            cache_[il].k.address(),
                            cache_[il].k_as_written.address(),
                            static_cast<uint32_t>(lc.n_head_kv),
                            static_cast<uint32_t>(lc.head_dim),
                            static_cast<uint32_t>(lc.n_rot),
                            n};
      seq.dispatch_groups(pipeline("rotate_keys", kHeadWorkgroup), push, uint64_t{n} * lc.n_head_kv);
    }
  });
  for (uint32_t i = 0; i < n; ++i) {
    slot_moved_by_[slots[i]] += delta;
    slot_position_[slots[i]] = static_cast<int32_t>(slot_position_[slots[i]] + delta);
  }
}

std::vector<VulkanBackend::KvPartBatch> VulkanBackend::kv_part_batches(uint32_t n_slots) const {
  // A part is one layer's keys or its values for the slots; a batch, the parts that fit the
  // transfer buffer together (one submission each, instead of one per part).
  const ModelConfig& config = model_->config();
  const uint64_t capacity = kv_rows_.size() / 2;  // f16 values
  std::vector<KvPartBatch> batches;
  uint64_t used = capacity;
  for (int il = 0; il < config.n_kv_layers; ++il) {
    const uint64_t values = uint64_t{n_slots} * kv_width(config.layers[il]);
    for (int part = 0; part < 2; ++part) {
      if (used + values > capacity) {
        batches.emplace_back();
        used = 0;
      }
      batches.back().parts.push_back(KvPart{il, part == 0, used});
      used += values;
    }
  }
  return batches;
}

void VulkanBackend::read_kv(std::span<const uint32_t> slots, KvBlob& out) const {
  const ModelConfig& config = model_->config();
  const uint32_t n = static_cast<uint32_t>(slots.size());
  begin_kv_export(slots, slot_position_, slot_moved_by_, config.n_kv_layers, out);
  if (n == 0) return;
  auto& self = const_cast<VulkanBackend&>(*this);  // recording state only; the KV is not changed
  self.wait_for_all_sequences();
  // Row ids: all slots (values, unmoved keys), then the moved ones and where they go.
  auto* ids = reinterpret_cast<uint32_t*>(kv_row_ids_.mapped());
  std::copy(slots.begin(), slots.end(), ids);
  uint32_t* moved_src = ids + n;
  std::vector<uint32_t> moved_dst;
  for (uint32_t i = 0; i < n; ++i) {
    if (slot_moved_by_[slots[i]] != 0) {
      moved_src[moved_dst.size()] = slots[i];
      moved_dst.push_back(i);
    }
  }
  uint32_t* moved_dst_ids = ids + n + moved_dst.size();
  std::copy(moved_dst.begin(), moved_dst.end(), moved_dst_ids);
  const uint64_t ids_address = kv_row_ids_.address();
  const auto* rows = reinterpret_cast<const uint16_t*>(kv_rows_.mapped());
  for (const KvPartBatch& batch : kv_part_batches(n)) {
    self.run_adhoc([&](CommandSequence& seq) {
      for (const KvPart& part : batch.parts) {
        const LayerCache& cache = cache_[part.layer];
        const uint32_t width = static_cast<uint32_t>(kv_width(config.layers[part.layer]));
        const CopyRowsPush gather{(part.keys ? cache.k : cache.v).address(), kv_rows_.address() + part.first_value * 2,
                                  ids_address, 0, n, width};
        seq.dispatch_groups(self.pipeline("copy_rows", kHeadWorkgroup), gather, n);
      }
      if (moved_dst.empty()) return;
      // A moved key is exported as first written: its row replaced once the gathers are done.
      seq.barrier();
      for (const KvPart& part : batch.parts) {
        if (!part.keys) continue;
        const uint32_t width = static_cast<uint32_t>(kv_width(config.layers[part.layer]));
        const CopyRowsPush written{cache_[part.layer].k_as_written.address(), kv_rows_.address() + part.first_value * 2,
                                   ids_address + n * 4ull, ids_address + (n + moved_dst.size()) * 4ull,
                                   static_cast<uint32_t>(moved_dst.size()), width};
        seq.dispatch_groups(self.pipeline("copy_rows", kHeadWorkgroup), written, moved_dst.size());
      }
    });
    for (const KvPart& part : batch.parts) {
      const size_t values = static_cast<size_t>(n) * kv_width(config.layers[part.layer]);
      KvBlob::Layer& layer = out.layers[part.layer];
      (part.keys ? layer.k_as_written : layer.v).assign(rows + part.first_value, rows + part.first_value + values);
    }
  }
}

std::unique_ptr<RowDotTable> VulkanBackend::make_row_dot_table(size_t rows, size_t width) {
  return std::make_unique<VulkanRowDotTable>(*device_, *matmul_, *transfer_, rows, width);
}

void VulkanBackend::write_kv(const KvBlob& blob) {
  const ModelConfig& config = model_->config();
  check_kv_blob(blob, config);
  const uint32_t n = static_cast<uint32_t>(blob.slots.size());
  if (n == 0) return;
  wait_for_all_sequences();
  std::copy(blob.slots.begin(), blob.slots.end(), reinterpret_cast<uint32_t*>(kv_row_ids_.mapped()));
  auto* rows = reinterpret_cast<uint16_t*>(kv_rows_.mapped());
  for (const KvPartBatch& batch : kv_part_batches(n)) {
    for (const KvPart& part : batch.parts) {
      const auto& values = part.keys ? blob.layers[part.layer].k_as_written : blob.layers[part.layer].v;
      std::copy(values.begin(), values.end(), rows + part.first_value);
    }
    run_adhoc([&](CommandSequence& seq) {
      for (const KvPart& part : batch.parts) {
        const LayerCache& cache = cache_[part.layer];
        const CopyRowsPush scatter{kv_rows_.address() + part.first_value * 2, (part.keys ? cache.k : cache.v).address(),
                                   0, kv_row_ids_.address(), n,
                                   static_cast<uint32_t>(kv_width(config.layers[part.layer]))};
        seq.dispatch_groups(pipeline("copy_rows", kHeadWorkgroup), scatter, n);
      }
    });
  }
  std::map<int64_t, std::vector<uint32_t>> slots_by_move;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t slot = blob.slots[i];
    slot_position_[slot] = static_cast<int32_t>(blob.positions[i] - blob.moved_by[i]);
    slot_moved_by_[slot] = 0;
    if (blob.moved_by[i] != 0) slots_by_move[blob.moved_by[i]].push_back(slot);
  }
  // Each key is now as written at its written position; moving it as the original was moved
  // recomputes the same key and position.
  for (const auto& [delta, moved] : slots_by_move) rotate_keys(moved, delta);
}

}  // namespace channel::vulkan
