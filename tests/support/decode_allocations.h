// Counts what decode steps allocate (issues 8 and 12: nothing allocated in the decode loop):
// StreamContext::append of one token, the ring's bookkeeping and the backend's forward pass.
// Replaces the global operator new of the test binary that includes it (a counter beside the
// usual allocation; the binary's other tests are unaffected), so include it from one source file
// per binary. A driver's own C allocations (malloc) are not seen. Not under AddressSanitizer,
// whose allocator keeps operator new to itself (lavapipe's LLVM then frees through ours what
// ASan's allocated, a mismatch): there kCountsAllocations is false and the tests skip.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "engine/stream_context.h"
#include "test_models.h"

namespace channel::testing {
#ifdef __SANITIZE_ADDRESS__
inline constexpr bool kCountsAllocations = false;
#else
inline constexpr bool kCountsAllocations = true;
#endif
inline std::atomic<int64_t> allocations_made{0};
}  // namespace channel::testing

#ifndef __SANITIZE_ADDRESS__
void* operator new(std::size_t size) {
  channel::testing::allocations_made.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#endif

namespace channel::testing {

using BackendMaker = std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)>;

// Decodes 4 tokens after a prompt of prompt_tokens, then counts what 16 more decode steps
// allocate: the stream's bookkeeping (placement, views, the ring's state kept for an undo, whole
// spans evicted once the ring has wrapped) and the backend's forward.
inline int64_t decode_allocations(const SynthOptions& options, const BackendMaker& make_backend,
                                  size_t prompt_tokens = 12) {
  TempDir dir;
  const auto model = Model::load(synthesize(dir, options, "m.gguf"));
  const int n_vocab = model->config().n_vocab;
  const std::unique_ptr<Backend> backend = make_backend(model);
  StreamContext context(*backend, model->config());
  Logits logits;
  std::vector<int32_t> prompt(prompt_tokens);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<int32_t>((i * 7919 + 5) % n_vocab);
  context.append(prompt, LogitsWanted::Last, logits);
  const auto decode = [&](int steps) {
    for (int i = 0; i < steps; ++i) {
      const int32_t token = static_cast<int32_t>((i * 104729 + 17) % n_vocab);
      context.append(std::span(&token, 1), LogitsWanted::Last, logits);
    }
  };
  decode(4);
  const int64_t before = allocations_made.load();
  decode(16);
  return allocations_made.load() - before;
}

}  // namespace channel::testing
