// Picks the next token from logits, in the order the original Channel engine applies
// (its src/sampler.zig): masked ids dropped -> repeat, presence and frequency penalties over
// the recent tokens -> top-k -> greedy at temperature <= 0, else softmax at the temperature ->
// min-p -> top-p -> a draw from a seedable generator (the same seed gives the same tokens).
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace channel {

struct SamplerOptions {
  float temperature = 0.0f;
  int top_k = 64;
  float top_p = 0.95f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;    // > 1 lowers the logits of recent tokens
  int repeat_last_n = 64;         // how many recent tokens the penalties look at
  float frequency_penalty = 0.0f; // subtracted once per occurrence
  float presence_penalty = 0.0f;  // subtracted once if present
  uint64_t seed = 0;
  bool operator==(const SamplerOptions&) const = default;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);

  // `masked`: ids that must not be chosen; `recent`: tokens generated so far (oldest first),
  // of which the last repeat_last_n are penalized.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> masked = {},
                 std::span<const int32_t> recent = {});

  void set_options(const SamplerOptions& options) { options_ = options; }  // keeps the generator state
  // The generator as it stands, and setting it back (snapshots): the same state draws the same
  // tokens next.
  const std::mt19937_64& generator() const { return rng_; }
  void set_generator(const std::mt19937_64& generator) { rng_ = generator; }

 private:
  // candidates_ = the ids left after the masks, with their penalized logits, best first: the
  // best top_k (all of them when top_k <= 0), in one pass over the logits.
  void collect_candidates(std::span<const float> logits, std::span<const int32_t> masked,
                          std::span<const int32_t> recent);

  SamplerOptions options_;
  std::mt19937_64 rng_;
  // Working storage kept from one token to the next, so that sampling allocates nothing once
  // these have grown.
  std::vector<std::pair<float, int32_t>> candidates_;
  std::vector<std::pair<int32_t, int>> counts_;  // occurrences in the penalty window
  std::vector<uint8_t> excluded_;                // per id: masked or penalized (reset after use)
};

// Index of the largest logit (the lowest index among equals), as llama.cpp's greedy sampler.
int32_t argmax(std::span<const float> logits);

}  // namespace channel
