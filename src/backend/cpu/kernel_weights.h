// The model's dense matrices in the layouts the CPU kernels read: Q4_0 matrices of the model's
// file whose rows split into row groups are repacked (q4_0_row_groups.h) when the backend starts,
// every other matrix is the model's own view (also Q4_0 matrices the load converted: repacking
// those would hold them twice in memory). Left as they are: MoE experts (read a few rows of a stacked tensor at a
// time), the token embeddings and the output projection (also read row by row, by look-up and by
// probes' candidate rows).
#pragma once

#include <optional>
#include <vector>

#include "backend/cpu/q4_0_row_groups.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace channel::cpu {

// One layer's matrices that go through matmul (LayerWeights has their meaning).
struct LayerMatrices {
  WeightMatrix wq, wk, wo;
  std::optional<WeightMatrix> wv;
  WeightMatrix ffn_gate, ffn_up, ffn_down;
  WeightMatrix per_layer_gate, per_layer_proj;
};

class KernelWeights {
 public:
  // Repacks over `pool`'s threads; the model must outlive this object.
  KernelWeights(const Model& model, ThreadPool& pool);
  KernelWeights(const KernelWeights&) = delete;
  KernelWeights& operator=(const KernelWeights&) = delete;

  const LayerMatrices& layer(int il) const { return layers_[static_cast<size_t>(il)]; }
  const WeightMatrix& per_layer_model_proj() const { return per_layer_model_proj_; }  // E-models

 private:
  // `w` repacked if it can be and is worth it, else `w` itself.
  WeightMatrix kernel_view(const Model& model, const WeightMatrix& w, ThreadPool& pool);

  std::vector<Q4_0RowGroupMatrix> repacked_;  // the storage behind the repacked views
  std::vector<LayerMatrices> layers_;
  WeightMatrix per_layer_model_proj_;
};

}  // namespace channel::cpu
