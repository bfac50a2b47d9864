#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

namespace channel {

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Sampler::Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> masked, std::span<const int32_t> recent) {
  const SamplerOptions& o = options_;
  const bool neutral_penalties = o.repeat_penalty == 1.0f && o.frequency_penalty == 0.0f && o.presence_penalty == 0.0f;
  if (o.temperature <= 0.0f && masked.empty() && (neutral_penalties || recent.empty())) return argmax(logits);

  // Penalties only touch the few recent tokens: adjust copies of their logits.
  std::unordered_map<int32_t, int> counts;
  const size_t window = std::min<size_t>(recent.size(), static_cast<size_t>(std::max(0, o.repeat_last_n)));
  for (int32_t token : recent.subspan(recent.size() - window)) {
    if (token >= 0 && static_cast<size_t>(token) < logits.size()) ++counts[token];
  }
  const auto adjusted = [&](int32_t token) {
    float value = logits[token];
    if (auto it = counts.find(token); it != counts.end()) {
      value = value > 0 ? value / o.repeat_penalty : value * o.repeat_penalty;
      value -= o.presence_penalty + static_cast<float>(it->second) * o.frequency_penalty;
    }
    return value;
  };
  const auto is_masked = [&](int32_t token) { return std::find(masked.begin(), masked.end(), token) != masked.end(); };

  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    const auto token = static_cast<int32_t>(i);
    if (!is_masked(token)) candidates_.emplace_back(counts.empty() ? logits[i] : adjusted(token), token);
  }
  if (candidates_.empty()) return argmax(logits);  // everything masked: nothing better to do
  const auto better = [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  const size_t k = o.top_k > 0 ? std::min<size_t>(o.top_k, candidates_.size()) : candidates_.size();
  std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(k), candidates_.end(), better);
  candidates_.resize(k);
  if (o.temperature <= 0.0f) return candidates_.front().second;

  // Softmax at the temperature (values become probabilities, unnormalized).
  const float max_logit = candidates_.front().first;
  double total = 0.0;
  for (auto& [value, id] : candidates_) {
    value = std::exp((value - max_logit) / o.temperature);
    total += value;
  }
  // min-p: keep the leading run with p >= p_max * min_p.
  size_t n = candidates_.size();
  if (o.min_p > 0.0f) {
    const double floor = candidates_.front().first * o.min_p;
    n = 1;
    while (n < candidates_.size() && candidates_[n].first >= floor) ++n;
    total = 0.0;
    for (size_t i = 0; i < n; ++i) total += candidates_[i].first;
  }
  // top-p: the smallest prefix holding top_p of the mass.
  double kept = 0.0;
  size_t n_kept = 0;
  while (n_kept < n) {
    kept += candidates_[n_kept].first;
    ++n_kept;
    if (kept >= o.top_p * total) break;
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
