#include "engine/episode_stage.h"

#include <cmath>

#include "core/error.h"

namespace channel {

void EpisodeStage::stage(const StagedToken& token, std::span<const float> hidden) {
  if (staged_.empty()) {
    width_ = hidden.size();
    staged_.reserve(kCapacity);
    hidden_.reserve(kCapacity * width_);
  } else if (hidden.size() != width_) {
    fail("internal: a staged hidden state of {} values after ones of {}", hidden.size(), width_);
  }
  staged_.push_back(token);
  hidden_.insert(hidden_.end(), hidden.begin(), hidden.end());
}

std::optional<Episode> EpisodeStage::commit(const kv::KvRing& ring, const Backend& backend, bool interrupted) {
  Episode episode;
  episode.interrupted = interrupted;
  std::vector<double> sum(width_, 0.0);
  std::vector<uint32_t> slots;
  for (size_t k = 0; k < staged_.size(); ++k) {
    const StagedToken& t = staged_[k];
    if (ring.slot_clock(t.slot) != t.clock) continue;  // the ring has overwritten it
    if (episode.tokens.empty()) {
      episode.created_ms = t.time_ms;
      episode.start_clock = t.clock;
    }
    episode.last_accessed_ms = t.time_ms;
    episode.continuation_token = t.token;
    const float* hidden = hidden_.data() + k * width_;
    for (size_t i = 0; i < width_; ++i) sum[i] += hidden[i];
    episode.tokens.push_back(t.token);
    episode.clocks.push_back(t.clock);
    slots.push_back(t.slot);
  }
  staged_.clear();  // capacity kept for the next stage
  hidden_.clear();
  if (episode.tokens.empty()) return std::nullopt;

  episode.centroid.assign(width_, 0.0f);
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
