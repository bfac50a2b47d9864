// The model's dense matrices in the memory and layouts the CPU kernels read. A decode step streams
// every weight once, so where the bytes sit matters as much as the kernels: each matrix of the
// model's file moves into huge-page memory (core/huge_page_buffer.h) when the backend starts, and
// the file's pages behind it are released, so the process holds each weight once. On the way,
// Q4_0 and Q8_0 matrices whose rows split into row groups are repacked (row_groups.h); the others
// are copied as they are. Matrices the load converted (held in the model's own memory) stay where
// they are: a copy would hold them twice. Left out: MoE experts (read a few rows of a stacked tensor at a time), the token
// embeddings' look-up and a probe's candidate rows, which read the model's own view row by row.
#pragma once

#include <optional>
#include <vector>

#include "backend/cpu/row_groups.h"
#include "core/huge_page_buffer.h"
#include "core/mapped_file.h"
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
  // Calls visit(matrix, its view here) for every matrix of the model the kernels read, in a fixed
  // order.
  template <class Visit>
  void for_each_matrix(const Model& model, Visit&& visit);
  // Whether `w` moves into the arena (see above).
  static bool moves_to_arena(const Model& model, const WeightMatrix& w);
  // `w` repacked or copied into `out` (as many bytes as `w`), its file pages released.
  static WeightMatrix move_to(const Model& model, const WeightMatrix& w, uint8_t* out, ThreadPool& pool);

  // One buffer for all moved matrices: per-matrix buffers would each round up to whole huge
  // pages (~1 MiB lost per matrix, 300 MB on gemma3-1b's 182 matrices).
  HugePageBuffer arena_;
  std::vector<LayerMatrices> layers_;
  WeightMatrix per_layer_model_proj_;
  WeightMatrix output_;
};

}  // namespace channel::cpu
