#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "backend/backend_checks.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/moe.h"
#include "backend/cpu/geglu.h"
#include "backend/cpu/ops.h"
#include "backend/cpu/simd_target.h"
#include "core/error.h"
#include "core/half.h"

namespace channel::cpu {
namespace {

void resize(std::vector<float>& buffer, int64_t n) {
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
}

// Tokens per grain of the row-wise steps (norms): a row is about a microsecond, so a decode
// step's single token stays on the calling thread, and a prefill's rows go over the pool (left on
// one thread they were a sixth of a 2-thread prefill's time, and a limit on many cores).
constexpr int64_t kTokenGrain = 4;
// Values per grain of the element-wise GEGLU (a table look-up each).
constexpr int64_t kElementGrain = 4096;

// RMSNorm of n_tokens rows of `width` values (in and out may be the same rows).
void norm_rows(const float* in, float* out, int64_t n_tokens, int64_t width, float eps, std::span<const float> weight,
               ThreadPool& pool) {
  pool.parallel_for(
      n_tokens,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) rms_norm(in + t * width, out + t * width, width, eps, weight);
      },
      kTokenGrain);
}

// y = geglu(gate, up) over n values, split over the pool.
void geglu_values(const float* gate, const float* up, float* y, int64_t n, ThreadPool& pool) {
  pool.parallel_for(
      n, [&](int64_t begin, int64_t end) { geglu(gate + begin, up + begin, y + begin, end - begin); }, kElementGrain);
}

}  // namespace

CpuBackend::CpuBackend(std::shared_ptr<const Model> model, int n_threads)
    : model_(std::move(model)),
      pool_(n_threads),
      weights_(*model_, pool_),
      slot_position_(kKvSlots, -1), slot_moved_by_(kKvSlots, 0) {
  apply_simd_target_override();
  view_list_.reserve(kKvSlots);  // a view lists each slot at most once: no growth while decoding
  // All KV memory is allocated here, once; nothing is resized while the engine runs. KV-shared
  // layers read an earlier layer's cache and get none.
  const ModelConfig& config = model_->config();
  for (int il = 0; il < config.n_kv_layers; ++il) {
    const size_t width = kv_width(config.layers[il]);
    cache_.push_back({std::vector<uint16_t>(kKvSlots * width), std::vector<uint16_t>(kKvSlots * width),
                      std::vector<uint16_t>(kv::kTotalSlots * width)});
  }
}

std::string CpuBackend::description() const {
  return fmt::format("cpu ({} threads, {})", pool_.size(), simd_target_name());
}

void CpuBackend::rotate_keys(std::span<const uint32_t> slots, int64_t delta) {
  check_written_slots(slots, slot_position_, "rotate");
  const ModelConfig& config = model_->config();
  pool_.parallel_for(static_cast<int64_t>(slots.size()), [&](int64_t begin, int64_t end) {
    std::vector<float> head(config.max_head_dim());
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t slot = slots[i];
      const bool first_move = slot_moved_by_[slot] == 0;
      const int64_t total = slot_moved_by_[slot] + delta;
      for (int il = 0; il < config.n_kv_layers; ++il) {
        const LayerConfig& lc = config.layers[il];
        const size_t width = kv_width(lc);
        LayerCache& cache = cache_[il];
        uint16_t* key = cache.k.data() + slot * width;
        uint16_t* as_written = cache.k_as_written.data() + slot * width;
        if (first_move) std::copy_n(key, width, as_written);
        for (int h = 0; h < lc.n_head_kv; ++h) {
          const uint16_t* source = as_written + static_cast<size_t>(h) * lc.head_dim;
          for (int d = 0; d < lc.head_dim; ++d) head[d] = f16_to_f32(source[d]);
          rope_rotate_by(head.data(), total, lc.n_rot, lc.rope_base, lc.rope_freq_scale,
                         model_->layers()[il].rope_freq_factors);
          for (int d = 0; d < lc.head_dim; ++d) key[static_cast<size_t>(h) * lc.head_dim + d] = f32_to_f16(head[d]);
        }
      }
      slot_moved_by_[slot] = total;
      slot_position_[slot] = static_cast<int32_t>(slot_position_[slot] + delta);
    }
  });
}

