// Episodic memory's unit (issue 10; the original's, reference original-channel.md §2.8.2): a run
// of decoded tokens kept with their KV on every layer, and the centroid recall scores them by.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace channel {

// One decoded token as staged: where it went in the stream and its final hidden state
// (Batch::last_hidden), at `time_ms` on the memory clock.
struct StagedToken {
  int32_t token = -1;
  uint32_t slot = 0;
  int64_t clock = 0;
  int64_t time_ms = 0;
};

struct Episode {
  uint64_t id = 0;         // 1, 2, ... in commit order
  uint64_t parent_id = 0;  // 0: none (the original never sets one either)
  int64_t created_ms = 0;        // first token's time
  int64_t last_accessed_ms = 0;  // last token's time; recall moves it on
  int64_t start_clock = 0;       // first token's clock
  uint32_t access_count = 0;
  uint32_t child_count = 0;
  float salience = 1.0f;        // mean of the tokens' (all 1.0, as the original stages them)
  bool interrupted = false;     // its burst was aborted
  int32_t continuation_token = -1;  // the last token
  std::vector<float> centroid;      // unit length: the normalised sum of the hidden states
  // Every token of the episode in stream order, with its clock; `kv` has them in the same order
  // (the original kept only the middle token's KV in RAM).
  std::vector<int32_t> tokens;
  std::vector<int64_t> clocks;
  KvBlob kv;

  uint32_t token_count() const { return static_cast<uint32_t>(tokens.size()); }
};

}  // namespace channel
