#include "engine/flat_context.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace channel {

FlatContext::FlatContext(Backend& backend, const ModelConfig& config)
    : backend_(backend), sliding_window_(config.sliding_window), all_slots_(kKvSlots), positions_(kKvSlots) {
  std::iota(all_slots_.begin(), all_slots_.end(), 0u);
  std::iota(positions_.begin(), positions_.end(), 0);
}

void FlatContext::append(std::span<const int32_t> tokens, LogitsWanted wanted, Logits& out) {
  if (tokens.empty()) fail("nothing to evaluate: the token list is empty");
  if (tokens.size() > kKvSlots - n_past_) {
    fail("context full: {} tokens so far plus {} new exceed the {} KV slots of this build", n_past_, tokens.size(), kKvSlots);
  }
  const uint32_t end = n_past_ + static_cast<uint32_t>(tokens.size());
  const std::span<const uint32_t> global_slots(all_slots_.data(), end);
  // Sliding layers need only the slots of the last window before the batch plus the batch.
  const uint32_t sliding_begin = sliding_window_ > 0 && n_past_ > static_cast<uint32_t>(sliding_window_)
                                     ? n_past_ - static_cast<uint32_t>(sliding_window_)
                                     : 0;
  const std::span<const uint32_t> sliding_slots(all_slots_.data() + sliding_begin, end - sliding_begin);
  const Batch batch{tokens, std::span<const int32_t>(positions_.data() + n_past_, tokens.size()),
                    std::span<const uint32_t>(all_slots_.data() + n_past_, tokens.size())};
  backend_.forward(batch, AttentionView{global_slots, sliding_slots}, wanted, {}, out);
  n_past_ = end;
}

}  // namespace channel