bool CpuBackend::forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted,
                         std::span<const int32_t> candidates, Logits& out) {
  check_forward_inputs(batch, view, wanted, candidates, model_->config().n_vocab);
  const ModelConfig& config = model_->config();
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());

  // Positions are known before any layer runs, so the causal mask of the batch's own slots
  // reads them from the same table as older slots.
  for (int64_t t = 0; t < n_tokens; ++t) {
    slot_position_[batch.slots[t]] = batch.positions[t];
    slot_moved_by_[batch.slots[t]] = 0;  // a fresh key: nothing to move
  }

  embed(batch);
  if (config.has_per_layer_embeddings()) prepare_per_layer_inputs(batch);
  for (int il = 0; il < config.n_layer; ++il) {
    if (batch.cancelled && batch.cancelled()) return false;
    attention_block(il, batch, config.layers[il].sliding ? view.sliding_slots : view.global_slots);
    ffn_block(il, n_tokens);
    if (config.has_per_layer_embeddings()) per_layer_embedding_block(il, n_tokens);
    scale_layer_output(il, n_tokens);
  }
  output_logits(n_tokens, wanted, candidates, out);
  if (batch.last_hidden) {
    const int64_t n_embd = config.n_embd;
    const float* last = x_.data() + (n_tokens - 1) * n_embd;  // the output norm wrote elsewhere
    batch.last_hidden->assign(last, last + n_embd);
  }
  return true;
}

void CpuBackend::embed(const Batch& batch) {
  const int64_t n_embd = model_->config().n_embd;
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  resize(x_, n_tokens * n_embd);
  const float scale = std::sqrt(static_cast<float>(n_embd));
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* row = x_.data() + t * n_embd;
    dequantize_row(model_->token_embedding(), batch.tokens[t], row);
    for (int64_t i = 0; i < n_embd; ++i) row[i] *= scale;
  }
}

// llama.cpp's gemma4 per-layer inputs (ops.h per_layer_input): the model projection of all
// tokens at once, then per token and layer its norm plus the token's own per-layer row.
void CpuBackend::prepare_per_layer_inputs(const Batch& batch) {
  const ModelConfig& config = model_->config();
  const PerLayerInputWeights& w = model_->per_layer_inputs();
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  const int64_t width = config.n_embd_per_layer;
  const int64_t all_layers = int64_t{config.n_layer} * width;
  const PerLayerInputScales scales = config.per_layer_input_scales();

  // proj_ takes the projections of all tokens, gate_ one token's per-layer embedding row at a time.
  resize(proj_, n_tokens * all_layers);
  resize(gate_, all_layers);
  resize(per_layer_inputs_, n_tokens * all_layers);
  matmul(weights_.per_layer_model_proj(), x_.data(), n_tokens, proj_.data(), pool_, &activation_buffers_);
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* token_rows = gate_.data();
    dequantize_row(w.token_embd, batch.tokens[t], token_rows);
    for (int il = 0; il < config.n_layer; ++il) {
      float* input = per_layer_inputs_.data() + (int64_t{il} * n_tokens + t) * width;
      per_layer_input(proj_.data() + t * all_layers + il * width, token_rows + il * width, input, width,
                      config.norm_eps, w.proj_norm, scales);
    }
  }
}

