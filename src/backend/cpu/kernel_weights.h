// The model's dense matrices in the memory and layouts the CPU kernels read. A decode step streams
// every weight once, so where the bytes sit matters as much as the kernels: each matrix of the
// model's file moves into huge-page memory (core/huge_page_buffer.h) when the backend starts,
// Q4_0 matrices whose rows split into row groups repacked on the way (q4_0_row_groups.h), the
// others copied as they are, and the file's pages behind them are released, so the process holds
// each weight once. Matrices the load converted (held in the model's own memory) stay where they
// are: a copy would hold them twice. Left out: MoE experts (read a few rows of a stacked tensor at a
// time) and the token embeddings' look-up, which reads the model's own view row by row.
#pragma once

#include <optional>
#include <vector>

#include "backend/cpu/q4_0_row_groups.h"
#include "core/huge_page_buffer.h"
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
  // Repacks and copies over `pool`'s threads; the model must outlive this object.
  KernelWeights(const Model& model, ThreadPool& pool);
  KernelWeights(const KernelWeights&) = delete;
  KernelWeights& operator=(const KernelWeights&) = delete;

  const LayerMatrices& layer(int il) const { return layers_[static_cast<size_t>(il)]; }
  const WeightMatrix& per_layer_model_proj() const { return per_layer_model_proj_; }  // E-models
  // The output projection for whole rows of logits (a probe's candidate rows read the model's
  // view: matmul_rows reads the GGUF layout).
  const WeightMatrix& output() const { return output_; }

 private:
  // `w` repacked or copied (see above), else `w` itself.
  WeightMatrix kernel_view(const Model& model, const WeightMatrix& w, ThreadPool& pool);
  // A copy of `w`'s bytes in huge-page memory, which this object keeps.
  WeightMatrix huge_page_copy(const WeightMatrix& w, ThreadPool& pool);

  std::vector<Q4_0RowGroupMatrix> repacked_;  // the storage behind the repacked views
  std::vector<HugePageBuffer> copies_;        // and behind the copied ones
  std::vector<LayerMatrices> layers_;
  WeightMatrix per_layer_model_proj_;
  WeightMatrix output_;
};

}  // namespace channel::cpu
