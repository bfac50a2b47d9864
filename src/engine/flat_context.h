// A token stream on one backend without the KV ring: token i sits at position i in slot i, so
// it holds at most kKvSlots tokens. It serves the CLI's run and eval until the three-tier ring
// (kv/) replaces it; the attention views it builds are the ones the ring will build before it
// first wraps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace channel {

class FlatContext {
 public:
  FlatContext(Backend& backend, const ModelConfig& config);

  // Runs `tokens` as one batch after everything appended so far. Throws channel::Error if the
  // context would exceed kKvSlots tokens (nothing is appended then).
  void append(std::span<const int32_t> tokens, LogitsWanted wanted, Logits& out);

  int32_t size() const { return static_cast<int32_t>(n_past_); }
  void clear() { n_past_ = 0; }

 private:
  Backend& backend_;
  int sliding_window_;
  uint32_t n_past_ = 0;
  std::vector<uint32_t> all_slots_;  // 0, 1, 2, ...: slot i holds position i
  std::vector<int32_t> positions_;
};

}  // namespace channel