void CpuBackend::attention_block(int il, const Batch& batch, const kv::SlotRuns& view_slots) {
  const ModelConfig& config = model_->config();
  const LayerConfig& lc = config.layers[il];
  const LayerWeights& w = model_->layers()[il];
  const LayerMatrices& m = weights_.layer(il);
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_embd = config.n_embd;
  const int head_dim = lc.head_dim;
  const int64_t q_width = int64_t{lc.n_head} * head_dim;
  const int64_t kv_width = int64_t{lc.n_head_kv} * head_dim;

  resize(normed_, n_tokens * n_embd);
  norm_rows(x_.data(), normed_.data(), n_tokens, n_embd, config.norm_eps, w.attn_norm, pool_);
  // A KV-shared layer computes queries only and attends over its source layer's cache.
  const bool writes_kv = config.owns_kv(il);
  resize(q_, n_tokens * q_width);
  std::array<MatmulProduct, 3> projections;
  size_t n_projections = 0;
  projections[n_projections++] = {m.wq, normed_.data(), n_tokens, q_.data(), q_width};
  if (writes_kv) {
    resize(k_, n_tokens * kv_width);
    resize(v_, n_tokens * kv_width);
    projections[n_projections++] = {m.wk, normed_.data(), n_tokens, k_.data(), kv_width};
    if (m.wv) projections[n_projections++] = {*m.wv, normed_.data(), n_tokens, v_.data(), kv_width};
  }
  matmul_batch(std::span(projections).first(n_projections), ProductOrder::kMulMat, pool_, batch_scratch_);
  // Gemma 4 layers without attn_v: V = K.
  if (writes_kv && !m.wv) std::copy_n(k_.data(), n_tokens * kv_width, v_.data());

  // Per-head norms and RoPE, then the new keys and values go to their slots.
  LayerCache& cache = cache_[lc.kv_layer];
  pool_.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
    RopeTable rope;
    for (int64_t t = begin; t < end; ++t) {
      rope.compute(batch.positions[t], lc.n_rot, lc.rope_base, lc.rope_freq_scale, w.rope_freq_factors);
      for (int h = 0; h < lc.n_head; ++h) {
        float* head = q_.data() + t * q_width + int64_t{h} * head_dim;
        rms_norm(head, head, head_dim, config.norm_eps, w.q_norm);
        rope.apply(head);
        if (config.query_scale != 1.0f) {
          for (int i = 0; i < head_dim; ++i) head[i] *= config.query_scale;
        }
      }
      if (!writes_kv) continue;
      uint16_t* k_slot = cache.k.data() + static_cast<size_t>(batch.slots[t]) * kv_width;
      uint16_t* v_slot = cache.v.data() + static_cast<size_t>(batch.slots[t]) * kv_width;
      for (int h = 0; h < lc.n_head_kv; ++h) {
        float* k_head = k_.data() + t * kv_width + int64_t{h} * head_dim;
        float* v_head = v_.data() + t * kv_width + int64_t{h} * head_dim;
        rms_norm(k_head, k_head, head_dim, config.norm_eps, w.k_norm);
        rope.apply(k_head);
        if (config.v_norm) rms_norm(v_head, v_head, head_dim, config.norm_eps, {});
      }
      for (int64_t i = 0; i < kv_width; ++i) {
        k_slot[i] = f32_to_f16(k_.data()[t * kv_width + i]);
        v_slot[i] = f32_to_f16(v_.data()[t * kv_width + i]);
      }
    }
  });

  // Attention of every (token, head) over the view, masked by position. The listed slots and
  // the visible position range of each token are the only per-call data (kept across calls).
  std::vector<uint32_t>& listed = view_list_;
  std::vector<int32_t>& min_position = min_position_;
  std::vector<int32_t>& max_position = max_position_;
  listed.clear();
  view_slots.for_each([&](uint32_t slot) { listed.push_back(slot); });
  min_position.resize(static_cast<size_t>(n_tokens));
  max_position.resize(static_cast<size_t>(n_tokens));
  for (int64_t t = 0; t < n_tokens; ++t) {
    max_position[t] = batch.positions[t];
    min_position[t] = lc.sliding ? batch.positions[t] - config.sliding_window + 1 : 0;
  }
  resize(attn_, n_tokens * q_width);
  AttentionProblem problem;
  problem.head_dim = head_dim;
  problem.n_head = lc.n_head;
  problem.n_head_kv = lc.n_head_kv;
  problem.n_tokens = n_tokens;
  problem.q = q_.data();
  problem.out = attn_.data();
  problem.min_position = min_position;
  problem.max_position = max_position;
  problem.k = cache.k.data();
  problem.v = cache.v.data();
  problem.kv_stride = static_cast<size_t>(kv_width);
  problem.slots = listed;
  problem.slot_positions = slot_position_;
  // On a fresh stream a key's llama.cpp KV cell is its position (see attention.h).
  problem.first_cell = listed.empty() ? 0 : std::max(0, slot_position_[listed.front()]);
  problem.kv_split_threads = pool_.size();
  attend(problem, pool_, attention_scratch_);

  resize(proj_, n_tokens * n_embd);
  matmul(m.wo, attn_.data(), n_tokens, proj_.data(), pool_, &activation_buffers_);
  add_normed_projection(w.post_attn_norm, n_tokens);
}

