// The attention shaders against the CPU backend's attention (backend/cpu/attention.h, attend), on
// fresh random queries, keys and values: attention.comp (tiled, batches of 64+ tokens with head
// sizes a multiple of 16), attention_rows.comp (one row per (token, head), and split-KV chunks)
// and attention_combine.comp (the chunks merged), each run as VulkanBackend runs it: the
// AttentionStepParams the backend writes (attention_step.h), its pipelines' specialization
// constants (VulkanBackend::pipeline) and push constants (record_attention). Head sizes 48 to 512
// (and 256 in pipelines built for 512, as a Gemma 4 sliding layer runs), grouped-query ratios 1 to
// 4, global and sliding layers, cached keys before the batch, views that start past cell 0, and
// slot lists that are shuffled and gapped (a wrapped ring's), over physical slots whose unlisted
// rows hold keys a query would see if it read them. Every output element is poisoned first and
// must be written; 16 values past the end must stay poisoned. Where the head is whole Q8_0 blocks,
// the kernels' quantized output (wo's input, written by the attention kernel itself) is checked
// too: bit for bit against the CPU's Q8_0 quantization of the kernels' own f32 output.
//
// Thresholds (relative L2 difference per (token, head), against the CPU's result; u = 2^-24 and
// u16 = 2^-11 are f32's and f16's unit roundoffs):
//   - tiled (kTiledBound): the shader follows the CPU's operations in the CPU's order (scores as
//     a multiply-add chain over the head dims, weights by the same exp polynomial, sums in double,
//     a multiply-add chain over a tile's keys). Two things differ: the factor that rescales the
//     accumulators on a new maximum, exp(m - m_new), is the device's exp (Vulkan allows 3 + 2|x|
//     ulp) against the C library's; and GLSL's fma() need not be fused (Vulkan lets it round the
//     product on its own, and lavapipe does: a scalar model of the tiled scheme with every fma
//     unfused reproduces 80-92% of lavapipe's values bit for bit, the CPU's fused one 9-21%).
//     So every score, weight and accumulator may carry f32 roundings of its own, a random walk of
//     about u sqrt(n) relative over chains of n = head_dim (scores) or 64 keys (values): of order
//     1e-6, measured up to 1.2e-6. The bound, 2^-16 (1.5e-5), leaves a factor 10 and is far below
//     what one key taken or dropped wrongly, one dim misread or a wrong rescale costs (1e-3 and up).
//   - one-row (kOneRowBound): again the CPU's operations in its order, but the accumulators are
//     f16, rounded after every key: a weight or product one f32 ulp off (the exp, an unfused fma)
//     flips an f16 rounding now and then (the chance is about the f32 error over the f16 ulp,
//     2^-13), moving that accumulator element by one f16 ulp, at most 2 u16 of its value, which
//     later keys carry along without growing it. While fewer than one element in a head flips on
//     average, the head's rel L2 stays under 2 u16 (9.8e-4); measured up to 2e-4 on lavapipe. The
//     f16 accumulation's own error against the exact attention is larger (1e-3 to 2e-3 here, both
//     backends alike), so this is the tightest bound the scheme allows.
//   - split-KV, against the CPU backend (split_bound): the GPU's chunks are 32+ listed keys each,
//     the CPU's are llama.cpp's (its thread count's chunks of cells for one token, one chain for
//     several), so the two round their f16 accumulators at different points. Each rounding adds
//     up to u16 of the running accumulator, whose size grows with the keys taken, so a chain over
//     n visible keys strays from the exact attention by about u16 sqrt(n / 6) (a random walk); the
//     CPU's one long chain dominates the difference (the GPU's chunks are short). Bounded by
//     u16 sqrt(n); measured up to 0.43 u16 sqrt(n). That cannot see one key in 500 taken wrongly,
//     so split-KV is also compared with the CPU's arithmetic on the GPU's own chunks (its one-row
//     scheme per chunk, llama.cpp's merge: attention_detail.h), with the one-row bound (measured
//     up to 5e-5: the chunks are short chains).
// All schemes are also compared with the exact attention (double precision): the GPU's rel L2
// from it may not exceed twice the CPU's. Splitting must not cost accuracy (measured: the GPU's
// split-KV results are closer to exact than the CPU's, 0.75e-3..1.9e-3 against 1.3e-3..3.4e-3).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/activation_quant.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/attention_detail.h"
#include "backend/vulkan/attention_step.h"
#include "backend/vulkan/shader_push.h"
#include "backend/vulkan/tuning.h"
#include "core/half.h"
#include "core/thread_pool.h"
#include "kernel_test_support.h"

