// A backend that runs another one and, when told to, fails its next forward pass by calling a
// function that throws (std::bad_alloc, std::system_error, ...): the seam through which tests
// inject failures into a session as a real backend could raise them.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

#include "backend/backend.h"

namespace channel::testing {

class FaultyBackend final : public Backend {
 public:
  explicit FaultyBackend(Backend& inner) : inner_(inner) {}

  // The next forward() calls `thrower` instead of computing (once).
  void fail_next_forward(std::function<void()> thrower) {
    std::lock_guard lock(mutex_);
    thrower_ = std::move(thrower);
  }

  bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted, std::span<const int32_t> candidates,
               Logits& out) override {
    std::function<void()> thrower;
    {
      std::lock_guard lock(mutex_);
      thrower = std::exchange(thrower_, nullptr);
    }
    if (thrower) thrower();
    return inner_.forward(batch, view, wanted, candidates, out);
  }
  void rotate_keys(std::span<const uint32_t> slots, int64_t delta) override { inner_.rotate_keys(slots, delta); }
  void read_kv(std::span<const uint32_t> slots, KvBlob& out) const override { inner_.read_kv(slots, out); }
  void write_kv(const KvBlob& blob) override { inner_.write_kv(blob); }
  std::string description() const override { return "faulty " + inner_.description(); }
  bool is_gpu() const override { return inner_.is_gpu(); }

 private:
  Backend& inner_;
  std::mutex mutex_;
  std::function<void()> thrower_;
};

}  // namespace channel::testing
