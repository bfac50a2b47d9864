#include "backend/cpu/moe.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backend/cpu/accumulation.h"
#include "backend/cpu/attention_detail.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/geglu.h"
#include "backend/cpu/ops.h"

namespace channel::cpu {
namespace {

// ggml_soft_max of one row as the reference (AVX-512) CPU build computes it: exponentials of
// x - max by ggml_v_expf in groups of 16 (expf for the rest), their sum in double (each group's
// float sum added), then every exponential times the float of 1 / sum.
void softmax(const float* x, float* y, int n) {
  const float max = *std::max_element(x, x + n);
  double sum = 0.0;
  int i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int l = 0; l < 16; ++l) y[i + l] = attention_detail::expf_ggml(x[i + l] - max);
    sum += static_cast<double>(attention_detail::reduce16(y + i));
  }
  for (; i < n; ++i) {
    y[i] = std::exp(x[i] - max);
    sum += static_cast<double>(y[i]);
  }
  const auto inverse = static_cast<float>(1.0 / sum);
  for (int j = 0; j < n; ++j) y[j] *= inverse;
}

// The router's dot products are scalar code in llama.cpp's lane order. FMA is exact wherever it
// runs, so each body is compiled once more for CPUs with FMA, where std::fma is one instruction
// and the 16 lanes vectorize, instead of a libm call per product; both give the same bits. The
// choice is a plain branch, not GCC's target_clones: its ifunc resolvers run while the dynamic
// loader relocates, before ThreadSanitizer's runtime has started, and crashed every TSan binary
// that linked this file.
#define CHANNEL_INLINE_BODY inline __attribute__((always_inline))
#define CHANNEL_FMA_BUILD __attribute__((target("fma")))

bool cpu_has_fma() {
  static const bool has_fma = __builtin_cpu_supports("fma");
  return has_fma;
}

// llamafile's tinyBLAS F32 kernel (AVX-512 build): 16 lanes, lane j adds w[i] * x[i] for i = j
// mod 16 by FMA, then _mm512_reduce_add_ps.
CHANNEL_INLINE_BODY float tinyblas_body(const float* w, const float* x, int64_t n) {
  float lanes[16] = {};
  for (int64_t i = 0; i < n; i += 16) {
    for (int j = 0; j < 16; ++j) lanes[j] = std::fma(w[i + j], x[i + j], lanes[j]);
  }
  return sum_16_lanes_in_reduce_order(lanes);
}