namespace channel::vulkan {
namespace {

using namespace channel::vulkan::testing;

constexpr double kF16UnitRoundoff = 0x1p-11;
constexpr double kTiledBound = 0x1p-16;
constexpr double kOneRowBound = 2 * kF16UnitRoundoff;
// The split-KV bound for a token that sees n_visible keys.
double split_bound(uint32_t n_visible) { return kF16UnitRoundoff * std::sqrt(static_cast<double>(n_visible)); }
constexpr uint32_t kTail = 16;  // f32 values past the output that must keep their poison

enum Scheme : uint32_t { kOneRow = 0, kSplitKv = 1, kTiled = 2 };  // AttentionStepParams::scheme

struct AttentionCase {
  const char* name;
  int head_dim, n_head, n_head_kv;
  uint32_t n_tokens;
  uint32_t n_earlier;      // keys listed before the batch's own (cached cells)
  int32_t first_position;  // position of the first listed key (its llama.cpp cell)
  int32_t window;          // sliding window; 0: a global layer
  Scheme scheme;           // the scheme the case is meant to run (checked)
  uint32_t max_head_dim;   // the pipelines' MAX_HEAD_DIM: the model's largest head
};

void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

// Besides head size, grouping, tokens and window, the cases reach: views whose first key is not
// at a tile's first cell (from500, from1000: the tiled kernel's 64-cell tiles straddle the view's
// start) and tiles no token of a block sees (sliding); partial blocks of the tiled kernel's
// tokens a workgroup (100, 130 tokens); several head dims per invocation (512); a head smaller
// than the pipelines' MAX_HEAD_DIM (d256of512: a Gemma 4 sliding layer beside 512-dim global
// ones); heads that are not whole 64-element steps of ggml_vec_dot_f16 (48: none, 72 and 80: a
// tail summed in double) nor whole Q8_0 blocks (48, 72, 80: f32 output only); split-KV chunks
// lengthened so that 40 tokens' chunks fit the partials (208 keys), chunks no key of which the
// token sees (sliding512_from2000: the combine skips them), and a combine whose four groups get
// one chunk or none (3 chunks).
// clang-format off
constexpr AttentionCase kCases[] = {
    // Tiled (attention.comp).
    {"tiled_d64_mha_64tok_global_37cached",      64, 4, 4,  64,  37,    0,  0, kTiled, 64},
    {"tiled_d128_gqa4_100tok_sliding48",        128, 8, 2, 100,  37,    0, 48, kTiled, 128},
    {"tiled_d256_gqa2_100tok_global",           256, 4, 2, 100,  37,    0,  0, kTiled, 256},
    {"tiled_d80_gqa2_64tok_sliding40_from500",   80, 2, 1,  64,  37,  500, 40, kTiled, 80},
    {"tiled_d48_gqa3_100tok_global_200cached",   48, 3, 1, 100, 200,    0,  0, kTiled, 48},
    {"tiled_d512_gqa2_64tok_global",            512, 2, 1,  64,  37,    0,  0, kTiled, 512},
    {"tiled_d256of512_gqa2_100tok_sliding64",   256, 4, 2, 100,  37, 1000, 64, kTiled, 512},
    {"tiled_d128_mha_130tok_fresh",             128, 4, 4, 130,   0,    0,  0, kTiled, 128},
    // One row per (token, head) (attention_rows.comp, scheme 0): views of up to 256 padded cells,
    // and a 64-token batch whose head size the tiled kernel does not take.
    {"rows_d128_gqa4_1tok_100cells",            128, 8, 2,   1,  99,    0,  0, kOneRow, 128},
    {"rows_d80_gqa2_7tok_150cells",              80, 2, 1,   7, 143,    0,  0, kOneRow, 80},
    {"rows_d256_gqa2_7tok_sliding32_from100",   256, 4, 2,   7, 140,  100, 32, kOneRow, 256},
    {"rows_d72_gqa2_64tok_200cells",             72, 4, 2,  64, 136,    0,  0, kOneRow, 72},
    // Split-KV (attention_rows.comp scheme 1, then attention_combine.comp): 512+ padded cells.
    {"split_d256_gqa2_1tok_300cells",           256, 4, 2,   1, 299,    0,  0, kSplitKv, 256},
    {"split_d256_gqa2_7tok_300cells",           256, 4, 2,   7, 293,    0,  0, kSplitKv, 256},
    {"split_d48_gqa3_7tok_400cells",             48, 3, 1,   7, 393,    0,  0, kSplitKv, 48},
    {"split_d512_gqa2_1tok_700cells",           512, 2, 1,   1, 699,    0,  0, kSplitKv, 512},
    {"split_d128_mha_7tok_sliding128_from300",  128, 4, 4,   7, 393,  300, 128, kSplitKv, 128},
    {"split_d256_gqa2_40tok_600cells",          256, 4, 2,  40, 560,    0,  0, kSplitKv, 256},
    {"split_d256of512_1tok_sliding512_from2000", 256, 2, 1,  1, 899, 2000, 512, kSplitKv, 512},
};
// clang-format on

// One attention problem: the step's queries, the cache's keys and values in physical slots, the
// view (listed slots, chronological: listed key i is at position first_position + i; the batch's
// keys are the last n_tokens), the slots' positions and the tokens' positions.
struct Problem {
  uint32_t n_view = 0, n_slots = 0;
  std::vector<float> q;                 // [n_tokens][n_head * head_dim]
  std::vector<uint16_t> k, v;           // f16 [n_slots][n_head_kv * head_dim]
  std::vector<uint32_t> view;           // [n_view]
  std::vector<int32_t> slot_positions;  // [n_slots]
  std::vector<int32_t> positions;       // [n_tokens]
  std::vector<int32_t> min_position;    // [n_tokens]: the lowest position each token sees
};

// A normal f16 value (standard deviation `scale`) that is not zero.
uint16_t nonzero_f16(std::normal_distribution<float>& normal, std::mt19937& rng, float scale) {
  for (;;) {
    const uint16_t h = f32_to_f16(normal(rng) * scale);
    if ((h & 0x7fff) != 0) return h;
  }
}

// Keys and values normal (standard deviation 1, as Gemma's normed keys), queries normal with
// standard deviation 2 / sqrt(head_dim) (pre-scaled, as the attention inputs leave them), so that
// scores spread with a standard deviation near 2: softmax weights far from uniform and far from
// one-hot, every key contributing to the rounding.
Problem make_problem(const AttentionCase& c, std::mt19937& rng) {
  Problem p;
  const uint32_t width = static_cast<uint32_t>(c.n_head_kv * c.head_dim);
  p.n_view = c.n_earlier + c.n_tokens;
  p.n_slots = p.n_view + p.n_view / 2 + 8;  // a third of the slots unlisted: gaps between listed ones
  std::normal_distribution<float> normal;
  p.q.resize(size_t{c.n_tokens} * c.n_head * c.head_dim);
  const float q_scale = 2.0f / std::sqrt(static_cast<float>(c.head_dim));
  for (float& x : p.q) {
    do x = normal(rng) * q_scale;
    while (x == 0.0f);
  }
  p.k.resize(size_t{p.n_slots} * width);
  p.v.resize(p.k.size());
  for (uint16_t& x : p.k) x = nonzero_f16(normal, rng, 1.0f);
  for (uint16_t& x : p.v) x = nonzero_f16(normal, rng, 1.0f);
  // The view: n_view distinct slots in shuffled order (a ring that wrapped, anchors, moved keys).
  std::vector<uint32_t> all(p.n_slots);
  std::iota(all.begin(), all.end(), 0u);
  std::shuffle(all.begin(), all.end(), rng);
  p.view.assign(all.begin(), all.begin() + p.n_view);
  // Unlisted slots hold keys at positions the batch would see: a kernel that read a slot that is
  // not listed would add it.
  p.slot_positions.resize(p.n_slots);
  for (uint32_t s : all) p.slot_positions[s] = c.first_position + static_cast<int32_t>(rng() % p.n_view);
  for (uint32_t i = 0; i < p.n_view; ++i) p.slot_positions[p.view[i]] = c.first_position + static_cast<int32_t>(i);
  for (uint32_t t = 0; t < c.n_tokens; ++t) {
    const int32_t position = c.first_position + static_cast<int32_t>(c.n_earlier + t);
    p.positions.push_back(position);
    p.min_position.push_back(c.window > 0 ? position - c.window + 1 : 0);  // as CpuBackend and the shaders
  }
  return p;
}

// `p` as the CPU backend poses it (CpuBackend::attention), the results to `out`.
cpu::AttentionProblem cpu_problem(const AttentionCase& c, const Problem& p, std::vector<float>& out) {
  out.assign(p.q.size(), std::nanf(""));
  cpu::AttentionProblem problem;
  problem.head_dim = c.head_dim;
  problem.n_head = c.n_head;
  problem.n_head_kv = c.n_head_kv;
  problem.n_tokens = c.n_tokens;
  problem.q = p.q.data();
  problem.out = out.data();
  problem.min_position = p.min_position;
  problem.max_position = p.positions;
  problem.k = p.k.data();
  problem.v = p.v.data();
  problem.kv_stride = static_cast<size_t>(c.n_head_kv * c.head_dim);
  problem.slots = p.view;
  problem.slot_positions = p.slot_positions;
  problem.first_cell = std::max(0, p.slot_positions[p.view[0]]);  // as CpuBackend
  problem.kv_split_threads = 4;
  return problem;
}

// The CPU backend's attention of `p` (the scheme it picks, with 4 threads' split-KV chunks).
std::vector<float> cpu_attention(const AttentionCase& c, const Problem& p, cpu::AttentionScheme* scheme) {
  std::vector<float> out;
  const cpu::AttentionProblem problem = cpu_problem(c, p, out);
  *scheme = cpu::attention_scheme(problem);
  ThreadPool pool(2);
  cpu::AttentionScratch scratch;
  cpu::attend(problem, pool, scratch);
  return out;
}

// The CPU backend's split-KV arithmetic on the GPU's chunks (`params`: chunk c is listed keys
// [c * chunk_cells, (c + 1) * chunk_cells)): its one-row scheme on each chunk and llama.cpp's merge
// of the chunks in order (attention_detail.h). What attention_rows.comp and attention_combine.comp
// compute, but for the order in which the combine merges (runs of chunks, then the runs: f32
// roundings only).
std::vector<float> cpu_split_on_gpu_chunks(const AttentionCase& c, const Problem& p,
                                           const AttentionStepParams& params) {
  std::vector<float> out;
  cpu::AttentionProblem problem = cpu_problem(c, p, out);
  problem.first_cell = 0;  // cells are list positions, as the GPU's chunks count them
  const int dim = c.head_dim;
  std::vector<float> accumulators(size_t{params.n_chunks} * dim);
  std::vector<cpu::attention_detail::OneRowPartial> partials(params.n_chunks);
  for (uint32_t t = 0; t < c.n_tokens; ++t) {
    for (int h = 0; h < c.n_head; ++h) {
      for (uint32_t k = 0; k < params.n_chunks; ++k) {
        partials[k].vkq = accumulators.data() + size_t{k} * dim;
        const int64_t begin = std::min<int64_t>(int64_t{k} * params.chunk_cells, p.n_view);
        const int64_t end = std::min<int64_t>(begin + params.chunk_cells, p.n_view);
        cpu::attention_detail::one_row_reference(problem, t, h, begin, end, partials[k]);
      }
      cpu::attention_detail::combine_partials(partials.data(), 1, params.n_chunks, dim,
                                              out.data() + (size_t{t} * c.n_head + h) * dim);
    }
  }
  return out;
}

// The exact attention (double precision, the keys and values as stored, the queries unrounded).
std::vector<double> exact_attention(const AttentionCase& c, const Problem& p) {
  const int dim = c.head_dim, group = c.n_head / c.n_head_kv;
  const size_t width = static_cast<size_t>(c.n_head_kv * dim);
  std::vector<double> out(p.q.size(), 0.0), scores(p.n_view);
  for (uint32_t t = 0; t < c.n_tokens; ++t) {
    for (int h = 0; h < c.n_head; ++h) {
      const float* q = p.q.data() + (size_t{t} * c.n_head + h) * dim;
      const size_t kv_offset = static_cast<size_t>(h / group) * dim;
      double max_score = -INFINITY;
      for (uint32_t i = 0; i < p.n_view; ++i) {
        const uint32_t slot = p.view[i];
        const int32_t position = p.slot_positions[slot];
        scores[i] = -INFINITY;
        if (position < 0 || position < p.min_position[t] || position > p.positions[t]) continue;
        double s = 0.0;
        for (int d = 0; d < dim; ++d) s += double(q[d]) * f16_to_f32(p.k[slot * width + kv_offset + d]);
        scores[i] = s;
        max_score = std::max(max_score, s);
      }
      double sum = 0.0;
      double* o = out.data() + (size_t{t} * c.n_head + h) * dim;
      for (uint32_t i = 0; i < p.n_view; ++i) {
        if (scores[i] == -INFINITY) continue;
        const double w = std::exp(scores[i] - max_score);
        sum += w;
        for (int d = 0; d < dim; ++d) o[d] += w * f16_to_f32(p.v[p.view[i] * width + kv_offset + d]);
      }
      for (int d = 0; d < dim; ++d) o[d] /= sum;
    }
  }
  return out;
}

template <class T>
std::unique_ptr<Buffer> upload(GpuContext& gpu, const std::vector<T>& values) {
  const uint64_t bytes = values.size() * sizeof(T);
  auto buffer = std::make_unique<Buffer>(gpu.device, std::max<uint64_t>(bytes, 4), MemoryUse::kDevice);
  gpu.transfer.upload(*buffer, 0, values.data(), bytes);
  return buffer;
}

struct GpuResult {
  std::vector<float> out;    // [n_tokens][n_head * head_dim] and kTail values past it
  std::vector<uint8_t> q8;   // quantized output: int8 per value, and 4 bytes past it
  std::vector<float> d8;     // its scales, one per 32 values, and one past them
};

// Runs the step's attention as VulkanBackend::record_attention records it: the kernel the step's
// shape picks, read from an AttentionStepParams buffer (workgroup counts dispatched indirectly),
// then for split-KV the combine. `quantized`: the output as wo's Q8_0 input (out_q / out_d).
GpuResult gpu_attention(GpuContext& gpu, const AttentionCase& c, const Problem& p, const AttentionStepParams& params,
                        bool quantized) {
  const uint64_t n_values = p.q.size();
  const auto q = upload(gpu, p.q), k = upload(gpu, p.k), v = upload(gpu, p.v), view = upload(gpu, p.view),
             slot_positions = upload(gpu, p.slot_positions), positions = upload(gpu, p.positions);
  const auto step = upload(gpu, std::vector<AttentionStepParams>{params});
  Buffer dst(gpu.device, (n_values + kTail) * 4, MemoryUse::kDevice);
  // The partials as the backend sizes them: every head's most chunks.
  const uint32_t chunk_keys = split_kv_chunk_keys(kKvSlots);
  const uint32_t max_chunks = split_kv_max_chunks(chunk_keys);
  Buffer partials(gpu.device, uint64_t{c.n_tokens} * c.n_head * max_chunks * (2 + c.max_head_dim) * 4,
                  MemoryUse::kDevice);
  Buffer out_q(gpu.device, n_values + 4, MemoryUse::kDevice), out_d(gpu.device, (n_values / 32 + 1) * 4,
                                                                   MemoryUse::kDevice);
  const AttentionPush attention{q->address(),
                                k->address(),
                                v->address(),
                                view->address(),
                                slot_positions->address(),
                                positions->address(),
                                dst.address(),
                                static_cast<uint32_t>(c.head_dim),
                                static_cast<uint32_t>(c.n_head),
                                static_cast<uint32_t>(c.n_head_kv),
                                c.window,
                                c.n_tokens,
                                0,
                                step->address(),
                                partials.address(),
                                quantized ? out_q.address() : 0,
                                quantized ? out_d.address() : 0};
  // VulkanBackend::pipeline's specialization constants.
  const bool tiled = tiled_attention(c.n_tokens, c.head_dim);
  const uint32_t tiled_spec[] = {c.max_head_dim, tiled_attention_tokens(gpu.device.info(), c.max_head_dim)};
  const AttentionRowsShapes rows_shapes = attention_rows_shapes(gpu.device.info(), c.max_head_dim);
  const auto rows_spec =
      attention_rows_constants(params.scheme == kSplitKv ? rows_shapes.split : rows_shapes.one_row, c.max_head_dim,
                               params.scheme == kSplitKv);
  const uint32_t combine_spec[] = {combine_workgroup(gpu.device.info(), max_chunks), max_chunks};
  CommandSequence seq(gpu.device);
  seq.begin();
  seq.fill(dst, 0, dst.size(), kPoison);
  seq.fill(partials, 0, partials.size(), kPoison);
  seq.fill(out_q, 0, out_q.size(), kPoison);
  seq.fill(out_d, 0, out_d.size(), kPoison);
  seq.barrier();
  const ComputePipeline& kernel =
      tiled ? gpu.pipelines.get("attention", tiled_spec) : gpu.pipelines.get("attention_rows", rows_spec);
  seq.dispatch_indirect(kernel, attention, *step, offsetof(AttentionStepParams, attention_groups));
  if (params.scheme == kSplitKv) {
    seq.barrier();
    const CombinePush combine{partials.address(),
                              dst.address(),
                              quantized ? out_q.address() : 0,
                              quantized ? out_d.address() : 0,
                              step->address(),
                              c.n_tokens * static_cast<uint32_t>(c.n_head),
                              static_cast<uint32_t>(c.head_dim)};
    seq.dispatch_indirect(gpu.pipelines.get("attention_combine", combine_spec), combine, *step,
                          offsetof(AttentionStepParams, combine_groups));
  }
  seq.end();
  seq.run();
  GpuResult r{std::vector<float>(n_values + kTail), std::vector<uint8_t>(out_q.size()),
              std::vector<float>(out_d.size() / 4)};
  gpu.transfer.download(dst, 0, r.out.data(), dst.size());
  gpu.transfer.download(out_q, 0, r.q8.data(), out_q.size());
  gpu.transfer.download(out_d, 0, r.d8.data(), out_d.size());
  return r;
}

double relative_l2_of(std::span<const float> got, std::span<const float> want) {
  double error = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    error += (double(got[i]) - want[i]) * (double(got[i]) - want[i]);
    norm += double(want[i]) * want[i];
  }
  return std::sqrt(error / norm);
}

double relative_l2_of(std::span<const float> got, std::span<const double> exact) {
  double error = 0.0, norm = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    error += (got[i] - exact[i]) * (got[i] - exact[i]);
    norm += exact[i] * exact[i];
  }
  return std::sqrt(error / norm);
}

