#include "backend/cpu/kernel_weights.h"

#include <cstring>

#include "core/mapped_file.h"

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
  output_ = kernel_view(model, model.output(), pool);
}

WeightMatrix KernelWeights::kernel_view(const Model& model, const WeightMatrix& w, ThreadPool& pool) {
  if (w.data == nullptr || w.rows == 0 || model.holds_converted_bytes(w)) return w;
  const size_t bytes = w.row_bytes * static_cast<size_t>(w.rows);
  const MappedFile* file = model.gguf().mapping();
  const bool in_file = file != nullptr && file->contains(w.data, bytes);
  WeightMatrix view = w;
  if (repackable_to_q4_0_row_groups(w)) {
    view = repacked_.emplace_back(w, pool).matrix();
  } else if (in_file) {
    view = huge_page_copy(w, pool);
  }
  if (in_file) file->release_pages(w.data, bytes);
  return view;
}

WeightMatrix KernelWeights::huge_page_copy(const WeightMatrix& w, ThreadPool& pool) {
  const HugePageBuffer& copy = copies_.emplace_back(w.row_bytes * static_cast<size_t>(w.rows));
  pool.parallel_for(w.rows, [&](int64_t begin, int64_t end) {
    std::memcpy(copy.data() + w.row_bytes * static_cast<size_t>(begin), w.row(begin),
                w.row_bytes * static_cast<size_t>(end - begin));
  });
  WeightMatrix view = w;
  view.data = copy.data();
  return view;
}

}  // namespace channel::cpu
