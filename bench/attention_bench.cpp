// Attention of one layer over an f16 KV cache, as the CPU backend calls it: Gemma-4-like heads (8
// query heads over 2 KV heads of size 256), and Gemma 3 1B's (4 query heads over 1 KV head of 256).
//
//   channel_attention_bench                            # all, on 1 and 2 threads
//   channel_attention_bench --benchmark_filter=Decode
//
// Decode: 1 query over 4096 cached keys (the split-KV scheme: 4096 cells is past llama.cpp's 512).
// Decode1KvGlobal, Decode1KvWindow: Gemma 3 1B's layers with the ring full: a global layer's
// 3968 keys (positions 576-4543) and a sliding layer's window of 512 (positions 4032-4543, all in
// the second of two split-KV chunks).
// Prefill: a fresh batch of 64 or 512 tokens attending causally to itself (the tiled scheme).
// items_per_second counts query tokens; bytes_per_second (decode) the K and V bytes read.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/attention.h"
#include "core/half.h"
#include "core/thread_pool.h"

namespace channel::cpu {
namespace {

constexpr int kHeadDim = 256;

struct Heads {
  int query = 8, kv = 2;
};

// A KV cache of n_keys cells (slot = cell, positions from first_position) and n_tokens queries at
// its end.
struct Layer {
  std::vector<uint16_t> k, v;
  std::vector<float> q, out;
  std::vector<uint32_t> slots;
  std::vector<int32_t> positions, min_position, max_position;
  AttentionProblem problem;

  Layer(int64_t n_tokens, int64_t n_keys, Heads heads, int32_t first_position) {
    std::mt19937 rng(1);
    std::normal_distribution<float> normal;
    const size_t stride = static_cast<size_t>(heads.kv) * kHeadDim;
    k.resize(n_keys * stride);
    v.resize(n_keys * stride);
    for (auto& x : k) x = f32_to_f16(normal(rng));
    for (auto& x : v) x = f32_to_f16(normal(rng));
    q.resize(n_tokens * heads.query * kHeadDim);
    for (auto& x : q) x = normal(rng) * (3.0f / std::sqrt(static_cast<float>(kHeadDim)));
    out.resize(q.size());
    for (int64_t i = 0; i < n_keys; ++i) {
      slots.push_back(static_cast<uint32_t>(i));
      positions.push_back(first_position + static_cast<int32_t>(i));
    }
    for (int64_t t = 0; t < n_tokens; ++t) {
      min_position.push_back(0);
      max_position.push_back(first_position + static_cast<int32_t>(n_keys - n_tokens + t));
    }
    problem.head_dim = kHeadDim;
    problem.n_head = heads.query;
    problem.n_head_kv = heads.kv;
    problem.n_tokens = n_tokens;
    problem.q = q.data();
    problem.out = out.data();
    problem.min_position = min_position;
    problem.max_position = max_position;
    problem.k = k.data();
    problem.v = v.data();
    problem.kv_stride = stride;
    problem.slots = slots;
    problem.slot_positions = positions;
    problem.first_cell = first_position;  // as on a fresh stream
  }
};

void run(benchmark::State& state, int64_t n_tokens, int64_t n_keys, Heads heads = {}, int32_t first_position = 0) {
  ThreadPool pool(static_cast<int>(state.range(0)));
  Layer layer(n_tokens, n_keys, heads, first_position);
  layer.problem.kv_split_threads = pool.size();  // as the CPU backend
  AttentionScratch scratch;
  for (auto _ : state) {
    attend(layer.problem, pool, scratch);
    benchmark::DoNotOptimize(layer.out.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * n_tokens);
  if (n_tokens == 1) state.SetBytesProcessed(state.iterations() * n_keys * 2 * heads.kv * kHeadDim * 2);
}

void BM_Decode4096(benchmark::State& state) { run(state, 1, 4096); }
void BM_Decode1KvGlobal(benchmark::State& state) { run(state, 1, 3968, {4, 1}, 576); }
void BM_Decode1KvWindow(benchmark::State& state) { run(state, 1, 512, {4, 1}, 4032); }
void BM_Prefill64(benchmark::State& state) { run(state, 64, 64); }
void BM_Prefill512(benchmark::State& state) { run(state, 512, 512); }

BENCHMARK(BM_Decode4096)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Decode1KvGlobal)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Decode1KvWindow)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Prefill64)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Prefill512)->ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace channel::cpu

BENCHMARK_MAIN();
