// CPU matmul kernels on Gemma-sized matrices (hidden 2560, FFN 10240).
//
//   channel_matmul_bench --benchmark_filter=Q4_0
//
// Decode (1 token) cycles through copies of the matrix totalling more than the last-level cache,
// so bytes_per_second is the rate weights stream from DRAM; compare it with
// channel_read_bandwidth at the same thread count. Batches (64 tokens) use one copy;
// items_per_second counts tokens. layout:1 is what the CPU backend runs (kernel_weights.h: Q4_0 and
// Q8_0 repacked into row groups, in huge-page memory), layout:0 the GGUF layout (matrices that do
// not split into row groups, and the reference the row groups were measured against).
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/cpu/row_groups.h"
#include "core/huge_page_buffer.h"
#include "core/half.h"

namespace channel::cpu {
namespace {

constexpr size_t kColdBytes = size_t{512} << 20;  // beyond the last-level caches of the machines measured

struct Matrices {
  std::vector<HugePageBuffer> copies;
  std::vector<WeightMatrix> views;  // one per copy
};

// Valid random weights: any quant values with fp16 scales around 2^-6, or values near 1.
std::vector<uint8_t> random_matrix(GgmlType type, size_t bytes, std::mt19937& rng) {
  const size_t block_bytes = ggml_type_traits(type).block_bytes;
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i + sizeof(uint32_t) <= bytes; i += sizeof(uint32_t)) {
    const uint32_t bits = static_cast<uint32_t>(rng());
    std::memcpy(&data[i], &bits, sizeof(bits));
  }
  if (type == GgmlType::Q4_0 || type == GgmlType::Q8_0) {
    for (size_t offset = 0; offset < bytes; offset += block_bytes) {
      const uint16_t scale = static_cast<uint16_t>(0x2400 | (rng() & 0x3ff));
      std::memcpy(&data[offset], &scale, sizeof(scale));
    }
  } else {
    std::normal_distribution<float> normal;
    for (size_t offset = 0; offset < bytes; offset += block_bytes) {
      const float v = normal(rng);
      if (type == GgmlType::F32) {
        std::memcpy(&data[offset], &v, sizeof(v));
      } else {
        const uint16_t h = type == GgmlType::F16 ? f32_to_f16(v) : f32_to_bf16(v);
        std::memcpy(&data[offset], &h, sizeof(h));
      }
    }
  }
  return data;
}

// n_copies copies in huge-page memory, as KernelWeights holds them; row_groups: repacked as there.
Matrices make_matrices(GgmlType type, int64_t rows, int64_t cols, size_t n_copies, bool row_groups, ThreadPool& pool) {
  std::mt19937 rng(1);
  Matrices m;
  const WeightMatrix gguf{type, nullptr, cols, rows, ggml_row_bytes(type, cols)};
  const size_t bytes = rows * gguf.row_bytes;
  for (size_t c = 0; c < n_copies; ++c) {
    const std::vector<uint8_t> data = random_matrix(type, bytes, rng);
    HugePageBuffer buffer(bytes);
    WeightMatrix source = gguf;
    source.data = data.data();
    if (row_groups) {
      m.views.push_back(repack_to_row_groups(source, buffer.data(), pool));
    } else {
      std::memcpy(buffer.data(), data.data(), bytes);
      source.data = buffer.data();
      m.views.push_back(source);
    }
    m.copies.push_back(std::move(buffer));
  }
  return m;
}

// Args: weight type id, rows, cols, tokens, threads, layout (0 GGUF, 1 row groups).
void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<GgmlType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), n_tokens = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  const bool row_groups = state.range(5) != 0;
  const size_t bytes = rows * ggml_row_bytes(type, cols);
  const size_t n_copies = n_tokens == 1 ? (kColdBytes + bytes - 1) / bytes : 1;
  ThreadPool pool(threads);
  const Matrices m = make_matrices(type, rows, cols, n_copies, row_groups, pool);
  std::vector<float> x(n_tokens * cols);
  std::normal_distribution<float> normal;
  std::mt19937 rng(2);
  for (float& v : x) v = normal(rng);
  std::vector<float> out(n_tokens * rows);
  size_t copy = 0;
  for (auto _ : state) {
    matmul(m.views[copy], x.data(), n_tokens, out.data(), pool);
    copy = (copy + 1) % n_copies;
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.SetItemsProcessed(state.iterations() * n_tokens);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * rows * cols * n_tokens * state.iterations() / 1e9,
                                                benchmark::Counter::kIsRate);
  state.SetLabel(std::string(ggml_type_traits(type).name) + (row_groups ? " row groups" : " gguf"));
}

void Shapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"type", "rows", "cols", "tokens", "threads", "layout"});
  for (const GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::F16, GgmlType::BF16}) {
    const bool quantized = type == GgmlType::Q4_0 || type == GgmlType::Q8_0;
    for (const int64_t layout : {1, 0}) {
      if (layout == 1 && !quantized) continue;  // the float types keep the GGUF layout
      for (const int64_t tokens : {1, 64}) {
        if (type != GgmlType::Q4_0 && tokens != 1) continue;  // batches: the common weight type only
        for (const int threads : {1, 2}) {
          b->Args({static_cast<int64_t>(type), 10240, 2560, tokens, threads, layout});  // FFN gate / up
          if (type == GgmlType::Q4_0) b->Args({static_cast<int64_t>(type), 2560, 10240, tokens, threads, layout});  // FFN down
        }
      }
    }
  }
}
BENCHMARK(BM_Matmul)->Apply(Shapes)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace channel::cpu

BENCHMARK_MAIN();