void CpuBackend::ffn_block(int il, int64_t n_tokens) {
  if (model_->layers()[il].experts) {
    moe_ffn(il, n_tokens);
  } else {
    dense_ffn(il, n_tokens);
  }
  add_normed_projection(model_->layers()[il].post_ffn_norm, n_tokens);
}

void CpuBackend::dense_ffn(int il, int64_t n_tokens) {
  const ModelConfig& config = model_->config();
  const LayerWeights& w = model_->layers()[il];
  const LayerMatrices& m = weights_.layer(il);
  const int64_t n_embd = config.n_embd;
  const int64_t n_ff = config.layers[il].n_ff;

  norm_rows(x_.data(), normed_.data(), n_tokens, n_embd, config.norm_eps, w.ffn_norm, pool_);
  resize(gate_, n_tokens * n_ff);
  resize(up_, n_tokens * n_ff);
  const std::array<MatmulProduct, 2> gate_up = {MatmulProduct{m.ffn_gate, normed_.data(), n_tokens, gate_.data(), n_ff},
                                                MatmulProduct{m.ffn_up, normed_.data(), n_tokens, up_.data(), n_ff}};
  matmul_batch(gate_up, ProductOrder::kMulMat, pool_, batch_scratch_);
  geglu_values(gate_.data(), up_.data(), gate_.data(), n_tokens * n_ff, pool_);
  resize(proj_, n_tokens * n_embd);
  matmul(m.ffn_down, gate_.data(), n_tokens, proj_.data(), pool_, &activation_buffers_);
}

// llama.cpp's gemma4 MoE layer: the dense FFN (the shared expert) and the routed experts both
// read the attention block's output x_, each with its own norms, and their normed outputs add up.
void CpuBackend::moe_ffn(int il, int64_t n_tokens) {
  const ModelConfig& config = model_->config();
  const ExpertWeights& w = *model_->layers()[il].experts;
  const int64_t n_embd = config.n_embd;

  dense_ffn(il, n_tokens);
  norm_rows(proj_.data(), proj_.data(), n_tokens, n_embd, config.norm_eps, w.post_norm_1, pool_);

  route_to_experts(il, n_tokens);
  norm_rows(x_.data(), normed_.data(), n_tokens, n_embd, config.norm_eps, w.pre_norm_2, pool_);
  resize(experts_out_, n_tokens * n_embd);
  run_experts(w, config.n_expert, config.n_ff_exp, normed_.data(), n_tokens, routing_, experts_out_.data(),
              expert_scratch_, pool_);
  norm_rows(experts_out_.data(), experts_out_.data(), n_tokens, n_embd, config.norm_eps, w.post_norm_2, pool_);
  for (int64_t i = 0; i < n_tokens * n_embd; ++i) proj_[i] += experts_out_[i];
}

