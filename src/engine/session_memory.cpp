// Episodic memory's recall (issue 10; original-channel.md §2.8.3-2.8.4): the query vector, the
// choice of whole episodes for the 128 recall slots, and their KV written there, on OP_MEM_QUERY
// and before every prefill of host input.
#include <algorithm>

#include "core/elapsed.h"
#include "core/unit_length.h"
#include "engine/episode_scoring.h"
#include "engine/session.h"
#include "model/quantize.h"

namespace channel {

std::vector<float> Session::query_vector(std::span<const int32_t> tokens) const {
  // The normalised sum of the tokens' input-embedding rows, unscaled (as the original; the
  // scale would cancel in the normalisation anyway).
  const WeightMatrix& embedding = model_->token_embedding();
  std::vector<float> sum(static_cast<size_t>(embedding.cols), 0.0f), row(sum.size());
  for (int32_t token : tokens) {
    dequantize(embedding.type, embedding.data + static_cast<size_t>(token) * embedding.row_bytes, embedding.cols,
               row.data());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += row[i];
  }
  if (!scale_to_unit_length(sum)) return {};
  return sum;
}

std::vector<size_t> whole_episodes_for_recall(const EpisodeStore& store, std::span<const size_t> ranked) {
  std::vector<size_t> chosen;
  uint32_t room = kv::kRecallSlots;
  for (size_t index : ranked) {
    const uint32_t n = store.episodes()[index].token_count();
    if (n == 0 || n > room) continue;  // whole episodes only: a smaller one further down may fit
    chosen.push_back(index);
    room -= n;
  }
  return chosen;
}

MemoryRecall Session::recall_memory(std::string_view query_text, size_t top_k) {
  return recall_episodes(encode(query_text, /*bos_at_start=*/false), top_k);
}

void Session::recall_before_prefill(std::span<const int32_t> input) {
  // As the original (§2.8.4 b): the input about to be prefilled is the query, and the recall
  // may fill all the recall slots (it primed the best min(128, episodes) entries). With memory
  // off the store stays empty, so nothing is recalled.
  recall_episodes(input, kv::kRecallSlots);
}

MemoryRecall Session::recall_episodes(std::span<const int32_t> query_tokens, size_t top_k) {
  MemoryRecall recall;
  if (episodes_.episodes().empty() || top_k == 0) return recall;
  const std::vector<float> query = query_vector(query_tokens);
  if (query.empty()) return recall;
  const int64_t now = monotonic_milliseconds();
  const std::vector<size_t> ranked = scan_->best_episodes(query, now, top_k);
  const std::vector<size_t> chosen = whole_episodes_for_recall(episodes_, ranked);

  // The best episode nearest the live ring (the original placed rank r at clock - (r + 1)); each
  // episode's tokens stay consecutive, so its own relative positions are kept.
  KvBlob recalled;
  for (auto it = chosen.rbegin(); it != chosen.rend(); ++it) append_kv(recalled, episodes_.episodes()[*it].kv);
  context_.write_recall(recalled);
  episodes_.mark_recalled(chosen, now);

  for (size_t index : ranked) {
    recall.ids.push_back(episodes_.episodes()[index].id);
    recall.created_ms.push_back(episodes_.episodes()[index].created_ms);
  }
  recall.injected_tokens = static_cast<uint32_t>(recalled.slots.size());
  return recall;
}

}  // namespace channel
