// Host cost of the KV ring's bookkeeping per decoded token (slot choice, span eviction, view
// rebuild, anchor moves), in steady state after the ring has wrapped.
#include <benchmark/benchmark.h>

#include "kv/ring.h"

namespace {

void BM_RingDecodeStep(benchmark::State& state) {
  channel::kv::KvRing ring(1024);
  ring.set_anchor_count(static_cast<uint32_t>(state.range(0)));
  // Fill past one full wrap, with sentence-sized spans.
  for (int i = 0; i < 10000; ++i) {
    if (i % 23 == 0) ring.mark_span(channel::kv::SpanType::ResponseSentence);
    ring.append(1);
  }
  int i = 0;
  for (auto _ : state) {
    if (++i % 23 == 0) ring.mark_span(channel::kv::SpanType::ResponseSentence);
    benchmark::DoNotOptimize(ring.append(1));
  }
}
BENCHMARK(BM_RingDecodeStep)->Arg(0)->Arg(512)->Arg(3904);

}  // namespace

BENCHMARK_MAIN();
