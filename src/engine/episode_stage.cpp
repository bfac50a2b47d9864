#include "engine/episode_stage.h"

#include <cmath>

namespace channel {

std::optional<Episode> EpisodeStage::commit(const kv::KvRing& ring, const Backend& backend, bool interrupted) {
  std::vector<StagedToken> staged = std::move(staged_);
  staged_.clear();
  std::erase_if(staged, [&](const StagedToken& t) { return ring.slot_clock(t.slot) != t.clock; });
  if (staged.empty()) return std::nullopt;

  Episode episode;
  episode.created_ms = staged.front().time_ms;
  episode.last_accessed_ms = staged.back().time_ms;
  episode.start_clock = staged.front().clock;
  episode.interrupted = interrupted;
  episode.continuation_token = staged.back().token;
  episode.centroid.assign(staged.front().hidden.size(), 0.0f);
  std::vector<double> sum(episode.centroid.size(), 0.0);
  std::vector<uint32_t> slots;
  for (const StagedToken& t : staged) {
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += t.hidden[i];
    episode.tokens.push_back(t.token);
    episode.clocks.push_back(t.clock);
    slots.push_back(t.slot);
  }
  double norm = 0.0;
  for (double v : sum) norm += v * v;
  norm = std::sqrt(norm);
  // A zero sum (no direction) stays zero: it scores 0 against every query.
  if (norm > 0.0) {
    for (size_t i = 0; i < sum.size(); ++i) episode.centroid[i] = static_cast<float>(sum[i] / norm);
  }
  backend.read_kv(slots, episode.kv);
  return episode;
}

}  // namespace channel
