#include "backend/cpu/kernel_weights.h"

#include <cstring>

namespace channel::cpu {
namespace {

constexpr size_t kMatrixAlignment = 64;  // a cache line: each matrix starts on its own

size_t matrix_bytes(const WeightMatrix& w) { return w.row_bytes * static_cast<size_t>(w.rows); }

size_t aligned(size_t bytes) { return (bytes + kMatrixAlignment - 1) / kMatrixAlignment * kMatrixAlignment; }

// The model file's mapping when it holds `w`, else null.
const MappedFile* file_holding(const Model& model, const WeightMatrix& w) {
  const MappedFile* file = model.gguf().mapping();
  return file != nullptr && file->contains(w.data, matrix_bytes(w)) ? file : nullptr;
}


}  // namespace

KernelWeights::KernelWeights(const Model& model, ThreadPool& pool) {
  const LayerMatrices none;
  layers_.assign(model.layers().size(), none);
  size_t total = 0;
  for_each_matrix(model, [&](const WeightMatrix& w, WeightMatrix& view) {
    view = w;
    if (moves_to_arena(model, w)) total += aligned(matrix_bytes(w));
  });
  arena_ = HugePageBuffer(total);
  size_t offset = 0;
  for_each_matrix(model, [&](const WeightMatrix& w, WeightMatrix& view) {
    if (!moves_to_arena(model, w)) return;
    view = move_to(model, w, arena_.data() + offset, pool);
    offset += aligned(matrix_bytes(w));
  });
}

template <class Visit>
void KernelWeights::for_each_matrix(const Model& model, Visit&& visit) {
  for (size_t il = 0; il < model.layers().size(); ++il) {
    const LayerWeights& w = model.layers()[il];
    LayerMatrices& m = layers_[il];
    visit(w.wq, m.wq);
    visit(w.wk, m.wk);
    visit(w.wo, m.wo);
    if (w.wv) {
      if (!m.wv) m.wv.emplace();
      visit(*w.wv, *m.wv);
    }
    visit(w.ffn_gate, m.ffn_gate);
    visit(w.ffn_up, m.ffn_up);
    visit(w.ffn_down, m.ffn_down);
    visit(w.per_layer_gate, m.per_layer_gate);
    visit(w.per_layer_proj, m.per_layer_proj);
  }
  visit(model.per_layer_inputs().model_proj, per_layer_model_proj_);
  visit(model.output(), output_);
}

bool KernelWeights::moves_to_arena(const Model& model, const WeightMatrix& w) {
  if (w.data == nullptr || w.rows == 0 || model.holds_converted_bytes(w)) return false;
  return repackable_to_row_groups(w) || file_holding(model, w) != nullptr;
}

WeightMatrix KernelWeights::move_to(const Model& model, const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
  const MappedFile* file = file_holding(model, w);
  if (repackable_to_row_groups(w)) {
    const WeightMatrix view = repack_to_row_groups(w, out, pool);
    if (file) file->release_pages(w.data, matrix_bytes(w));
    return view;
  }
  // Each range's pages are released as soon as they are copied, so that copying the largest
  // matrix (the output projection) does not hold it twice for a moment.
  pool.parallel_for(w.rows, [&](int64_t begin, int64_t end) {
    const size_t bytes = w.row_bytes * static_cast<size_t>(end - begin);
    std::memcpy(out + w.row_bytes * static_cast<size_t>(begin), w.row(begin), bytes);
    file->release_pages(w.row(begin), bytes);
  });
  WeightMatrix view = w;
  view.data = out;
  return view;
}

}  // namespace channel::cpu