// ggml_vec_dot_f32 (AVX-512 build): four sets of 16 lanes take the four 16-value parts of each
// 64 values by FMA; sets 0+2 and 1+3, then the two, then _mm512_reduce_add_ps; the values past
// the last 64 are added as rounded products.
CHANNEL_INLINE_BODY float vec_dot_body(const float* w, const float* x, int64_t n) {
  float sets[4][16] = {};
  const int64_t whole = n / 64 * 64;
  for (int64_t i = 0; i < whole; i += 64) {
    for (int s = 0; s < 4; ++s) {
      for (int j = 0; j < 16; ++j) sets[s][j] = std::fma(w[i + 16 * s + j], x[i + 16 * s + j], sets[s][j]);
    }
  }
  float lanes[16];
  for (int j = 0; j < 16; ++j) lanes[j] = (sets[0][j] + sets[2][j]) + (sets[1][j] + sets[3][j]);
  float sum = sum_16_lanes_in_reduce_order(lanes);
  for (int64_t i = whole; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

CHANNEL_FMA_BUILD float tinyblas_with_fma(const float* w, const float* x, int64_t n) {
  return tinyblas_body(w, x, n);
}

CHANNEL_FMA_BUILD float vec_dot_with_fma(const float* w, const float* x, int64_t n) {
  return vec_dot_body(w, x, n);
}

float dot_f32_tinyblas(const float* w, const float* x, int64_t n) {
  return cpu_has_fma() ? tinyblas_with_fma(w, x, n) : tinyblas_body(w, x, n);
}

float dot_f32_vec_dot(const float* w, const float* x, int64_t n) {
  return cpu_has_fma() ? vec_dot_with_fma(w, x, n) : vec_dot_body(w, x, n);
}

// Groups the (token, choice) pairs by expert: expert e's rows of the grouped buffers are
// [first_row[e], first_row[e + 1]), its tokens in batch order, as ggml's mul_mat_id groups them.
void group_by_expert(const Routing& routing, int64_t n_tokens, int n_expert, ExpertScratch& s) {
  const int64_t n_pairs = n_tokens * routing.n_used;
  s.first_row.assign(static_cast<size_t>(n_expert) + 1, 0);
  for (int64_t p = 0; p < n_pairs; ++p) ++s.first_row[routing.experts[p] + 1];
  std::partial_sum(s.first_row.begin(), s.first_row.end(), s.first_row.begin());
  s.next_row.assign(s.first_row.begin(), s.first_row.end() - 1);
  s.row_of.resize(static_cast<size_t>(n_pairs));
  for (int64_t p = 0; p < n_pairs; ++p) s.row_of[p] = s.next_row[routing.experts[p]]++;
}

int64_t rows_of(const ExpertScratch& s, int e) { return s.first_row[e + 1] - s.first_row[e]; }

// The gate and up products of every chosen expert over its grouped inputs, into rows of
// [gate | up]: one product of 2 * n_ff_exp rows per expert where the file fuses them
// (ffn_gate_up_exps, gate rows first, as llama.cpp splits it), else two.
void gate_up_products(const ExpertWeights& w, int n_expert, int n_ff_exp, int64_t n_embd, ExpertScratch& s,
                      ThreadPool& pool) {
  const int64_t stride = 2 * int64_t{n_ff_exp};
  std::vector<MatmulProduct>& products = s.products;
  products.clear();
  for (int e = 0; e < n_expert; ++e) {
    const int64_t n = rows_of(s, e);
    if (n == 0) continue;
    const float* x = s.inputs.data() + s.first_row[e] * n_embd;
    float* out = s.gate_up.data() + s.first_row[e] * stride;
    if (w.fused_gate_up()) {
      products.push_back({expert_rows(w.gate_up, n_expert, e), x, n, out, stride});
    } else {
      products.push_back({expert_rows(w.gate, n_expert, e), x, n, out, stride});
      products.push_back({expert_rows(w.up, n_expert, e), x, n, out + n_ff_exp, stride});
    }
  }
  matmul_batch(products, ProductOrder::kMulMatId, pool, s.batch);
}

void down_products(const ExpertWeights& w, int n_expert, int n_ff_exp, int64_t n_embd, ExpertScratch& s,
                   ThreadPool& pool) {
  std::vector<MatmulProduct>& products = s.products;
  products.clear();
  for (int e = 0; e < n_expert; ++e) {
    const int64_t n = rows_of(s, e);
    if (n == 0) continue;
    products.push_back({expert_rows(w.down, n_expert, e), s.hidden.data() + s.first_row[e] * n_ff_exp, n,
                        s.down.data() + s.first_row[e] * n_embd, n_embd});
  }
  matmul_batch(products, ProductOrder::kMulMatId, pool, s.batch);
}

}  // namespace

void router_logits(const WeightMatrix& router, const float* x, int64_t n_tokens, float* out, ThreadPool& pool) {
  if (router.type != GgmlType::F32) return matmul(router, x, n_tokens, out, pool);
  const int64_t n_embd = router.cols;
  const int64_t n_expert = router.rows;
  // llamafile_sgemm takes 2+ tokens, and its F32 kernel rows in fours and k in sixteens.
  const bool tiled = n_tokens >= 2 && n_expert % 4 == 0 && n_embd % 16 == 0;
  pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      for (int64_t e = 0; e < n_expert; ++e) {
        const auto* w = reinterpret_cast<const float*>(router.row(e));
        const float* input = x + t * n_embd;
        out[t * n_expert + e] = tiled ? dot_f32_tinyblas(w, input, n_embd) : dot_f32_vec_dot(w, input, n_embd);
      }
    }
  });
}

