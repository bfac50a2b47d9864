// matmul / matmul_rows of matmul.h: convert the activations once, then split the output rows
// over the thread pool; each thread runs the SIMD row-tile kernels of dot_kernels.h.
#include "backend/cpu/matmul.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "backend/cpu/accumulation.h"
#include "backend/cpu/activations.h"
#include "backend/cpu/dot_kernels.h"
#include "core/error.h"

namespace channel::cpu {
namespace {

// Smallest share of work (weight bytes times tokens) worth handing to a thread: waking one
// costs microseconds, a 64 KiB pass over weights about as much.
constexpr int64_t kMinChunkWork = 64 * 1024;

// Output rows per parallel_for grain: whole row tiles, at least kMinChunkWork of work.
int64_t row_grain(const WeightMatrix& w, int64_t n_tokens) {
  const int64_t work_per_row = std::max<int64_t>(1, static_cast<int64_t>(w.row_bytes) * n_tokens);
  const int64_t rows = (kMinChunkWork + work_per_row - 1) / work_per_row;
  return (rows + kDotRowGrain - 1) / kDotRowGrain * kDotRowGrain;
}

void check_weights(const WeightMatrix& w) {
  if (w.row_bytes != ggml_row_bytes(w.type, w.cols)) {  // also rejects cols not a block multiple
    fail("matmul: row_bytes {} does not match {} {} values", w.row_bytes, ggml_type_traits(w.type).name, w.cols);
  }
}

// The job of one product, its activations prepared by the caller.
DotRowsJob product_job(const WeightMatrix& w, const PreparedActivations& activations, float* out, int64_t out_stride) {
  DotRowsJob job;
  job.weights = &w;
  job.accumulation = quant_accumulation(w);
  job.bf16_accumulation = bf16_accumulation(w, activations.n_tokens());
  job.activations = &activations;
  job.out = out;
  job.out_stride = out_stride;
  return job;
}

// out[t * n_out + i] = dot(weight row (row_ids.empty() ? i : row_ids[i]), token t), i < n_out.
void multiply(const WeightMatrix& w, const float* x, int64_t n_tokens, std::span<const int32_t> row_ids,
              int64_t n_out, float* out, ThreadPool& pool, ActivationBuffers* buffers) {
  check_weights(w);
  if (!row_ids.empty() && w.layout != WeightLayout::kGguf) fail("matmul_rows: the matrix is repacked");
  if (n_tokens <= 0 || n_out <= 0) return;
  const PreparedActivations activations(w.type, x, n_tokens, w.cols, &pool, buffers);
  DotRowsJob job = product_job(w, activations, out, n_out);
  job.row_ids = row_ids;
  pool.parallel_for(
      n_out, [&job](int64_t begin, int64_t end) { dot_rows(job, begin, end); }, row_grain(w, n_tokens));
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* out, ThreadPool& pool,
            ActivationBuffers* buffers) {
  multiply(w, x, n_tokens, {}, w.rows, out, pool, buffers);
}

MatmulBatchScratch::MatmulBatchScratch() = default;
MatmulBatchScratch::~MatmulBatchScratch() = default;

void matmul_batch(std::span<const MatmulProduct> products, ProductOrder order, ThreadPool& pool,
                  MatmulBatchScratch& scratch) {
  // One job per product; each split into row ranges of about kMinChunkWork (whole tiles), the
  // ranges of all products shared out together.
  auto& activations = scratch.activations;
  auto& inputs = scratch.inputs;
  auto& jobs = scratch.jobs;
  auto& ranges = scratch.ranges;
  inputs.clear();
  jobs.clear();
  ranges.clear();
  const auto same_input = [](const MatmulProduct& a, const MatmulProduct& b) {
    return a.x == b.x && a.n_tokens == b.n_tokens && a.w.cols == b.w.cols && a.w.type == b.w.type;
  };
  for (const MatmulProduct& p : products) {
    check_weights(p.w);
    if (p.n_tokens <= 0 || p.w.rows <= 0) continue;
    size_t input = 0;
    while (input < inputs.size() && !same_input(*inputs[input], p)) ++input;
    if (input == inputs.size()) {
      if (activations.size() <= input) activations.push_back(std::make_unique<PreparedActivations>());
      activations[input]->prepare(p.w.type, p.x, p.n_tokens, p.w.cols, &pool);
      inputs.push_back(&p);
    }
    DotRowsJob job = product_job(p.w, *activations[input], p.out, p.out_stride);
    if (order == ProductOrder::kMulMatId) job.bf16_accumulation = bf16_vec_dot_accumulation();
    jobs.push_back(job);
    const int64_t grain = row_grain(p.w, p.n_tokens);
    for (int64_t begin = 0; begin < p.w.rows; begin += grain) {
      ranges.push_back({jobs.size() - 1, begin, std::min(begin + grain, p.w.rows)});
    }
  }
  pool.parallel_for(static_cast<int64_t>(ranges.size()), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) dot_rows(jobs[ranges[i].job], ranges[i].begin, ranges[i].end);
  });
}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, std::span<const int32_t> rows,
                 float* out, ThreadPool& pool, ActivationBuffers* buffers) {
  for (const int32_t row : rows) {
    if (row < 0 || row >= w.rows) fail("matmul_rows: row {} out of range [0, {})", row, w.rows);
  }
  multiply(w, x, n_tokens, rows, static_cast<int64_t>(rows.size()), out, pool, buffers);
}

}  // namespace channel::cpu
