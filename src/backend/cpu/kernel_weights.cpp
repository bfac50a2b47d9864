#include "backend/cpu/kernel_weights.h"

namespace channel::cpu {

KernelWeights::KernelWeights(const Model& model, ThreadPool& pool) {
  for (const LayerWeights& w : model.layers()) {
    LayerMatrices m;
    m.wq = kernel_view(model, w.wq, pool);
    m.wk = kernel_view(model, w.wk, pool);
    m.wo = kernel_view(model, w.wo, pool);
    if (w.wv) m.wv = kernel_view(model, *w.wv, pool);
    m.ffn_gate = kernel_view(model, w.ffn_gate, pool);
    m.ffn_up = kernel_view(model, w.ffn_up, pool);
    m.ffn_down = kernel_view(model, w.ffn_down, pool);
    m.per_layer_gate = kernel_view(model, w.per_layer_gate, pool);
    m.per_layer_proj = kernel_view(model, w.per_layer_proj, pool);
    layers_.push_back(m);
  }
  per_layer_model_proj_ = kernel_view(model, model.per_layer_inputs().model_proj, pool);
}

WeightMatrix KernelWeights::kernel_view(const Model& model, const WeightMatrix& w, ThreadPool& pool) {
  // A matrix the load converted to Q4_0 lives in the model's own memory, which stays allocated:
  // a repacked copy would hold it twice (a mapped file's pages, once repacked, are no longer
  // read and the kernel can drop them).
  if (!repackable_to_q4_0_row_groups(w) || model.holds_converted_bytes(w)) return w;
  repacked_.emplace_back(w, pool);
  return repacked_.back().matrix();
}

}  // namespace channel::cpu
