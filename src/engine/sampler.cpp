#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace channel {

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

int32_t Sampler::sample(std::span<const float> logits) {
  if (options_.temperature <= 0.0f) return argmax(logits);
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) candidates_.emplace_back(logits[i], static_cast<int32_t>(i));
  const size_t k = options_.top_k > 0 ? std::min<size_t>(options_.top_k, candidates_.size()) : candidates_.size();
  std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(k), candidates_.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
  candidates_.resize(k);
  // Softmax at the temperature, then keep the smallest prefix holding top_p of the mass.
  const float max_logit = candidates_.front().first;
  double total = 0.0;
  for (auto& [value, id] : candidates_) {
    value = std::exp((value - max_logit) / options_.temperature);
    total += value;
  }
  double kept = 0.0;
  size_t n_kept = 0;
  while (n_kept < candidates_.size()) {
    kept += candidates_[n_kept].first;
    ++n_kept;
    if (kept >= options_.top_p * total) break;
  }
  std::uniform_real_distribution<double> uniform(0.0, kept);
  double r = uniform(rng_);
  for (size_t i = 0; i < n_kept; ++i) {
    r -= candidates_[i].first;
    if (r <= 0.0) return candidates_[i].second;
  }
  return candidates_[n_kept - 1].second;
}

}  // namespace channel