// The router reads x_ through an unweighted RMSNorm scaled by 1/sqrt(n_embd) and by the
// router's own scale vector, in that order (llama.cpp rounds after each step).
void CpuBackend::route_to_experts(int il, int64_t n_tokens) {
  const ModelConfig& config = model_->config();
  const ExpertWeights& w = *model_->layers()[il].experts;
  const int64_t n_embd = config.n_embd;
  const float embd_scale = 1.0f / std::sqrt(static_cast<float>(n_embd));

  norm_rows(x_.data(), normed_.data(), n_tokens, n_embd, config.norm_eps, {}, pool_);
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* row = normed_.data() + t * n_embd;
    for (int64_t i = 0; i < n_embd; ++i) row[i] = row[i] * embd_scale * w.router_scale[i];
  }
  resize(router_logits_, n_tokens * config.n_expert);
  router_logits(w.router, normed_.data(), n_tokens, router_logits_.data(), pool_);
  route_tokens(router_logits_.data(), n_tokens, config.n_expert, config.n_expert_used, routing_,
               expert_scratch_.routing);
}

// x += RMSNorm(proj(gelu(gate(x)) * this layer's per-layer input)), as llama.cpp's gemma4 graph.
void CpuBackend::per_layer_embedding_block(int il, int64_t n_tokens) {
  const ModelConfig& config = model_->config();
  const LayerWeights& w = model_->layers()[il];
  const LayerMatrices& m = weights_.layer(il);
  const int64_t width = config.n_embd_per_layer;
  resize(gate_, n_tokens * width);
  matmul(m.per_layer_gate, x_.data(), n_tokens, gate_.data(), pool_, &activation_buffers_);
  geglu_values(gate_.data(), per_layer_inputs_.data() + int64_t{il} * n_tokens * width, gate_.data(), n_tokens * width,
               pool_);
  matmul(m.per_layer_proj, gate_.data(), n_tokens, proj_.data(), pool_, &activation_buffers_);
  add_normed_projection(w.per_layer_post_norm, n_tokens);
}

void CpuBackend::add_normed_projection(std::span<const float> norm, int64_t n_tokens) {
  const ModelConfig& config = model_->config();
  const int64_t n_embd = config.n_embd;
  pool_.parallel_for(
      n_tokens,
      [&](int64_t begin, int64_t end) {
        for (int64_t t = begin; t < end; ++t) {
          float* p = proj_.data() + t * n_embd;
          rms_norm(p, p, n_embd, config.norm_eps, norm);
          float* x = x_.data() + t * n_embd;
          for (int64_t i = 0; i < n_embd; ++i) x[i] += p[i];
        }
      },
      kTokenGrain);
}

void CpuBackend::scale_layer_output(int il, int64_t n_tokens) {
  const float scale = model_->layers()[il].output_scale;
  if (scale == 1.0f) return;
  const int64_t n = n_tokens * model_->config().n_embd;
  for (int64_t i = 0; i < n; ++i) x_[i] *= scale;
}

void CpuBackend::output_logits(int64_t n_tokens, LogitsWanted wanted, std::span<const int32_t> candidates, Logits& out) {
  const ModelConfig& config = model_->config();
  const int64_t n_embd = config.n_embd;
  if (wanted == LogitsWanted::None) {
    out.n_rows = out.n_cols = 0;
    out.values.clear();
    return;
  }
  const int64_t first = wanted == LogitsWanted::All ? 0 : n_tokens - 1;
  const int64_t n_rows = n_tokens - first;
  for (int64_t t = first; t < n_tokens; ++t) {
    rms_norm(x_.data() + t * n_embd, normed_.data() + (t - first) * n_embd, n_embd, config.norm_eps, model_->output_norm());
  }
  out.n_rows = n_rows;
  if (wanted == LogitsWanted::Candidates) {
    out.n_cols = static_cast<int64_t>(candidates.size());
    out.values.resize(static_cast<size_t>(n_rows * out.n_cols));
    matmul_rows(model_->output(), normed_.data(), n_rows, candidates, out.values.data(), pool_,
                &activation_buffers_);
  } else {
    out.n_cols = config.n_vocab;
    out.values.resize(static_cast<size_t>(n_rows * out.n_cols));
    matmul(weights_.output(), normed_.data(), n_rows, out.values.data(), pool_, &activation_buffers_);
  }
  if (config.final_softcap > 0.0f) softcap(out.values.data(), static_cast<int64_t>(out.values.size()), config.final_softcap);
}

}  // namespace channel::cpu
