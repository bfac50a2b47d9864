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

// Whether `w` is repacked into row groups: Q4_0 matrices, and a Q8_0 output projection, which
// multiplies one token per step (the Q8_0 row-group kernel takes tokens one at a time, where the
// GGUF layout's kernels share each weight block among a tile of a prefill's tokens).
bool repacks(const WeightMatrix& w, bool output) {
  return repackable_to_row_groups(w) && (w.type == GgmlType::Q4_0 || output);
}

}  // namespace

KernelWeights::KernelWeights(const Model& model, ThreadPool& pool) {
  const LayerMatrices none;
  layers_.assign(model.layers().size(), none);
  size_t total = 0;
  for_each_matrix(model, [&](const WeightMatrix& w, WeightMatrix& view, bool output) {
    view = w;
    if (moves_to_arena(model, w, output)) total += aligned(matrix_bytes(w));
  });
  arena_ = HugePageBuffer(total);
  size_t offset = 0;
  for_each_matrix(model, [&](const WeightMatrix& w, WeightMatrix& view, bool output) {
    if (!moves_to_arena(model, w, output)) return;
    view = move_to(model, w, output, arena_.data() + offset, pool);
    offset += aligned(matrix_bytes(w));
  });
}

template <class Visit>
void KernelWeights::for_each_matrix(const Model& model, Visit&& visit) {
  for (size_t il = 0; il < model.layers().size(); ++il) {
    const LayerWeights& w = model.layers()[il];
    LayerMatrices& m = layers_[il];
    visit(w.wq, m.wq, false);
    visit(w.wk, m.wk, false);
    visit(w.wo, m.wo, false);
    if (w.wv) {
      if (!m.wv) m.wv.emplace();
      visit(*w.wv, *m.wv, false);
    }
    visit(w.ffn_gate, m.ffn_gate, false);
    visit(w.ffn_up, m.ffn_up, false);
    visit(w.ffn_down, m.ffn_down, false);
    visit(w.per_layer_gate, m.per_layer_gate, false);
    visit(w.per_layer_proj, m.per_layer_proj, false);
  }
  visit(model.per_layer_inputs().model_proj, per_layer_model_proj_, false);
  visit(model.output(), output_, true);
}

bool KernelWeights::moves_to_arena(const Model& model, const WeightMatrix& w, bool output) {
  if (w.data == nullptr || w.rows == 0 || model.holds_converted_bytes(w)) return false;
  return repacks(w, output) || file_holding(model, w) != nullptr;
}

WeightMatrix KernelWeights::move_to(const Model& model, const WeightMatrix& w, bool output, uint8_t* out,
                                    ThreadPool& pool) {
  const MappedFile* file = file_holding(model, w);
  if (repacks(w, output)) {
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
