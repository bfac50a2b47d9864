// A decode step of the CPU backend allocates nothing once the first steps have sized its
// buffers (issue 12: "nothing allocated in the decode loop"), for dense and MoE layers and for
// every weight type's path. Counted by replacing the global operator new of this test binary
// (a counter beside the usual allocation; the other tests of the binary are unaffected) and
// reading the counter around the backend's forward calls only, so that what the stream
// bookkeeping around them allocates is not counted.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "backend/cpu/cpu_backend.h"
#include "engine/stream_context.h"
#include "forwarding_backend.h"
#include "test_models.h"

namespace {
std::atomic<int64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace channel {
namespace {

using testing::TempDir;

// Counts the allocations made inside the wrapped backend's forward calls.
class AllocationCountingBackend : public testing::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted, std::span<const int32_t> candidates,
               Logits& out) override {
    const int64_t before = g_allocations.load();
    const bool done = ForwardingBackend::forward(batch, view, wanted, candidates, out);
    allocations += g_allocations.load() - before;
    return done;
  }
  int64_t allocations = 0;
};

// Decodes `warm_up` tokens, then counts what `measured` more decode steps allocate.
int64_t decode_allocations(const SynthOptions& options, int threads) {
  TempDir dir;
  const auto model = Model::load(testing::synthesize(dir, options, "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  cpu::CpuBackend cpu(model, threads);
  AllocationCountingBackend backend(cpu);
  StreamContext context(backend, model->config());
  Logits logits;
  std::vector<int32_t> prompt(12);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 5) % n_vocab);
  context.append(prompt, LogitsWanted::Last, logits);
  const auto decode = [&](int steps) {
    for (int i = 0; i < steps; ++i) {
      const int32_t token = static_cast<int32_t>((i * 104729 + 17) % n_vocab);
      context.append(std::span(&token, 1), LogitsWanted::Last, logits);
    }
  };
  decode(4);
  backend.allocations = 0;
  decode(16);
  return backend.allocations;
}

TEST(DecodeAllocations, DenseLayersOfEveryWeightType) {
  for (ModelArch arch : {ModelArch::Gemma3, ModelArch::Gemma4}) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q8_0, GgmlType::BF16, GgmlType::F16, GgmlType::F32}) {
      SynthOptions o = default_synth_options(arch);
      o.weight_type = o.embedding_type = type;
      EXPECT_EQ(decode_allocations(o, 2), 0) << ggml_type_traits(type).name << (arch == ModelArch::Gemma3 ? " gemma3" : " gemma4");
    }
  }
}

TEST(DecodeAllocations, MixtureOfExpertsLayers) {
  for (GgmlType type : {GgmlType::Q4_0, GgmlType::F32}) {
    EXPECT_EQ(decode_allocations(testing::moe_options(type), 2), 0) << ggml_type_traits(type).name;
  }
}

TEST(DecodeAllocations, PerLayerEmbeddingsAndSharedKv) {
  SynthOptions o = default_synth_options(ModelArch::Gemma4);
  o.weight_type = o.embedding_type = GgmlType::Q4_0;
  o.n_embd_per_layer = 32;
  o.n_kv_shared = 3;
  EXPECT_EQ(decode_allocations(o, 3), 0);
}

}  // namespace
}  // namespace channel