// The keys token t sees.
uint32_t visible_keys(const Problem& p, uint32_t t) {
  uint32_t n = 0;
  for (uint32_t slot : p.view) {
    const int32_t position = p.slot_positions[slot];
    n += position >= p.min_position[t] && position <= p.positions[t] ? 1 : 0;
  }
  return n;
}

class VulkanAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(VulkanAttention, MatchesTheCpu) {
  CHANNEL_GPU_CONTEXT(gpu);
  const AttentionCase& c = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(c.head_dim * 7919 + c.n_tokens * 131 + c.n_earlier * 17 + c.window));
  const Problem p = make_problem(c, rng);

  const uint32_t chunk_keys = split_kv_chunk_keys(kKvSlots);
  const uint32_t tiled_tokens = tiled_attention_tokens(gpu->device.info(), c.max_head_dim);
  const int32_t first_cell = std::max(0, p.slot_positions[p.view[0]]);  // as VulkanBackend
  const AttentionStepParams params = attention_step_params(gpu->device.info(), c.n_tokens, c.head_dim, c.n_head,
                                                           p.n_view, first_cell, chunk_keys, tiled_tokens);
  ASSERT_EQ(params.scheme, c.scheme) << "the case does not run the scheme it is meant to cover";

  cpu::AttentionScheme cpu_scheme;
  const std::vector<float> want = cpu_attention(c, p, &cpu_scheme);
  const GpuResult got = gpu_attention(*gpu, c, p, params, false);
  const uint64_t n_values = p.q.size();

  // Every value written (a NaN is poison, or worse), nothing past the end.
  int failures = 0;
  for (uint64_t i = 0; i < n_values && failures < 10; ++i) {
    if (!std::isfinite(got.out[i])) {
      ADD_FAILURE() << "value " << i << " (token " << i / (c.n_head * c.head_dim) << ", head "
                    << i / c.head_dim % c.n_head << ", dim " << i % c.head_dim << ") not written: bits 0x" << std::hex
                    << bits(got.out[i]) << std::dec;
      ++failures;
    }
  }
  for (uint64_t i = n_values; i < n_values + kTail; ++i) {
    EXPECT_EQ(bits(got.out[i]), kPoison) << "written past the end at " << i;
  }

  // Per (token, head) against the CPU.
  // The worst head's rel L2 and its bound, and the worst ratio of the two (split-KV bounds differ
  // from token to token).
  double worst = 0.0, worst_bound = 0.0, worst_ratio = 0.0;
  uint64_t identical = 0;
  for (uint32_t t = 0; t < c.n_tokens; ++t) {
    const double bound = c.scheme == kTiled    ? kTiledBound
                         : c.scheme == kOneRow ? kOneRowBound
                                               : split_bound(visible_keys(p, t));
    for (int h = 0; h < c.n_head; ++h) {
      const size_t first = (size_t{t} * c.n_head + h) * c.head_dim;
      const std::span<const float> g(got.out.data() + first, c.head_dim), w(want.data() + first, c.head_dim);
      const double rel = relative_l2_of(g, w);
      if (!(rel / bound <= worst_ratio)) {  // NaN included
        worst_ratio = rel / bound;
        worst = rel;
        worst_bound = bound;
      }
      if (!(rel <= bound) && failures < 10) {
        ADD_FAILURE() << "token " << t << " head " << h << ": rel L2 " << rel << " vs the CPU (bound " << bound << ")";
        ++failures;
      }
    }
  }
  for (uint64_t i = 0; i < n_values; ++i) identical += bits(got.out[i]) == bits(want[i]) ? 1 : 0;

  // Split-KV: also against the CPU's arithmetic on the GPU's own chunks, as tight as one-row.
  double worst_chunked = 0.0;
  if (params.scheme == kSplitKv) {
    const std::vector<float> chunked = cpu_split_on_gpu_chunks(c, p, params);
    for (uint32_t t = 0; t < c.n_tokens; ++t) {
      for (int h = 0; h < c.n_head; ++h) {
        const size_t first = (size_t{t} * c.n_head + h) * c.head_dim;
        const double rel = relative_l2_of(std::span<const float>(got.out.data() + first, c.head_dim),
                                          std::span<const float>(chunked.data() + first, c.head_dim));
        worst_chunked = std::max(worst_chunked, rel);
        if (!(rel <= kOneRowBound) && failures < 10) {
          ADD_FAILURE() << "token " << t << " head " << h << ": rel L2 " << rel
                        << " vs the CPU's arithmetic on the GPU's chunks (bound " << kOneRowBound << ")";
          ++failures;
        }
      }
    }
  }

  // Against the exact attention: the GPU's scheme may not be much less accurate than the CPU's.
  const std::vector<double> exact = exact_attention(c, p);
  const double gpu_exact = relative_l2_of(std::span<const float>(got.out.data(), n_values), exact);
  const double cpu_exact = relative_l2_of(std::span<const float>(want), exact);
  EXPECT_LE(gpu_exact, 2 * cpu_exact) << "the GPU's result is farther from the exact attention than the CPU's";

  static constexpr const char* kCpuSchemeNames[] = {"auto", "one-row", "split-KV", "tiled"};
  const std::string scheme = params.scheme == kTiled    ? fmt::format("tiled, {} tokens a workgroup", tiled_tokens)
                             : params.scheme == kOneRow ? std::string("one-row")
                                                        : fmt::format("split-KV, {} chunks of {} keys", params.n_chunks,
                                                                      params.chunk_cells);
  const std::string on_chunks =
      params.scheme == kSplitKv ? fmt::format("; vs the CPU's arithmetic on these chunks {:.3g}", worst_chunked) : "";
  std::printf("[ %s ] %s (CPU %s): rel L2 vs CPU: worst head %.3g (bound %.3g), bit-identical %.1f%%%s; "
              "vs exact: GPU %.3g, CPU %.3g\n",
              c.name, scheme.c_str(), kCpuSchemeNames[static_cast<int>(cpu_scheme)], worst, worst_bound,
              100.0 * static_cast<double>(identical) / static_cast<double>(n_values), on_chunks.c_str(), gpu_exact,
              cpu_exact);

  // The quantized output (wo's Q8_0 input), where a head is whole blocks: the CPU's quantization of
  // the kernels' own f32 output, bit for bit (the same values, so the same blocks).
  if (c.head_dim % kQuantBlock != 0) return;
  const GpuResult quantized = gpu_attention(*gpu, c, p, params, true);
  const uint64_t n_blocks = n_values / kQuantBlock;
  std::vector<BlockQ8_0> blocks(n_blocks);
  cpu::quantize_row_q8_0_reference(got.out.data(), static_cast<int64_t>(n_values), blocks.data());
  failures = 0;
  for (uint64_t b = 0; b < n_blocks && failures < 10; ++b) {
    if (bits(quantized.d8[b]) != bits(f16_to_f32(blocks[b].d))) {
      ADD_FAILURE() << "Q8_0 block " << b << ": scale " << quantized.d8[b] << " vs " << f16_to_f32(blocks[b].d);
      ++failures;
    }
    for (int i = 0; i < kQuantBlock; ++i) {
      const auto value = static_cast<int8_t>(quantized.q8[b * kQuantBlock + i]);
      if (value != blocks[b].qs[i]) {
        ADD_FAILURE() << "Q8_0 block " << b << " value " << i << ": " << int{value} << " vs " << int{blocks[b].qs[i]};
        ++failures;
      }
    }
  }
  uint32_t tail;
  std::memcpy(&tail, quantized.q8.data() + n_values, 4);
  EXPECT_EQ(tail, kPoison) << "quants written past the end";
  EXPECT_EQ(bits(quantized.d8[n_blocks]), kPoison) << "a scale written past the end";
  for (uint64_t i = 0; i < n_values + kTail; ++i) {
    if (bits(quantized.out[i]) != kPoison) {
      ADD_FAILURE() << "the quantized mode wrote f32 output value " << i;
      break;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, VulkanAttention, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<AttentionCase>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace channel::vulkan
