// Episodic memory's staging (original-channel.md §2.8.2): the decoded tokens since the last
// commit, and the commit that turns them into an Episode. Prefill, probe and bridge tokens are
// never staged (the session stages only what it decodes).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "engine/episode.h"
#include "kv/ring.h"

namespace channel {

class EpisodeStage {
 public:
  // The original's staging buffer: a full stage commits.
  static constexpr size_t kCapacity = 64;

  // Stages a decoded token and its last hidden state (the centroid's term). The stage keeps its
  // storage across commits: staging allocates only for the first token of the session.
  void stage(const StagedToken& token, std::span<const float> hidden);
  bool full() const { return staged_.size() >= kCapacity; }
  bool empty() const { return staged_.empty(); }

  // The staged tokens whose slot still holds them (a ring shorter than the stage may have
  // overwritten the oldest) as one episode, their KV read from `backend`; the stage is emptied.
  // Nothing when no staged token is left.
  std::optional<Episode> commit(const kv::KvRing& ring, const Backend& backend, bool interrupted);

 private:
  std::vector<StagedToken> staged_;
  std::vector<float> hidden_;  // [staged_.size()][width_]
  size_t width_ = 0;
};

}  // namespace channel
