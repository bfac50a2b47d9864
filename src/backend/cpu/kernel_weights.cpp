#include "backend/cpu/kernel_weights.h"

namespace channel::cpu {

KernelWeights::KernelWeights(const Model& model, ThreadPool& pool) {
  for (const LayerWeights& w : model.layers()) {
    LayerMatrices m;
    m.wq = kernel_view(w.wq, pool);
    m.wk = kernel_view(w.wk, pool);
    m.wo = kernel_view(w.wo, pool);
    if (w.wv) m.wv = kernel_view(*w.wv, pool);
    m.ffn_gate = kernel_view(w.ffn_gate, pool);
    m.ffn_up = kernel_view(w.ffn_up, pool);
    m.ffn_down = kernel_view(w.ffn_down, pool);
    m.per_layer_gate = kernel_view(w.per_layer_gate, pool);
    m.per_layer_proj = kernel_view(w.per_layer_proj, pool);
    layers_.push_back(m);
  }
  per_layer_model_proj_ = kernel_view(model.per_layer_inputs().model_proj, pool);
}

WeightMatrix KernelWeights::kernel_view(const WeightMatrix& w, ThreadPool& pool) {
  if (!repackable_to_q4_0_row_groups(w)) return w;
  repacked_.emplace_back(w, pool);
  return repacked_.back().matrix();
}

}  // namespace channel::cpu
