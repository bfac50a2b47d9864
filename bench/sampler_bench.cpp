// The sampler's time per token on a Gemma-sized vocabulary (262144 ids), as the session calls it
// each decode step: never-sampled ids masked, the penalty window of the recent tokens, greedy and
// at a temperature. Every speed figure against the logits' size: a step's host time beside the
// backend's.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "engine/sampler.h"

namespace {

void BM_Sample(benchmark::State& state) {
  std::mt19937 rng(1);
  std::normal_distribution<float> logit(0.0f, 3.0f);
  std::vector<float> logits(262144);
  for (float& v : logits) v = logit(rng);
  // A session's mask: padding, the multimodal markers, an end of vocabulary (12 ids).
  const std::vector<int32_t> masked = {0, 100, 50, 255999, 256000, 258880, 258881, 258882, 258883, 258884, 262000, 262143};
  const std::vector<int32_t> recent = {5, 6, 7, 8, 9, 10, 11, 12};
  channel::SamplerOptions options;
  options.temperature = static_cast<float>(state.range(0)) / 10.0f;
  options.repeat_penalty = 1.1f;
  channel::Sampler sampler(options);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, masked, recent));
}
BENCHMARK(BM_Sample)->ArgName("temperature_x10")->Arg(0)->Arg(10)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
