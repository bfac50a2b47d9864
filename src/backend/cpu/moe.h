// The routed experts of a Gemma 4 mixture-of-experts layer (26B-A4B) on the CPU, in the
// arithmetic of llama.cpp's build_moe_ffn as its gemma4 graph calls it: softmax over the
// router's logits, the top k experts, their probabilities renormalised to sum 1; each chosen
// expert's GELU-gated FFN, its output scaled by the expert's scale and then by its weight; the
// chosen experts' outputs added in the order of their probability. The router's input and the
// norms around the experts are the layer's business (cpu_backend.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/cpu/matmul.h"
#include "core/thread_pool.h"
#include "model/model.h"

namespace channel::cpu {

// The experts each token of a batch is routed to.
struct Routing {
  int n_used = 0;                // experts per token
  std::vector<int32_t> experts;  // [n_tokens][n_used], the most probable first
  std::vector<float> weights;    // [n_tokens][n_used], their probabilities renormalised to sum 1
};

// route_tokens' working storage (one token's probabilities and expert order), kept by the caller
// so that routing allocates nothing once the vectors have their size.
struct RoutingScratch {
  std::vector<float> probabilities;
  std::vector<int32_t> order;
};

// The router's logits ([n_tokens][n_expert]) of n_tokens inputs of n_embd values. An F32 router
// (as llama.cpp's converter and quantizer leave it) adds in the exact order of the reference
// llama.cpp build (AVX-512): tinyBLAS for 2+ tokens where the expert count is a multiple of 4
// and n_embd of 16, ggml_vec_dot_f32 otherwise. Routing turns last-bit differences in these
// logits into different expert weights, which quantized activations downstream amplify; other
// router types go through matmul.
void router_logits(const WeightMatrix& router, const float* x, int64_t n_tokens, float* out, ThreadPool& pool);

// Routes n_tokens tokens from their router logits ([n_tokens][n_expert]) to their n_used most
// probable experts. Of experts with equal probabilities the lower index is taken first (ggml
// sorts with std::sort, which leaves the order of ties unspecified).
void route_tokens(const float* logits, int64_t n_tokens, int n_expert, int n_used, Routing& out,
                  RoutingScratch& scratch);

// Buffers of run_experts, kept between calls so that a forward pass allocates nothing new.
struct ExpertScratch {
  std::vector<int64_t> first_row;   // [n_expert + 1]: expert e's rows are [first_row[e], first_row[e + 1])
  std::vector<int64_t> row_of;      // [n_tokens][n_used]: the grouped row of each (token, choice)
  std::vector<int64_t> next_row;    // [n_expert]: grouping's next free row of each expert
  std::vector<float> inputs;        // grouped rows: each token's input once per expert it chose
  std::vector<float> gate_up;       // grouped rows of [gate | up], 2 * n_ff_exp values
  std::vector<float> hidden;        // grouped rows of geglu(gate, up), n_ff_exp values
  std::vector<float> down;          // grouped rows of the experts' outputs, n_embd values
  std::vector<MatmulProduct> products;  // one matmul_batch's products
  MatmulBatchScratch batch;
  RoutingScratch routing;
};

// out[t] = sum over token t's experts e (in its routing order) of
//          down_e(geglu(gate_e(x[t]), up_e(x[t]))) * down_scale[e] * weight.
// The batch's tokens are grouped by expert, so that each chosen expert's matrices are read once
// per batch however many of its tokens chose it, and the experts' products run on the pool
// together (matmul_batch). x and out hold n_tokens rows of n_embd values.
void run_experts(const ExpertWeights& w, int n_expert, int n_ff_exp, const float* x, int64_t n_tokens,
                 const Routing& routing, float* out, ExpertScratch& scratch, ThreadPool& pool);

}  // namespace channel::cpu