void route_tokens(const float* logits, int64_t n_tokens, int n_expert, int n_used, Routing& out,
                  RoutingScratch& scratch) {
  // ggml clamps the sum of the chosen probabilities to the smallest normal f16 before dividing.
  constexpr float kMinWeightSum = 6.103515625e-5f;
  out.n_used = n_used;
  out.experts.resize(static_cast<size_t>(n_tokens * n_used));
  out.weights.resize(static_cast<size_t>(n_tokens * n_used));
  std::vector<float>& probs = scratch.probabilities;
  std::vector<int32_t>& order = scratch.order;
  probs.resize(static_cast<size_t>(n_expert));
  order.resize(static_cast<size_t>(n_expert));
  for (int64_t t = 0; t < n_tokens; ++t) {
    softmax(logits + t * n_expert, probs.data(), n_expert);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + n_used, order.end(), [&probs](int32_t a, int32_t b) {
      return probs[a] > probs[b] || (probs[a] == probs[b] && a < b);
    });
    int32_t* experts = out.experts.data() + t * n_used;
    float* weights = out.weights.data() + t * n_used;
    double sum = 0.0;  // ggml_sum_rows: a double sum, rounded to float
    for (int i = 0; i < n_used; ++i) {
      experts[i] = order[i];
      weights[i] = probs[order[i]];
      sum += static_cast<double>(weights[i]);
    }
    const float divisor = std::max(static_cast<float>(sum), kMinWeightSum);
    for (int i = 0; i < n_used; ++i) weights[i] /= divisor;
  }
}

void run_experts(const ExpertWeights& w, int n_expert, int n_ff_exp, const float* x, int64_t n_tokens,
                 const Routing& routing, float* out, ExpertScratch& scratch, ThreadPool& pool) {
  const int64_t n_embd = w.down.rows / n_expert;
  const int n_used = routing.n_used;
  const int64_t n_rows = n_tokens * n_used;
  ExpertScratch& s = scratch;
  group_by_expert(routing, n_tokens, n_expert, s);

  s.inputs.resize(static_cast<size_t>(n_rows * n_embd));
  for (int64_t p = 0; p < n_rows; ++p) {
    const float* row = x + (p / n_used) * n_embd;
    std::copy_n(row, n_embd, s.inputs.data() + s.row_of[p] * n_embd);
  }
  s.gate_up.resize(static_cast<size_t>(n_rows * 2 * n_ff_exp));
  gate_up_products(w, n_expert, n_ff_exp, n_embd, s, pool);

  s.hidden.resize(static_cast<size_t>(n_rows * n_ff_exp));
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* gate = s.gate_up.data() + r * 2 * n_ff_exp;
    geglu(gate, gate + n_ff_exp, s.hidden.data() + r * n_ff_exp, n_ff_exp);
  }
  s.down.resize(static_cast<size_t>(n_rows * n_embd));
  down_products(w, n_expert, n_ff_exp, n_embd, s, pool);

  // llama.cpp multiplies each expert's output by its scale, then by its weight, and adds the
  // token's experts in routing order.
  for (int64_t t = 0; t < n_tokens; ++t) {
    float* sum = out + t * n_embd;
    for (int i = 0; i < n_used; ++i) {
      const int64_t p = t * n_used + i;
      const int32_t e = routing.experts[p];
      const float scale = w.down_scale.empty() ? 1.0f : w.down_scale[e];
      const float weight = routing.weights[p];
      const float* expert_out = s.down.data() + s.row_of[p] * n_embd;
      for (int64_t j = 0; j < n_embd; ++j) {
        const float v = expert_out[j] * scale * weight;  // a scale of 1 changes nothing
        sum[j] = i == 0 ? v : sum[j] + v;
      }
    }
  }
}

}  // namespace channel::cpu
