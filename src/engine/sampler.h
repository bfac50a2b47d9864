// Picks the next token from logits: greedy at temperature <= 0, otherwise softmax sampling at
// the temperature over the top-k tokens, trimmed to the top-p probability mass. Seedable: the
// same seed and logits give the same tokens.
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
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options);
  int32_t sample(std::span<const float> logits);

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, int32_t>> candidates_;
};

// Index of the largest logit (the lowest index among equals), as llama.cpp's greedy sampler.
int32_t argmax(std::span<const float> logits);

}  // namespace channel
