// A backend that runs another one and, when told to, fails its next forward pass by calling a
// function that throws (std::bad_alloc, std::system_error, ...): the seam through which tests
// inject failures into a session as a real backend could raise them.
#pragma once

#include <functional>
#include <mutex>
#include <utility>

#include "forwarding_backend.h"

namespace channel::testing {

class FaultyBackend final : public ForwardingBackend {
 public:
  explicit FaultyBackend(Backend& inner) : ForwardingBackend(inner) {}

  // The forward() after the next `passes_first` ones calls `thrower` instead of computing (once).
  void fail_next_forward(std::function<void()> thrower, int passes_first = 0) {
    std::lock_guard lock(mutex_);
    thrower_ = std::move(thrower);
    passes_first_ = passes_first;
  }

  bool forward(const Batch& batch, const AttentionView& view, LogitsWanted wanted, std::span<const int32_t> candidates,
               Logits& out) override {
    std::function<void()> thrower;
    {
      std::lock_guard lock(mutex_);
      if (thrower_ && passes_first_-- == 0) thrower = std::exchange(thrower_, nullptr);
    }
    if (thrower) thrower();
    return ForwardingBackend::forward(batch, view, wanted, candidates, out);
  }
  std::string description() const override { return "faulty " + ForwardingBackend::description(); }

 private:
  std::mutex mutex_;
  std::function<void()> thrower_;
  int passes_first_ = 0;
};

}  // namespace channel::testing
